package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/status"
)

// GetAsset loads an asset by ID; ErrNotFound when there is none.
func (s *Store) GetAsset(ctx context.Context, id string) (*Asset, error) {
	return GetAsset(s.conn(ctx), id)
}

// PreparedAsset is what preparing an upload stored, for MarkAssetReady.
type PreparedAsset struct {
	Width, Height    int
	ThumbnailBlobKey string
	PreparedBlobKey  string // "": generation reads the upload as it is
}

// MarkAssetReady marks an upload that is in processing ready, with what its preparation stored.
// An upload no longer in processing is left as it is.
func (s *Store) MarkAssetReady(ctx context.Context, id string, p PreparedAsset) error {
	fields := map[string]any{
		"status": status.AssetReady, "width": p.Width, "height": p.Height,
		"thumbnail_blob_key": p.ThumbnailBlobKey, "updated_at": time.Now().UTC(),
	}
	if p.PreparedBlobKey != "" {
		fields["prepared_blob_key"] = p.PreparedBlobKey
	}
	return s.conn(ctx).Model(&Asset{}).Where("id = ? AND status = ?", id, status.AssetProcessing).Updates(fields).Error
}

// MarkAssetInvalid marks an upload that is in processing invalid, with the problem that makes it
// unusable. An upload no longer in processing is left as it is.
func (s *Store) MarkAssetInvalid(ctx context.Context, id, problem string) error {
	return s.conn(ctx).Model(&Asset{}).Where("id = ? AND status = ?", id, status.AssetProcessing).
		Updates(map[string]any{"status": status.AssetInvalid, "problem": problem, "updated_at": time.Now().UTC()}).Error
}

// InstallationAsset returns an asset of the installation by ID (in either case); ErrNotFound for
// a missing asset or another installation's.
func (s *Store) InstallationAsset(ctx context.Context, installationID, assetID string) (*Asset, error) {
	var a Asset
	err := s.conn(ctx).Where("id = ? AND installation_id = ?", CanonicalID(assetID), installationID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}
