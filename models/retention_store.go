package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// retainedOutput is true for a generated file that output retention keeps: one a live packshot
// points at that is neither archived nor rejected (the argument is VotingRejected), or the image
// of a DONE fashion model or scenery.
const retainedOutput = `(EXISTS (SELECT 1 FROM packshots p WHERE p.asset_id = assets.id AND p.deleted_at IS NULL AND p.archived_at IS NULL AND p.voting <> ?)
	OR EXISTS (SELECT 1 FROM fashion_models r WHERE r.thumbnail_asset_id = assets.id AND r.status = 'DONE')
	OR EXISTS (SELECT 1 FROM sceneries r WHERE r.thumbnail_asset_id = assets.id AND r.status = 'DONE'))`

// PurgeableOutputs returns up to limit generated files created before createdBefore that are not
// purged and that nothing keeps (a live packshot that is neither archived nor rejected, a DONE
// fashion model or scenery whose image it is), with their ID and creation time only, in
// (created_at, id) order from the file after after (nil: from the first).
func (s *Store) PurgeableOutputs(ctx context.Context, createdBefore time.Time, after *Asset, limit int) ([]Asset, error) {
	q := s.conn(ctx).Model(&Asset{}).Select("id", "created_at").
		Where("kind = ? AND purged_at IS NULL AND created_at < ?", AssetKindOutput, createdBefore).
		Where("NOT "+retainedOutput, VotingRejected)
	if after != nil {
		q = q.Where("(created_at > ? OR (created_at = ? AND id > ?))", after.CreatedAt, after.CreatedAt, after.ID)
	}
	var page []Asset
	err := q.Order("created_at, id").Limit(limit).Find(&page).Error
	return page, err
}

// LockOutputForPurge locks the row of a generated file that is not purged (SELECT … FOR UPDATE on
// PostgreSQL: run it in Tx, which holds the lock until the file is marked purged) and reports
// whether it may be purged now: ok is false when it was purged meanwhile or something keeps it
// (PurgeableOutputs). Accepting a packshot locks the same row, so no file is purged after its
// packshot was accepted.
func (s *Store) LockOutputForPurge(ctx context.Context, id string) (a *Asset, ok bool, err error) {
	db := s.conn(ctx)
	var row Asset
	err = db.Clauses(clause.Locking{Strength: "UPDATE"}).
		Where("id = ? AND kind = ? AND purged_at IS NULL", id, AssetKindOutput).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var keep int64
	if err := db.Model(&Asset{}).Where("id = ? AND "+retainedOutput, id, VotingRejected).Count(&keep).Error; err != nil {
		return nil, false, err
	}
	return &row, keep == 0, nil
}

// MarkOutputPurged records that the generated file's blob was deleted at now.
func (s *Store) MarkOutputPurged(ctx context.Context, id string, now time.Time) error {
	return s.conn(ctx).Model(&Asset{}).Where("id = ?", id).
		Updates(map[string]any{"purged_at": now, "updated_at": now}).Error
}
