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

// ClaimIdempotencyKey makes the caller the owner of the scope's key for a request whose canonical
// hash is requestHash, its answer to be replayed for ttl (IdempotencyTTL when 0), or returns the
// row that already holds the key (claimed false); see ClaimScopedIdempotencyKey.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, scope IdempotencyScope, key, requestHash string, lease, ttl time.Duration) (row *IdempotencyKey, claimed bool, err error) {
	return ClaimScopedIdempotencyKey(s.conn(ctx), scope, key, requestHash, lease, ttl)
}

// RecordIdempotencyAnswer marks the claim completed with its request's answer (orderID names the
// order the request created, "" for none); run it in the transaction that commits the request's
// effect. ErrIdempotencyClaimLost, and the transaction must roll back, when the claim is no longer
// the caller's.
func (s *Store) RecordIdempotencyAnswer(ctx context.Context, claim *IdempotencyKey, orderID string, answer IdempotencyAnswer) error {
	return RecordIdempotencyAnswer(s.conn(ctx), claim, orderID, answer)
}

// ReleaseIdempotencyKey deletes a claim that is still in progress and still the caller's, so that
// its key is free again; a completed record is never deleted.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, claim *IdempotencyKey) error {
	return ReleaseIdempotencyKey(s.conn(ctx), claim)
}
