// Package refblob names where seeded reference images (the marketplace's fashion models and
// sceneries, the system presets' covers and galleries) live in the blob store. It is a leaf (no
// storage), so the signed /files/ref/… route and the lists that link to it agree with the seed.
package refblob

// Prefix starts the blob key of every seeded reference image: {Prefix}{version}/{group}/{file}.
const Prefix = "reference/"
