package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// Keys: who calls. A plugin key authenticates its installation; the installation manages its own
// webhook signing secret.

// PluginCaller is the installation a plugin API key authenticates, and the key.
type PluginCaller struct {
	Key          *models.APIKey
	Installation *models.Installation
}

// AuthenticatePluginKey resolves the full text of a plugin API key to its live key and the key's
// active installation at now, both read by one query. KindUnauthenticated when the key is unknown,
// expired or revoked, is bound to no installation, or its installation is not active.
func (e *Engine) AuthenticatePluginKey(ctx context.Context, raw string, now time.Time) (PluginCaller, error) {
	key, inst, err := models.AuthenticateKeyWithInstallation(e.DB.WithContext(ctx), models.KeyKindPlugin, raw, now)
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
	return PluginCaller{Key: key, Installation: inst}, nil
}

// RotatedSecret is a new webhook signing secret, shown once, and the end of the previous one's
// validity.
type RotatedSecret struct {
	Secret                   string
	PreviousSecretValidUntil time.Time
}

// RotateWebhookSecret replaces the webhook signing secret of installationID, which must be the
// caller's own installation (KindNotFound otherwise), with a new one sealed by box. The previous
// secret keeps signing, next to the new one, for models.PreviousSecretGrace.
func (e *Engine) RotateWebhookSecret(ctx context.Context, box models.Sealer, callerInstallationID, installationID string) (RotatedSecret, error) {
	if installationID != callerInstallationID {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	secret := webhooks.NewSecret()
	until, err := models.RotateWebhookSecret(e.DB.WithContext(ctx), box, installationID, secret, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	if err != nil {
		return RotatedSecret{}, err
	}
	return RotatedSecret{Secret: secret, PreviousSecretValidUntil: until}, nil
}
