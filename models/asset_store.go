package models

import (
	"context"
	"errors"
	"slices"
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
	SHA256           string // hex, of an upload sent straight to the store; "": the one stored on receipt
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
	if p.SHA256 != "" {
		fields["sha256"] = p.SHA256
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

// CreateAsset inserts an asset.
func (s *Store) CreateAsset(ctx context.Context, a *Asset) error {
	return s.conn(ctx).Create(a).Error
}

// FindUpload loads an upload (an asset of kind upload) by ID; ErrNotFound when there is none.
func (s *Store) FindUpload(ctx context.Context, id string) (*Asset, error) {
	var a Asset
	err := s.conn(ctx).Take(&a, "id = ? AND kind = ?", id, AssetKindUpload).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// claimableUpload selects an upload that may be claimed: one awaiting its bytes, or one whose
// claim was taken at or before a time (the argument after the two statuses) by a process that
// died holding it. A claim's time is its updated_at.
const claimableUpload = "(status = ? OR (status = ? AND updated_at <= ?))"

// ClaimUpload moves an upload awaiting its bytes whose URL has not expired at now to uploading, in
// one statement, and reports whether it did: false when it was already used, is claimed, or has
// expired. A claim taken at or before abandonedBefore was left by a process that died before it
// stored or released the bytes (no request lasts that long): it is taken again.
func (s *Store) ClaimUpload(ctx context.Context, id string, now, abandonedBefore time.Time) (bool, error) {
	res := s.conn(ctx).Model(&Asset{}).
		Where("id = ? AND upload_expires_at > ?", id, now.UTC()).
		Where(claimableUpload, status.AssetAwaitingUpload, status.AssetUploading, abandonedBefore.UTC()).
		Updates(map[string]any{"status": status.AssetUploading, "updated_at": now.UTC()})
	return res.RowsAffected > 0, res.Error
}

// ReleaseUpload moves a claimed upload (uploading) back to awaiting its bytes; an upload in any
// other status is left as it is.
func (s *Store) ReleaseUpload(ctx context.Context, id string) error {
	return s.conn(ctx).Model(&Asset{}).Where("id = ? AND status = ?", id, status.AssetUploading).
		Update("status", status.AssetAwaitingUpload).Error
}

// MarkUploadStored records the stored bytes of a claimed upload (their SHA-256, and their
// dimensions, 0 when unknown) at now and moves it to processing; a's fields are updated to match.
func (s *Store) MarkUploadStored(ctx context.Context, a *Asset, sha256 string, width, height int, now time.Time) error {
	return s.conn(ctx).Model(a).Updates(map[string]any{
		"status": status.AssetProcessing, "sha256": sha256, "width": width, "height": height, "updated_at": now,
	}).Error
}

// StaleProcessingAssets returns up to limit assets in processing not updated since updatedBefore,
// oldest first, with their ID and account ID only.
func (s *Store) StaleProcessingAssets(ctx context.Context, updatedBefore time.Time, limit int) ([]Asset, error) {
	var assets []Asset
	err := s.conn(ctx).Select("id", "account_id").
		Where("status = ? AND updated_at <= ?", status.AssetProcessing, updatedBefore).
		Order("updated_at").Limit(limit).Find(&assets).Error
	return assets, err
}

// AwaitedUploads returns up to limit uploads still awaiting their bytes that an open job waits for
// (its input), oldest first: the uploads sent straight to the store whose arrival nobody has
// noticed yet, and those whose claim was taken at or before abandonedBefore by a process that died
// holding it (ClaimArrivedUpload takes them again).
func (s *Store) AwaitedUploads(ctx context.Context, abandonedBefore time.Time, limit int) ([]Asset, error) {
	var assets []Asset
	err := s.conn(ctx).Where("kind = ?", AssetKindUpload).
		Where(claimableUpload, status.AssetAwaitingUpload, status.AssetUploading, abandonedBefore.UTC()).
		Where("id IN (?)", s.conn(ctx).Model(&Job{}).Select("input_asset_id").
			Where("status IN ? AND input_asset_id IS NOT NULL", []string{status.JobPending, status.JobInProgress, status.JobRetryPending})).
		Order("created_at").Limit(limit).Find(&assets).Error
	return assets, err
}

// AssetsByID loads the assets ids by ID (their keys, content type and purge), in as few queries as
// the list takes; an ID of no asset is left out.
func (s *Store) AssetsByID(ctx context.Context, ids []string) (map[string]Asset, error) {
	out := make(map[string]Asset, len(ids))
	for chunk := range slices.Chunk(ids, 500) {
		var rows []Asset
		if err := s.conn(ctx).Select("id", "blob_key", "thumbnail_blob_key", "content_type", "purged_at").
			Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, a := range rows {
			out[a.ID] = a
		}
	}
	return out, nil
}

// ClaimArrivedUpload moves an upload awaiting its bytes to uploading at now, whatever its URL's
// expiry (the store took the bytes while the URL was valid), and reports whether it did: false
// when it is claimed. A claim taken at or before abandonedBefore was left by a process that died
// holding it: it is taken again.
func (s *Store) ClaimArrivedUpload(ctx context.Context, id string, now, abandonedBefore time.Time) (bool, error) {
	res := s.conn(ctx).Model(&Asset{}).Where("id = ?", id).
		Where(claimableUpload, status.AssetAwaitingUpload, status.AssetUploading, abandonedBefore.UTC()).
		Updates(map[string]any{"status": status.AssetUploading, "updated_at": now.UTC()})
	return res.RowsAffected > 0, res.Error
}
