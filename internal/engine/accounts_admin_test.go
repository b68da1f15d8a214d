package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// TestEnsureDemoTenant: the demo tenant is created once and kept while both its keys
// authenticate for it; a revoked key, or keys of another tenant, get a new one.
func TestEnsureDemoTenant(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		accounts := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()}).Accounts
		req := engine.DemoTenantRequest{Credits: 1000, RateLimitPerMin: 60}
		first, err := accounts.EnsureDemoTenant(ctx, box, req)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := models.GetAccount(db, first.AccountID)
		if err != nil || acc.Name != "Demo account" || acc.CreditBalance != 1000 {
			t.Fatalf("demo account = %+v, %v", acc, err)
		}
		inst, err := models.GetInstallation(db, first.InstallationID)
		if err != nil || inst.Name != "Demo shop" || inst.CallbackURL != "" || inst.RateLimitPerMin != 60 {
			t.Fatalf("demo installation = %+v, %v", inst, err)
		}
		if got, err := box.Open(inst.WebhookSecretEnc); err != nil || got != first.WebhookSecret {
			t.Fatalf("webhook secret opens to %q, %v", got, err)
		}

		if !strings.HasPrefix(first.PluginTestWebhookSecret, "whsec_") || first.PluginTestWebhookSecret == first.WebhookSecret {
			t.Fatalf("the plugin test key's webhook secret = %q; want the test twin's own", first.PluginTestWebhookSecret)
		}
		req.Known = first
		if again, err := accounts.EnsureDemoTenant(ctx, box, req); err != nil || again != first {
			t.Fatalf("known tenant = %+v, %v; want it kept", again, err)
		}
		other := first
		other.InstallationID = models.NewID()
		if got, err := accounts.EnsureDemoTenant(ctx, box, engine.DemoTenantRequest{Known: other, Credits: 1, RateLimitPerMin: 60}); err != nil ||
			got.AccountID == first.AccountID || got.InstallationID == first.InstallationID {
			t.Fatalf("a key of another installation = %+v, %v; want a new tenant", got, err)
		}
		// A revoked key is issued anew for the same tenant: its orders, catalog and endpoints stay
		// reachable with the keys `shotflow dev` prints.
		if _, err := accounts.RevokeKey(ctx, first.ExternalAPIKey); err != nil {
			t.Fatal(err)
		}
		second, err := accounts.EnsureDemoTenant(ctx, box, req)
		if err != nil || second.AccountID != first.AccountID || second.InstallationID != first.InstallationID ||
			second.PluginAPIKey != first.PluginAPIKey || second.ExternalAPIKey == first.ExternalAPIKey {
			t.Fatalf("after the external key's revocation = %+v, %v; want the same tenant with a new external key", second, err)
		}
		if _, err := accounts.AuthenticateAccountKey(ctx, second.ExternalAPIKey, time.Now()); err != nil {
			t.Fatalf("the new external key: %v", err)
		}
		if _, err := accounts.RevokeKey(ctx, second.PluginAPIKey); err != nil {
			t.Fatal(err)
		}
		req.Known = second
		third, err := accounts.EnsureDemoTenant(ctx, box, req)
		if err != nil || third.AccountID != first.AccountID || third.InstallationID != first.InstallationID ||
			third.PluginAPIKey == second.PluginAPIKey || third.ExternalAPIKey != second.ExternalAPIKey || third.WebhookSecret != first.WebhookSecret {
			t.Fatalf("after the plugin key's revocation = %+v, %v; want the same tenant with a new plugin key", third, err)
		}
		if caller, err := accounts.AuthenticatePluginKey(ctx, third.PluginAPIKey, time.Now()); err != nil || caller.Installation.ID != first.InstallationID {
			t.Fatalf("the new plugin key authenticates as %+v, %v", caller, err)
		}
		var accounts2 int64
		if err := db.Model(&models.Account{}).Where("name = ? AND test_mode = ?", "Demo account", false).Count(&accounts2).Error; err != nil || accounts2 != 2 {
			t.Fatalf("%d live demo accounts (%v); want the first and the other installation's only", accounts2, err)
		}
	})
}

// TestOperatorAccountUseCases: grants, keys and revocations of `shotflow admin`, and their
// refusals of unknown records.
func TestOperatorAccountUseCases(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		accounts := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()}).Accounts
		box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		acc, err := accounts.CreateAccount(ctx, "  Acme  ", 5)
		if err != nil || acc.Name != "Acme" || acc.Credits != 5 || acc.ExternalKeyID == "" {
			t.Fatalf("account = %+v, %v", acc, err)
		}
		granted, err := accounts.GrantCredits(ctx, acc.AccountID, 7)
		if err != nil || granted != (engine.CreditsGranted{AccountID: acc.AccountID, CreditBalance: 12, Granted: 7}) {
			t.Fatalf("grant = %+v, %v", granted, err)
		}
		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		issued, err := accounts.IssueAccountKey(ctx, engine.AccountKeyRequest{AccountID: acc.AccountID, Name: "reader",
			Scopes: []string{"content.read"}, ExpiresAt: &expires})
		if err != nil || issued.AccountID != acc.AccountID || !slices.Equal(issued.Scopes, []string{"content.read"}) {
			t.Fatalf("issued = %+v, %v", issued, err)
		}
		if rev, err := accounts.RevokeKey(ctx, issued.KeyID); err != nil || rev != (engine.KeyRevoked{KeyID: issued.KeyID, Revoked: true}) {
			t.Fatalf("revoke = %+v, %v", rev, err)
		}
		keys, err := accounts.ListAccountKeys(ctx, acc.AccountID, engine.ModeAll)
		if err != nil || len(keys.Keys) != 2 || keys.Keys[0].KeyID != issued.KeyID || keys.Keys[0].RevokedAt == nil ||
			keys.Keys[0].ExpiresAt == nil || !keys.Keys[0].ExpiresAt.Equal(expires) || keys.Keys[1].KeyID != acc.ExternalKeyID {
			t.Fatalf("keys = %+v, %v", keys, err)
		}

		unknown := models.NewID()
		for name, err := range map[string]error{
			"grant":        mustFail(accounts.GrantCredits(ctx, unknown, 1)),
			"issue":        mustFail(accounts.IssueAccountKey(ctx, engine.AccountKeyRequest{AccountID: unknown, Name: "x", Scopes: []string{"content.read"}})),
			"installation": mustFail(accounts.CreateInstallation(ctx, box, engine.InstallationRequest{AccountID: unknown, Name: "x", RateLimitPerMin: 1})),
			"revoke":       mustFail(accounts.RevokeKey(ctx, "0123456789abcdef")),
		} {
			var e *engine.Error
			if !errors.As(err, &e) || e.Kind != engine.KindNotFound || !errors.Is(err, models.ErrNotFound) {
				t.Errorf("%s of an unknown record: %v, want KindNotFound", name, err)
			}
		}
	})
}

// TestAccountKeysAreListedInUTC: `shotflow admin keys list` prints its times in UTC like every
// other admin command, whatever the operator machine's zone. PostgreSQL's driver reads a
// timestamptz in the process's local zone, so the times of the listed keys said the operator's
// offset there and UTC on SQLite. Not parallel: it sets time.Local for its run.
func TestAccountKeysAreListedInUTC(t *testing.T) {
	local := time.Local
	time.Local = time.FixedZone("UTC+5", 5*3600)
	t.Cleanup(func() { time.Local = local })
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		accounts := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()}).Accounts
		acc, err := accounts.CreateAccount(ctx, "zones", 0)
		if err != nil {
			t.Fatal(err)
		}
		expires := time.Now().Add(time.Hour)
		if _, err := accounts.IssueAccountKey(ctx, engine.AccountKeyRequest{AccountID: acc.AccountID, Name: "expiring",
			Scopes: models.ExternalScopes, ExpiresAt: &expires}); err != nil {
			t.Fatal(err)
		}
		if _, err := accounts.IssueTestAccountKey(ctx, engine.AccountKeyRequest{AccountID: acc.AccountID, Name: "test",
			Scopes: models.ExternalScopes}); err != nil {
			t.Fatal(err)
		}
		if _, err := accounts.RevokeKey(ctx, acc.ExternalKeyID); err != nil {
			t.Fatal(err)
		}
		if _, err := accounts.AuthenticateAccountKey(ctx, acc.ExternalAPIKey, time.Now()); err == nil {
			t.Fatal("a revoked key authenticated")
		}
		keys, err := accounts.ListAccountKeys(ctx, acc.AccountID, engine.ModeAll)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys.Keys) != 3 {
			t.Fatalf("keys = %+v", keys)
		}
		for _, k := range keys.Keys {
			for name, at := range map[string]*time.Time{"created_at": &k.CreatedAt, "expires_at": k.ExpiresAt, "revoked_at": k.RevokedAt, "last_used_at": k.LastUsedAt} {
				if at == nil {
					continue
				}
				if _, offset := at.Zone(); offset != 0 {
					t.Errorf("key %s (%s): %s %v is not in UTC", k.KeyID, k.Name, name, at)
				}
			}
		}
	})
}
