package models

import "time"

// AccountPhotoRow is a live product photo of an account (a product_images row) with its product's
// name and reference and the state of its asset: one item of the external API's GET /products.
type AccountPhotoRow struct {
	ID               string
	AssetID          string
	ProductRef       string
	ProductName      string
	AssetStatus      string
	UploadExpiresAt  *time.Time // when the bytes of an upload still awaited stop being accepted
	ThumbnailBlobKey string
	BlobKey          string // the photo's own file, for a URL of the store when it has no thumbnail
	ContentType      string
	PurgedAt         *time.Time // when retention removed the file (its URL is then the API's, which answers 410)
	CreatedAt        time.Time
}
