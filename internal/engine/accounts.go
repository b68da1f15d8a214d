package engine

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
)

// Accounts: who calls. A plugin key authenticates its installation, an external key its account.

// PluginCaller is the installation a plugin API key authenticates, and the key.
type PluginCaller struct {
	Key          APIKey
	Installation Installation
}

// APIKey is an authenticated API key: what it may do and whose it is.
type APIKey struct {
	ID        string
	AccountID string
	Scopes    []string
	ExpiresAt *time.Time // nil: the key does not expire
	// Test is a test key's (pk_test_…, mk_test_…): its account (and installation) is a test twin,
	// so everything it reads and creates is test mode's (docs/test-mode.md).
	Test bool
}

func apiKeyOf(k *models.APIKey) APIKey {
	return APIKey{ID: k.ID, AccountID: k.AccountID, Scopes: k.ScopeList(), ExpiresAt: k.ExpiresAt, Test: k.TestMode}
}

// AuthenticatePluginKey resolves the full text of a plugin API key to its live key and the key's
// active installation at now, both read by one query. KindUnauthenticated when the key is unknown,
// expired or revoked, is bound to no installation, or its installation is not active.
func (e *Accounts) AuthenticatePluginKey(ctx context.Context, raw string, now time.Time) (PluginCaller, error) {
	key, inst, err := e.store.AuthenticateKeyWithInstallation(ctx, models.KeyKindPlugin, raw, now)
	if errors.Is(err, models.ErrInvalidKey) {
		return PluginCaller{}, refuse(KindUnauthenticated, "", "", "The API key is invalid, expired or revoked.")
	}
	if err != nil {
		return PluginCaller{}, err
	}
	if key.InstallationID == nil {
		return PluginCaller{}, refuse(KindUnauthenticated, "", "", "The API key is not bound to an installation.")
	}
	if inst == nil || inst.Status != "active" {
		return PluginCaller{}, refuse(KindUnauthenticated, "", "", "The installation of this key is not active.")
	}
	if key.LastUsedAt == nil || now.Sub(*key.LastUsedAt) >= KeyUseRecordedEvery {
		e.recordKeyUse(ctx, key.ID, now)
	}
	return PluginCaller{Key: apiKeyOf(key), Installation: Installation{ID: inst.ID, AccountID: inst.AccountID,
		Name: inst.Name, RateLimitPerMin: inst.RateLimitPerMin}}, nil
}

// RotatedSecret is a new webhook signing secret, shown once, and the end of the previous one's
// validity.
type RotatedSecret struct {
	Secret                   string
	PreviousSecretValidUntil time.Time
}

// KeyUseRecordedEvery is how stale a key's last_used_at may get (plugin and external keys alike):
// it is written at most this often, not on every request.
const KeyUseRecordedEvery = time.Minute

// AuthenticateAccountKey returns the external key (mk_live_…, or mk_test_… of a test twin) that raw names:
// KindUnauthenticated when it is malformed, unknown, expired or revoked. The key is read from the
// database on every call, so a revocation holds at once in every process. It records the key's
// use at now when last_used_at is older than KeyUseRecordedEvery; a failure to record it is
// logged, never a refusal.
func (e *Accounts) AuthenticateAccountKey(ctx context.Context, raw string, now time.Time) (APIKey, error) {
	k, err := e.store.AuthenticateKey(ctx, models.KeyKindExternal, raw, now)
	if errors.Is(err, models.ErrInvalidKey) {
		return APIKey{}, refuse(KindUnauthenticated, "", "", "The API key is invalid, expired or revoked.")
	}
	if err != nil {
		return APIKey{}, err
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= KeyUseRecordedEvery {
		e.recordKeyUse(ctx, k.ID, now)
	}
	return apiKeyOf(k), nil
}

// recordKeyUse sets the key's last_used_at to now, logging a failure.
func (e *Accounts) recordKeyUse(ctx context.Context, keyID string, now time.Time) {
	err := e.store.RecordKeyUse(ctx, keyID, now)
	if err != nil && e.cfg.Log != nil {
		e.cfg.Log.Warn("record key use", zap.String("key_id", keyID), zap.Error(err))
	}
}
