package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
)

// KeyUseRecordedEvery is how stale an external key's last_used_at may get: it is written at most
// this often, not on every request.
const KeyUseRecordedEvery = time.Minute

// AuthenticateAccountKey returns the live external key (mk_live_…) that raw names, or
// models.ErrInvalidKey when it is malformed, unknown, expired or revoked. The key is read from the
// database on every call, so a revocation holds at once in every process. It records the key's
// use at now when last_used_at is older than KeyUseRecordedEvery; a failure to record it is
// logged, never a refusal.
func (e *Engine) AuthenticateAccountKey(ctx context.Context, raw string, now time.Time) (*models.APIKey, error) {
	k, err := models.AuthenticateKey(e.DB.WithContext(ctx), models.KeyKindExternal, raw, now)
	if err != nil {
		return nil, err
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= KeyUseRecordedEvery {
		e.recordKeyUse(ctx, k.ID, now)
	}
	return k, nil
}

// recordKeyUse sets the key's last_used_at to now, logging a failure.
func (e *Engine) recordKeyUse(ctx context.Context, keyID string, now time.Time) {
	err := e.DB.WithContext(ctx).Model(&models.APIKey{}).Where("id = ?", keyID).Update("last_used_at", now.UTC()).Error
	if err != nil && e.Log != nil {
		e.Log.Warn("record key use", zap.String("key_id", keyID), zap.Error(err))
	}
}
