package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
)

// FileAsset is a stored file as the signed /files routes serve it.
type FileAsset struct {
	Status           string // models/status.Asset*: only a ready file is served
	Purged           bool   // removed by the retention policy
	BlobKey          string
	ContentType      string
	SHA256           string // hex; "" when unknown
	ThumbnailBlobKey string // "" when the file has no thumbnail
}

// FileAsset returns the asset a signed /files URL names, whoever owns it: the signature is the
// authorisation. KindNotFound when there is none.
func (e *Uploads) FileAsset(ctx context.Context, id string) (FileAsset, error) {
	a, err := e.store.GetAsset(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		return FileAsset{}, refuse(KindNotFound, "", "", "No such file.")
	}
	if err != nil {
		return FileAsset{}, err
	}
	return FileAsset{Status: a.Status, Purged: a.PurgedAt != nil, BlobKey: a.BlobKey, ContentType: a.ContentType,
		SHA256: a.SHA256, ThumbnailBlobKey: a.ThumbnailBlobKey}, nil
}
