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
	CreatedAt        time.Time
}
