package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// The operators' use cases of Accounts (`shotflow admin`, and `shotflow dev`'s demo tenant):
// accounts, installations, external keys and credits. Their results carry the JSON names the
// admin commands print; secrets in them are shown this once and stored only as hashes (keys) or
// sealed (webhook secrets).

// AccountCreated is a new account with its first external API key.
type AccountCreated struct {
	AccountID      string `json:"account_id"`
	Name           string `json:"name"`
	Credits        int64  `json:"credits"`
	ExternalKeyID  string `json:"external_key_id"`
	ExternalAPIKey string `json:"external_api_key"`
}

// CreateAccount creates an account named name (trimmed) with credits granted through the ledger,
// and its first external API key (every default external scope, no expiry), in one transaction.
func (e *Accounts) CreateAccount(ctx context.Context, name string, credits int64) (AccountCreated, error) {
	if credits < 0 || credits > MaxGrant {
		return AccountCreated{}, refuse(KindInvalid, "", "credits", "must be an integer from 0 to %d.", int64(MaxGrant))
	}
	var out AccountCreated
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		acc, err := tx.CreateAccount(ctx, strings.TrimSpace(name), credits)
		if err != nil {
			return err
		}
		key, err := tx.IssueKey(ctx, models.KeyKindExternal, acc.ID, nil, "default", models.ExternalScopes, nil)
		if err != nil {
			return err
		}
		out = AccountCreated{AccountID: acc.ID, Name: acc.Name, Credits: credits, ExternalKeyID: key.Key.ID, ExternalAPIKey: key.Secret}
		return nil
	})
	return out, err
}

// InstallationRequest asks for a plugin installation of an account.
type InstallationRequest struct {
	AccountID       string
	Name            string   // trimmed
	CallbackURL     string   // where its webhooks go; empty sends none
	Scopes          []string // of its plugin key; nil is every plugin scope (models.PluginScopes)
	RateLimitPerMin int      // of its plugin key
}

// InstallationCreated is a new installation with its plugin API key and webhook signing secret.
type InstallationCreated struct {
	InstallationID string   `json:"installation_id"`
	AccountID      string   `json:"account_id"`
	Name           string   `json:"name"`
	CallbackURL    string   `json:"callback_url"`
	KeyID          string   `json:"key_id"`
	APIKey         string   `json:"api_key"`
	WebhookSecret  string   `json:"webhook_secret"`
	Scopes         []string `json:"scopes"`
	RateLimit      int      `json:"rate_limit_per_min"`
}

// CreateInstallation creates an installation of an existing account (KindNotFound otherwise), its
// plugin API key and a new webhook signing secret, which box seals.
func (e *Accounts) CreateInstallation(ctx context.Context, box models.Sealer, req InstallationRequest) (InstallationCreated, error) {
	if _, err := liveAccount(ctx, e.store, req.AccountID); err != nil {
		return InstallationCreated{}, err
	}
	scopes := req.Scopes
	if scopes == nil {
		scopes = models.PluginScopes
	}
	created, err := e.store.CreateInstallation(ctx, box, models.NewInstallation{
		AccountID: req.AccountID, Name: strings.TrimSpace(req.Name), CallbackURL: req.CallbackURL, Scopes: scopes,
		RateLimitPerMin: req.RateLimitPerMin,
	}, webhooks.NewSecret())
	if errors.Is(err, models.ErrNotFound) {
		return InstallationCreated{}, missing("account", req.AccountID)
	}
	if err != nil {
		return InstallationCreated{}, err
	}
	return InstallationCreated{
		InstallationID: created.Installation.ID, AccountID: req.AccountID, Name: created.Installation.Name,
		CallbackURL: req.CallbackURL, KeyID: created.APIKey.Key.ID, APIKey: created.APIKey.Secret,
		WebhookSecret: created.WebhookSecret, Scopes: scopes, RateLimit: req.RateLimitPerMin,
	}, nil
}

// CreditsGranted is an account's balance after a grant.
type CreditsGranted struct {
	AccountID       string `json:"account_id"`
	CreditBalance   int64  `json:"credit_balance"`
	CreditsReserved int64  `json:"credits_reserved"`
	Granted         int64  `json:"granted"`
}

// MaxGrant is the most credits one grant adds: far above any real purchase, and far enough below
// the 64-bit balance that no sum of grants a support desk makes can overflow it.
const MaxGrant = 1_000_000_000_000

// GrantCredits adds amount (1 to MaxGrant) credits to an account's balance with a grant ledger
// entry noted as granted by an operator; another amount is KindInvalid naming "amount", an unknown
// account KindNotFound.
func (e *Accounts) GrantCredits(ctx context.Context, accountID string, amount int64) (CreditsGranted, error) {
	if amount < 1 || amount > MaxGrant {
		return CreditsGranted{}, refuse(KindInvalid, "", "amount", "must be an integer from 1 to %d.", int64(MaxGrant))
	}
	var out CreditsGranted
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		if _, err := liveAccount(ctx, tx, accountID); err != nil {
			return err
		}
		if err := tx.GrantCredits(ctx, accountID, amount, "granted by operator"); err != nil {
			return err
		}
		acc, err := tx.GetAccount(ctx, accountID)
		if err != nil {
			return err
		}
		out = CreditsGranted{AccountID: acc.ID, CreditBalance: acc.CreditBalance, CreditsReserved: acc.CreditsReserved, Granted: amount}
		return nil
	})
	if errors.Is(err, models.ErrNotFound) {
		return CreditsGranted{}, missing("account", accountID)
	}
	return out, err
}

// AccountKeyRequest asks for an external content API key of an account.
type AccountKeyRequest struct {
	AccountID string
	Name      string     // a label for the key
	Scopes    []string   // models.ExternalScopeNames
	ExpiresAt *time.Time // nil never expires
}

// AccountKeyIssued is a new external key.
type AccountKeyIssued struct {
	KeyID     string     `json:"key_id"`
	AccountID string     `json:"account_id"`
	APIKey    string     `json:"api_key"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// IssueAccountKey issues an external content API key of an existing account (KindNotFound
// otherwise) with the requested scopes and expiry.
func (e *Accounts) IssueAccountKey(ctx context.Context, req AccountKeyRequest) (AccountKeyIssued, error) {
	var out AccountKeyIssued
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		if _, err := liveAccount(ctx, tx, req.AccountID); err != nil {
			return err
		}
		k, err := tx.IssueKey(ctx, models.KeyKindExternal, req.AccountID, nil, req.Name, req.Scopes, req.ExpiresAt)
		if err != nil {
			return err
		}
		out = AccountKeyIssued{KeyID: k.Key.ID, AccountID: req.AccountID, APIKey: k.Secret, Scopes: req.Scopes, ExpiresAt: req.ExpiresAt}
		return nil
	})
	if errors.Is(err, models.ErrNotFound) {
		return AccountKeyIssued{}, missing("account", req.AccountID)
	}
	return out, err
}

// AccountKeyListed is one external key of an account, never its secret.
type AccountKeyListed struct {
	KeyID      string     `json:"key_id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	Livemode   bool       `json:"livemode"` // false for a test key (mk_test_…) of the account's test twin
}

// AccountKeys are the external keys of an account, newest first.
type AccountKeys struct {
	AccountID string `json:"account_id"`
	// TestAccountID is the account's test twin, whose keys are the test keys listed; empty when it
	// has none or the mode shows live keys alone.
	TestAccountID string             `json:"test_account_id,omitempty"`
	Keys          []AccountKeyListed `json:"keys"`
}

// ListAccountKeys lists an account's external keys, revoked and expired ones included, newest
// first, their times in UTC: its live keys and the test keys of its test twin (IssueTestAccountKey), as mode says
// (ModeAll or "" both). An account without any has an empty list; an unknown one (or a test twin,
// whose keys its live account lists) is KindNotFound.
func (e *Accounts) ListAccountKeys(ctx context.Context, accountID string, mode Mode) (AccountKeys, error) {
	if !mode.valid() {
		return AccountKeys{}, refuse(KindInvalid, "", "mode", "must be one of: %s.", strings.Join(Modes, ", "))
	}
	if _, err := liveAccount(ctx, e.store, accountID); err != nil {
		return AccountKeys{}, err
	}
	out := AccountKeys{AccountID: accountID, Keys: []AccountKeyListed{}}
	owners := []string{accountID}
	twin, err := e.store.FindTestTwinOfAccount(ctx, accountID)
	switch {
	case err == nil && mode.includes(true):
		out.TestAccountID = twin.ID
		owners = append(owners, twin.ID)
	case err != nil && !errors.Is(err, models.ErrNotFound):
		return AccountKeys{}, err
	}
	for _, owner := range owners {
		keys, err := e.store.AccountKeys(ctx, owner, models.KeyKindExternal)
		if err != nil {
			return AccountKeys{}, err
		}
		for _, k := range keys {
			if !mode.includes(k.TestMode) {
				continue
			}
			// In UTC, as every admin command prints its times: PostgreSQL's driver reads them in
			// the process's zone.
			out.Keys = append(out.Keys, AccountKeyListed{KeyID: k.ID, Name: k.Name, Scopes: k.ScopeList(), CreatedAt: k.CreatedAt.UTC(),
				ExpiresAt: utc(k.ExpiresAt), RevokedAt: utc(k.RevokedAt), LastUsedAt: utc(k.LastUsedAt), Livemode: !k.TestMode})
		}
	}
	slices.SortStableFunc(out.Keys, func(a, b AccountKeyListed) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// KeyRevoked names a revoked key.
type KeyRevoked struct {
	KeyID   string `json:"key_id"`
	Revoked bool   `json:"revoked"`
}

// RevokeKey revokes a key of either kind at once in every process, named by its ID or by the full
// key; revoking a revoked key again is no error, an unknown one is KindNotFound.
func (e *Accounts) RevokeKey(ctx context.Context, idOrKey string) (KeyRevoked, error) {
	id := models.CanonicalKeyID(idOrKey)
	if _, keyID, _, ok := models.ParseKey(strings.TrimSpace(idOrKey)); ok {
		id = keyID
	}
	err := e.store.RevokeKey(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		return KeyRevoked{}, missing("key", id)
	}
	if err != nil {
		return KeyRevoked{}, err
	}
	return KeyRevoked{KeyID: id, Revoked: true}, nil
}

// DemoTenant is the tenant `shotflow dev` seeds: an account with an external API key, and one
// installation of it with a plugin API key and a webhook signing secret.
type DemoTenant struct {
	AccountID      string
	ExternalAPIKey string
	InstallationID string
	PluginAPIKey   string
	WebhookSecret  string
	// The test keys of the installation's and the account's test twins (docs/test-mode.md), and
	// the webhook secret of the installation's twin, which signs the plugin test key's webhooks.
	PluginTestAPIKey        string
	ExternalTestAPIKey      string
	PluginTestWebhookSecret string
}

// DemoTenantRequest asks for the demo tenant.
type DemoTenantRequest struct {
	// Known is the tenant seeded before, if any: it is kept while its keys still authenticate.
	Known DemoTenant
	// Credits are a new tenant's opening balance.
	Credits int64
	// RateLimitPerMin is a new tenant's plugin key's rate limit.
	RateLimitPerMin int
}

// EnsureDemoTenant returns the known tenant when its plugin key still authenticates for its
// installation and its external key for its account. When a key of it was revoked or expired but
// its account and installation are there, it keeps the tenant (its orders, catalog and endpoints)
// and issues that key anew. Otherwise it creates a new one: the account "Demo account" with the
// requested credits, and its installation "Demo shop" with every plugin scope and no callback URL,
// whose webhook secret box seals.
func (e *Accounts) EnsureDemoTenant(ctx context.Context, box models.Sealer, req DemoTenantRequest) (DemoTenant, error) {
	t := req.Known
	ok, err := e.keepDemoTenant(ctx, &t)
	if err != nil {
		return DemoTenant{}, err
	}
	if !ok {
		acc, err := e.CreateAccount(ctx, "Demo account", req.Credits)
		if err != nil {
			return DemoTenant{}, err
		}
		inst, err := e.CreateInstallation(ctx, box, InstallationRequest{AccountID: acc.AccountID, Name: "Demo shop", RateLimitPerMin: req.RateLimitPerMin})
		if err != nil {
			return DemoTenant{}, err
		}
		t = DemoTenant{AccountID: acc.AccountID, ExternalAPIKey: acc.ExternalAPIKey, InstallationID: inst.InstallationID,
			PluginAPIKey: inst.APIKey, WebhookSecret: inst.WebhookSecret}
	}
	return e.ensureDemoTestKeys(ctx, box, t)
}

// ensureDemoTestKeys gives the demo tenant its test keys, keeping those that still authenticate.
func (e *Accounts) ensureDemoTestKeys(ctx context.Context, box models.Sealer, t DemoTenant) (DemoTenant, error) {
	now := time.Now()
	if _, err := e.store.AuthenticateKey(ctx, models.KeyKindPlugin, t.PluginTestAPIKey, now); err != nil {
		if err := ignoreInvalidKey(err); err != nil {
			return DemoTenant{}, err
		}
		k, err := e.IssueTestPluginKey(ctx, box, t.InstallationID, "demo test key", nil, nil)
		if err != nil {
			return DemoTenant{}, err
		}
		t.PluginTestAPIKey, t.PluginTestWebhookSecret = k.APIKey, k.WebhookSecret
	} else {
		// The kept key's twin signs with its current secret (a client may have rotated it).
		twin, err := e.store.TestTwinOfInstallation(ctx, box, t.InstallationID, webhooks.NewSecret())
		if err != nil {
			return DemoTenant{}, err
		}
		if t.PluginTestWebhookSecret, err = twinWebhookSecret(box, twin); err != nil {
			return DemoTenant{}, err
		}
	}
	if _, err := e.store.AuthenticateKey(ctx, models.KeyKindExternal, t.ExternalTestAPIKey, now); err != nil {
		if err := ignoreInvalidKey(err); err != nil {
			return DemoTenant{}, err
		}
		k, err := e.IssueTestAccountKey(ctx, AccountKeyRequest{AccountID: t.AccountID, Name: "demo test key", Scopes: models.ExternalScopes})
		if err != nil {
			return DemoTenant{}, err
		}
		t.ExternalTestAPIKey = k.APIKey
	}
	return t, nil
}

// keepDemoTenant reports whether the known demo tenant t can be kept: its account and installation
// are there. Its live keys that no longer authenticate for it (revoked, expired) are issued anew
// in t; keys that do are kept. False when the tenant is gone (or was never known).
func (e *Accounts) keepDemoTenant(ctx context.Context, t *DemoTenant) (bool, error) {
	if t.AccountID == "" || t.InstallationID == "" {
		return false, nil
	}
	if _, err := liveAccount(ctx, e.store, t.AccountID); err != nil {
		return false, ignoreMissing(err)
	}
	inst, err := e.store.GetInstallation(ctx, t.InstallationID)
	if err != nil || inst.AccountID != t.AccountID || inst.TestMode {
		return false, ignoreMissing(err)
	}
	now := time.Now()
	if k, err := e.store.AuthenticateKey(ctx, models.KeyKindPlugin, t.PluginAPIKey, now); err != nil || k.InstallationID == nil || *k.InstallationID != t.InstallationID {
		if err := ignoreInvalidKey(err); err != nil {
			return false, err
		}
		issued, err := e.store.IssueKey(ctx, models.KeyKindPlugin, t.AccountID, &t.InstallationID, "demo key", models.PluginScopes, nil)
		if err != nil {
			return false, err
		}
		t.PluginAPIKey = issued.Secret
	}
	if k, err := e.store.AuthenticateKey(ctx, models.KeyKindExternal, t.ExternalAPIKey, now); err != nil || k.AccountID != t.AccountID {
		if err := ignoreInvalidKey(err); err != nil {
			return false, err
		}
		issued, err := e.IssueAccountKey(ctx, AccountKeyRequest{AccountID: t.AccountID, Name: "default", Scopes: models.ExternalScopes})
		if err != nil {
			return false, err
		}
		t.ExternalAPIKey = issued.APIKey
	}
	return true, nil
}

// ignoreMissing is err, or nil when it only says that a record does not exist.
func ignoreMissing(err error) error {
	if errors.Is(err, models.ErrNotFound) {
		return nil
	}
	return err
}

// ignoreInvalidKey is err, or nil when it only says that the key does not authenticate.
func ignoreInvalidKey(err error) error {
	if errors.Is(err, models.ErrInvalidKey) {
		return nil
	}
	return err
}

// TestKeyIssued is a test key (pk_test_… or mk_test_…), shown once, and the test twin it belongs
// to: the twin account, and for a plugin key the twin installation.
type TestKeyIssued struct {
	KeyID          string `json:"key_id"`
	APIKey         string `json:"api_key"`
	AccountID      string `json:"account_id"`
	InstallationID string `json:"installation_id,omitempty"`
	// WebhookSecret signs the webhooks of a plugin test key's endpoints: its test twin
	// installation's (docs/test-mode.md); the live installation's secret does not.
	WebhookSecret string     `json:"webhook_secret,omitempty"`
	Scopes        []string   `json:"scopes"`
	ExpiresAt     *time.Time `json:"expires_at"`
	Livemode      bool       `json:"livemode"`
}

// IssueTestPluginKey issues a plugin test key (pk_test_…) for the live installation (KindNotFound
// for another ID), on its test twin, made the first time with TestDailyCredits (box seals its
// webhook secret). Scopes nil: every plugin scope.
func (e *Accounts) IssueTestPluginKey(ctx context.Context, box models.Sealer, liveInstallationID, name string, scopes []string, expiresAt *time.Time) (TestKeyIssued, error) {
	if scopes == nil {
		scopes = models.PluginScopes
	}
	var out TestKeyIssued
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		twin, err := tx.TestTwinOfInstallation(ctx, box, liveInstallationID, webhooks.NewSecret())
		if err != nil {
			return err
		}
		k, err := tx.IssueTestKey(ctx, models.KeyKindPlugin, twin.AccountID, &twin.ID, name, scopes, expiresAt)
		if err != nil {
			return err
		}
		secret, err := twinWebhookSecret(box, twin)
		if err != nil {
			return err
		}
		out = TestKeyIssued{KeyID: k.Key.ID, APIKey: k.Secret, AccountID: twin.AccountID, InstallationID: twin.ID,
			WebhookSecret: secret, Scopes: scopes, ExpiresAt: expiresAt}
		return nil
	})
	if errors.Is(err, models.ErrNotFound) {
		return TestKeyIssued{}, missing("installation", liveInstallationID)
	}
	return out, err
}

// IssueTestAccountKey issues an external test key (mk_test_…) for the live account of req
// (KindNotFound for another ID), on its test twin, made the first time with TestDailyCredits.
func (e *Accounts) IssueTestAccountKey(ctx context.Context, req AccountKeyRequest) (TestKeyIssued, error) {
	var out TestKeyIssued
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		twin, err := tx.TestTwinOfAccount(ctx, req.AccountID)
		if err != nil {
			return err
		}
		k, err := tx.IssueTestKey(ctx, models.KeyKindExternal, twin.ID, nil, req.Name, req.Scopes, req.ExpiresAt)
		if err != nil {
			return err
		}
		out = TestKeyIssued{KeyID: k.Key.ID, APIKey: k.Secret, AccountID: twin.ID, Scopes: req.Scopes, ExpiresAt: req.ExpiresAt}
		return nil
	})
	if errors.Is(err, models.ErrNotFound) {
		return TestKeyIssued{}, missing("account", req.AccountID)
	}
	return out, err
}

// liveAccount is the live account id names. A test twin (the account of a test key's records,
// listed as test_account_id) is no account an operator issues live keys or installations to, or
// grants credits: that would let a live key run real jobs on test credits. It does not exist here,
// as the test-key commands already say (KindNotFound).
func liveAccount(ctx context.Context, s *models.Store, id string) (*models.Account, error) {
	acc, err := s.GetAccount(ctx, id)
	switch {
	case errors.Is(err, models.ErrNotFound) || (err == nil && acc.TestMode):
		return nil, missing("account", id)
	case err != nil:
		return nil, err
	}
	return acc, nil
}

// twinWebhookSecret is the secret that signs the webhooks of a plugin test key's endpoints: its
// test twin installation's.
func twinWebhookSecret(box models.Sealer, twin *models.Installation) (string, error) {
	secret, err := box.Open(twin.WebhookSecretEnc)
	if err != nil {
		return "", fmt.Errorf("webhook secret of test installation %s: %w", twin.ID, err)
	}
	return secret, nil
}
