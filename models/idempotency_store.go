package models

import (
	"context"
	"time"
)

// PurgeExpiredIdempotencyKeys deletes the Idempotency-Key records that expired before now, of one
// installation (installationID not empty) or of all, and returns how many it deleted.
func (s *Store) PurgeExpiredIdempotencyKeys(ctx context.Context, installationID string, now time.Time) (int64, error) {
	q := s.conn(ctx).Where("expires_at < ?", now.UTC())
	if installationID != "" {
		q = q.Where("installation_id = ?", installationID)
	}
	res := q.Delete(&IdempotencyKey{})
	return res.RowsAffected, res.Error
}
