package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
)

// FileAsset returns the asset a signed /files URL names, whoever owns it: the signature is the
// authorisation. KindNotFound when there is none; that refusal wraps models.ErrNotFound, which is
// what api/files tells a missing file by.
func (e *Uploads) FileAsset(ctx context.Context, id string) (*models.Asset, error) {
	a, err := models.GetAsset(e.cfg.DB.WithContext(ctx), id)
	if errors.Is(err, models.ErrNotFound) {
		r := refuse(KindNotFound, "", "", "No such file.")
		r.Cause = err
		return nil, r
	}
	return a, err
}
