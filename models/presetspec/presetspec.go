// Package presetspec holds the rules of presets that the APIs share with the store: how many
// gallery images a preset has and the values of its scenery requirement. It is a leaf (no
// storage), so the external API's preset forms check what the store enforces.
package presetspec

// MaxGallery is the most gallery images a preset has.
const MaxGallery = 6

// Scenery requirements of a preset; a preset not yet reviewed has none.
const (
	SceneryRequired    = "required"
	SceneryRecommended = "recommended"
)
