package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
)

// configVars lists every environment variable config.Config reads.
func configVars() []string {
	var names []string
	for _, kv := range (config.Config{}).Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// isolateEnv blanks every shotflow variable for the test (empty means "use the default"), so a
// developer's or CI's environment cannot leak into the test.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, name := range configVars() {
		t.Setenv(name, "")
	}
}

// adminFixture is a migrated SQLite database in a temporary directory, configured through the
// process environment like the real binary.
type adminFixture struct {
	dir       string
	dbPath    string
	dbURL     string
	secretKey []byte
}

func newAdminFixture(t *testing.T) *adminFixture {
	t.Helper()
	isolateEnv(t)
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	f := &adminFixture{dir: dir, dbPath: filepath.Join(dir, "db.sqlite"), secretKey: key}
	f.dbURL = "sqlite://" + f.dbPath
	t.Setenv("DATABASE_URL", f.dbURL)
	t.Setenv("SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	t.Setenv("DATA_DIR", dir)
	code, out, errOut := runCLI(t, "migrate")
	if code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "applied migrations") {
		t.Fatalf("first migrate printed %q, want it to list applied migrations", out)
	}
	return f
}

// db opens the fixture's database for inspection; it is closed when the test ends.
func (f *adminFixture) db(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := models.Open(f.dbURL, models.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

// runCLI runs the binary's run function in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// adminJSON runs an admin command that must succeed and decodes its JSON output into v.
func adminJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"admin"}, args...)...)
	if code != 0 {
		t.Fatalf("admin %v: exit %d, stderr %q", args, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("admin %v printed %q, not JSON: %v", args, out, err)
	}
}

func TestAdminWorkflow(t *testing.T) {
	f := newAdminFixture(t)

	// account create
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme", "--credits", "50")
	accountID, _ := acc["account_id"].(string)
	extKey, _ := acc["external_api_key"].(string)
	extKeyID, _ := acc["external_key_id"].(string)
	if !models.IsUUID(accountID) {
		t.Fatalf("account_id = %v, want a UUID (output %v)", acc["account_id"], acc)
	}
	if !strings.HasPrefix(extKey, models.ExternalKeyPrefix) {
		t.Errorf("external_api_key = %q, want prefix %s", extKey, models.ExternalKeyPrefix)
	}
	if acc["name"] != "Acme" || acc["credits"] != float64(50) {
		t.Errorf("account output = %v", acc)
	}

	db := f.db(t)
	a, err := models.GetAccount(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "Acme" || a.CreditBalance != 50 || a.CreditsReserved != 0 {
		t.Errorf("stored account = %+v", a)
	}
	ek, err := models.AuthenticateKey(db, models.KeyKindExternal, extKey, time.Now())
	if err != nil {
		t.Fatalf("external key does not authenticate: %v", err)
	}
	if ek.ID != extKeyID || ek.AccountID != accountID || !slices.Equal(ek.ScopeList(), models.ExternalScopes) {
		t.Errorf("external key = %+v", ek)
	}

	// installation create
	var inst struct {
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
	adminJSON(t, &inst, "installation", "create", "--account", accountID, "--name", "Shop",
		"--callback-url", "https://shop.example/hook", "--scopes", "plugin.jobs:read,plugin.catalog:read")
	wantScopes := []string{"plugin.jobs:read", "plugin.catalog:read"}
	if !models.IsUUID(inst.InstallationID) || inst.AccountID != accountID || inst.Name != "Shop" ||
		inst.CallbackURL != "https://shop.example/hook" || !slices.Equal(inst.Scopes, wantScopes) || inst.RateLimit != 60 {
		t.Errorf("installation output = %+v", inst)
	}
	if !strings.HasPrefix(inst.APIKey, models.PluginKeyPrefix) {
		t.Errorf("api_key = %q, want prefix %s", inst.APIKey, models.PluginKeyPrefix)
	}
	if !strings.HasPrefix(inst.WebhookSecret, "whsec_") || len(inst.WebhookSecret) < len("whsec_")+32 {
		t.Errorf("webhook_secret = %q, want whsec_ and 32 base64 characters", inst.WebhookSecret)
	}
	pk, err := models.AuthenticateKey(db, models.KeyKindPlugin, inst.APIKey, time.Now())
	if err != nil {
		t.Fatalf("plugin key does not authenticate: %v", err)
	}
	if pk.ID != inst.KeyID || pk.InstallationID == nil || *pk.InstallationID != inst.InstallationID || !slices.Equal(pk.ScopeList(), wantScopes) {
		t.Errorf("plugin key = %+v", pk)
	}
	stored, err := models.GetInstallation(db, inst.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.CallbackURL != "https://shop.example/hook" || stored.RateLimitPerMin != 60 || stored.AccountID != accountID {
		t.Errorf("stored installation = %+v", stored)
	}
	// --callback-url makes the installation's first webhook endpoint, subscribed to the three job
	// events a callback URL always received.
	var endpoints []models.WebhookEndpoint
	if err := db.Where("installation_id = ?", inst.InstallationID).Find(&endpoints).Error; err != nil {
		t.Fatal(err)
	}
	if len(endpoints) != 1 || endpoints[0].URL != "https://shop.example/hook" || endpoints[0].AccountID != accountID ||
		endpoints[0].Status != models.EndpointEnabled || endpoints[0].DeletedAt != nil ||
		!slices.Equal([]string(endpoints[0].Events), []string{"job.completed", "job.failed", "job.cancelled"}) {
		t.Errorf("webhook endpoints of the installation created with --callback-url = %+v, want one of its URL with the three job events", endpoints)
	}

	// Secrets at rest: key hashes and an encrypted webhook secret, never the plaintext.
	_, _, extSecret, _ := models.ParseKey(extKey)
	_, _, pluginSecret, _ := models.ParseKey(inst.APIKey)
	whBody := strings.TrimPrefix(inst.WebhookSecret, "whsec_")
	plaintexts := []string{extKey, extSecret, inst.APIKey, pluginSecret, inst.WebhookSecret, whBody}
	var hashes []string
	if err := db.Raw("SELECT secret_hash FROM api_keys").Scan(&hashes).Error; err != nil {
		t.Fatal(err)
	}
	var encs []string
	if err := db.Raw("SELECT webhook_secret_enc FROM installations").Scan(&encs).Error; err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 2 || len(encs) != 1 {
		t.Fatalf("found %d key hashes and %d webhook secrets, want 2 and 1", len(hashes), len(encs))
	}
	for _, col := range append(hashes, encs...) {
		for _, p := range plaintexts {
			if col == "" || strings.Contains(col, p) {
				t.Errorf("stored value %q is empty or contains the plaintext secret %q", col, p)
			}
		}
	}
	box, err := secrets.NewBox(f.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(encs[0]); err != nil || got != inst.WebhookSecret {
		t.Errorf("webhook_secret_enc opens to %q, %v; want the printed secret", got, err)
	}
	// The raw database files (main file and WAL) hold none of the secrets either.
	for _, p := range []string{f.dbPath, f.dbPath + "-wal"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range plaintexts {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s contains the plaintext secret %q", filepath.Base(p), s)
			}
		}
	}

	// credits grant
	var grant map[string]any
	adminJSON(t, &grant, "credits", "grant", "--account", accountID, "--amount", "25")
	if grant["account_id"] != accountID || grant["granted"] != float64(25) || grant["credit_balance"] != float64(75) || grant["credits_reserved"] != float64(0) {
		t.Errorf("credits grant output = %v", grant)
	}
	if a, err := models.GetAccount(db, accountID); err != nil || a.CreditBalance != 75 {
		t.Errorf("balance after grant = %+v, %v; want 75", a, err)
	}
	var ledger []models.LedgerEntry
	if err := db.Where("account_id = ?", accountID).Order("created_at").Find(&ledger).Error; err != nil {
		t.Fatal(err)
	}
	var grants []int64
	for _, e := range ledger {
		if e.Kind == models.LedgerGrant {
			grants = append(grants, e.BalanceDelta)
		}
	}
	if !slices.Equal(grants, []int64{50, 25}) {
		t.Errorf("ledger grants = %v, want [50 25] (ledger %+v)", grants, ledger)
	}
	if bal, res, err := models.LedgerSums(db, accountID); err != nil || bal != 75 || res != 0 {
		t.Errorf("LedgerSums = %d, %d, %v; want 75, 0", bal, res, err)
	}

	// keys revoke by ID, and by pasting the full key
	var rev map[string]any
	adminJSON(t, &rev, "keys", "revoke", inst.KeyID)
	if rev["key_id"] != inst.KeyID || rev["revoked"] != true {
		t.Errorf("keys revoke output = %v", rev)
	}
	if _, err := models.AuthenticateKey(db, models.KeyKindPlugin, inst.APIKey, time.Now()); !errors.Is(err, models.ErrInvalidKey) {
		t.Errorf("revoked plugin key: AuthenticateKey = %v, want ErrInvalidKey", err)
	}
	adminJSON(t, &rev, "keys", "revoke", extKey)
	if rev["key_id"] != extKeyID {
		t.Errorf("revoking a pasted full key reported key_id %v, want %s", rev["key_id"], extKeyID)
	}
	if _, err := models.AuthenticateKey(db, models.KeyKindExternal, extKey, time.Now()); !errors.Is(err, models.ErrInvalidKey) {
		t.Errorf("revoked external key: AuthenticateKey = %v, want ErrInvalidKey", err)
	}
	// Revoking twice is not an error.
	adminJSON(t, &rev, "keys", "revoke", inst.KeyID)

	// keys issue with chosen scopes and expiry, then keys list (no secrets).
	var issued engine.AccountKeyIssued
	adminJSON(t, &issued, "keys", "issue", "--account", accountID, "--name", "reader", "--scopes", "content.read", "--expires", "2h")
	if !slices.Equal(issued.Scopes, []string{"content.read"}) || issued.ExpiresAt == nil ||
		issued.ExpiresAt.Before(time.Now().Add(119*time.Minute)) || !strings.HasPrefix(issued.APIKey, models.ExternalKeyPrefix) {
		t.Errorf("keys issue = %+v", issued)
	}
	k, err := models.AuthenticateKey(db, models.KeyKindExternal, issued.APIKey, time.Now())
	if err != nil || k.AccountID != accountID || k.Scopes != "content.read" {
		t.Errorf("issued key = %+v, %v", k, err)
	}
	if _, err := models.AuthenticateKey(db, models.KeyKindExternal, issued.APIKey, time.Now().Add(3*time.Hour)); !errors.Is(err, models.ErrInvalidKey) {
		t.Errorf("issued key after its expiry: %v", err)
	}
	var listed struct {
		Keys []engine.AccountKeyListed `json:"keys"`
	}
	adminJSON(t, &listed, "keys", "list", "--account", accountID)
	if len(listed.Keys) != 2 || listed.Keys[0].KeyID != issued.KeyID || listed.Keys[1].KeyID != extKeyID || listed.Keys[1].RevokedAt == nil {
		t.Errorf("keys list = %+v", listed)
	}

	// An installation without --scopes or --callback-url gets every plugin scope.
	var inst2 engine.InstallationCreated
	adminJSON(t, &inst2, "installation", "create", "--account", accountID, "--name", "  Second shop  ", "--rate-limit", "5")
	if !slices.Equal(inst2.Scopes, models.PluginScopes) || inst2.CallbackURL != "" || inst2.Name != "Second shop" || inst2.RateLimit != 5 {
		t.Errorf("default installation = %+v", inst2)
	}
	var none int64
	if err := db.Model(&models.WebhookEndpoint{}).Where("installation_id = ?", inst2.InstallationID).Count(&none).Error; err != nil || none != 0 {
		t.Errorf("an installation without --callback-url has %d webhook endpoints (%v), want none", none, err)
	}
}

func TestAdminErrors(t *testing.T) {
	newAdminFixture(t)
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	if acc.Credits != 0 {
		t.Errorf("account without --credits has %d credits", acc.Credits)
	}
	unknown := "00000000-0000-4000-8000-000000000000"

	cases := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"unknown account (installation)", []string{"installation", "create", "--account", unknown, "--name", "Shop"}, 1, "account " + unknown + " does not exist"},
		{"unknown account (credits)", []string{"credits", "grant", "--account", unknown, "--amount", "5"}, 1, "account " + unknown + " does not exist"},
		{"unknown key", []string{"keys", "revoke", "0123456789abcdef"}, 1, "key 0123456789abcdef does not exist"},
		{"keys issue: unknown account", []string{"keys", "issue", "--account", unknown}, 1, "account " + unknown},
		{"keys issue: unknown scope", []string{"keys", "issue", "--account", acc.AccountID, "--scopes", "content.read,admin"}, 2, `unknown scope "admin"`},
		{"keys issue: bad expiry", []string{"keys", "issue", "--account", acc.AccountID, "--expires", "tomorrow"}, 2, "--expires"},
		{"keys issue: no account", []string{"keys", "issue"}, 2, "--account is required"},
		{"keys list: no account", []string{"keys", "list"}, 2, "--account is required"},
		{"keys list: bad mode", []string{"keys", "list", "--account", acc.AccountID, "--mode", "sandbox"}, 2, "--mode must be one of live, test, all"},
		{"keys issue --test: unknown account", []string{"keys", "issue", "--test", "--account", unknown}, 1, "account " + unknown},
		{"keys issue --test: unknown scope", []string{"keys", "issue", "--test", "--account", acc.AccountID, "--scopes", "admin"}, 2, `unknown scope "admin"`},
		{"test-key: unknown installation", []string{"installation", "test-key", "--installation", unknown}, 1, "installation " + unknown + " does not exist"},
		{"test-key: no installation", []string{"installation", "test-key"}, 2, "--installation is required"},
		{"test-key: unknown scope", []string{"installation", "test-key", "--installation", unknown, "--scopes", "plugin.jobs:read,admin"}, 2, `unknown scope "admin"`},
		{"test-key: bad expiry", []string{"installation", "test-key", "--installation", unknown, "--expires", "-1h"}, 2, "--expires"},
		{"test-key: extra argument", []string{"installation", "test-key", "--installation", unknown, "extra"}, 2, "takes no arguments"},
		{"missing --name", []string{"account", "create", "--credits", "5"}, 2, "--name is required"},
		{"blank --name", []string{"account", "create", "--name", "   "}, 2, "--name is required"},
		{"installation missing --name", []string{"installation", "create", "--account", acc.AccountID}, 2, "--name"},
		{"installation missing --account", []string{"installation", "create", "--name", "Shop"}, 2, "--account"},
		{"unknown admin command", []string{"frobnicate", "everything"}, 2, `unknown admin command "frobnicate everything"`},
		{"one word", []string{"account"}, 2, "Usage:"},
		{"no words", nil, 2, "Usage:"},
		{"negative credits", []string{"account", "create", "--name", "Acme", "--credits", "-5"}, 2, "--credits: must be an integer from 0 to"},
		{"non-numeric credits", []string{"account", "create", "--name", "Acme", "--credits", "lots"}, 2, "credits"},
		{"unknown flag", []string{"account", "create", "--name", "Acme", "--colour", "red"}, 2, "colour"},
		{"zero grant", []string{"credits", "grant", "--account", acc.AccountID, "--amount", "0"}, 2, "positive --amount"},
		{"negative grant", []string{"credits", "grant", "--account", acc.AccountID, "--amount", "-25"}, 2, "positive --amount"},
		{"huge grant", []string{"credits", "grant", "--account", acc.AccountID, "--amount", "9223372036854775807"}, 2, "--amount: must be an integer from 1 to 1000000000000"},
		{"bad callback scheme", []string{"installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", "ftp://shop.example/hook"}, 2, "--callback-url"},
		{"callback without host", []string{"installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", "https://"}, 2, "--callback-url"},
		{"callback not a URL", []string{"installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", "shop.example/hook"}, 2, "--callback-url"},
		{"zero rate limit", []string{"installation", "create", "--account", acc.AccountID, "--name", "Shop", "--rate-limit", "0"}, 2, "--rate-limit"},
		{"revoke without ID", []string{"keys", "revoke"}, 2, "KEY_ID"},
		{"revoke two IDs", []string{"keys", "revoke", "a", "b"}, 2, "KEY_ID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"admin"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("admin %q: exit %d, want %d (stdout %q, stderr %q)", tc.args, code, tc.code, out, errOut)
			}
			if !strings.Contains(errOut, tc.contains) {
				t.Errorf("admin %q: stderr %q does not contain %q", tc.args, errOut, tc.contains)
			}
			if out != "" {
				t.Errorf("admin %q: failed command printed to stdout: %q", tc.args, out)
			}
		})
	}

	// None of the failed commands changed anything.
	db := newAdminFixtureDB(t)
	var accounts, installations, keys int64
	db.Table("accounts").Count(&accounts)
	db.Table("installations").Count(&installations)
	db.Table("api_keys").Count(&keys)
	if accounts != 1 || installations != 0 || keys != 1 {
		t.Errorf("after failed commands: %d accounts, %d installations, %d keys; want 1, 0, 1", accounts, installations, keys)
	}
	if a, err := models.GetAccount(db, acc.AccountID); err != nil || a.CreditBalance != 0 {
		t.Errorf("account after failed grants = %+v, %v", a, err)
	}
}

// newAdminFixtureDB opens the database DATABASE_URL names.
func newAdminFixtureDB(t *testing.T) *gorm.DB {
	t.Helper()
	return (&adminFixture{dbURL: os.Getenv("DATABASE_URL")}).db(t)
}

func TestAdminHelp(t *testing.T) {
	isolateEnv(t)
	for _, help := range []string{"help", "--help", "-h"} {
		code, out, errOut := runCLI(t, "admin", help)
		if code != 0 || !strings.Contains(out, "shotflow admin account create") || errOut != "" {
			t.Errorf("admin %s: exit %d, stdout %q, stderr %q", help, code, out, errOut)
		}
	}
	for args, want := range map[string]string{
		"keys":  `"keys" needs a command after it`,
		"bogus": `unknown admin command "bogus"`,
	} {
		code, _, errOut := runCLI(t, "admin", args)
		if code != 2 || strings.Count(errOut, "Usage:") != 1 || !strings.Contains(errOut, want) {
			t.Errorf("admin %s: exit %d, stderr %q; want 2 saying %s, usage once", args, code, errOut, want)
		}
	}
	code, _, errOut := runCLI(t, "admin")
	if code != 2 || strings.Count(errOut, "Usage:") != 1 || !strings.Contains(errOut, "a command is required") {
		t.Errorf("admin alone: exit %d, stderr %q; want 2 saying a command is required, usage once", code, errOut)
	}
}

func TestAdminNeedsMigratedDatabase(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	// A database file that is there but not migrated (one that is not there at all is
	// TestAdminInTheWrongPlaceCreatesNoDatabase).
	if err := os.WriteFile(filepath.Join(dir, "fresh.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dir, "fresh.db"))
	t.Setenv("DATA_DIR", dir)
	code, _, errOut := runCLI(t, "admin", "account", "create", "--name", "Acme")
	if code != 1 || !strings.Contains(errOut, "shotflow migrate") {
		t.Errorf("admin on an unmigrated database: exit %d, stderr %q; want 1 and a hint to run `shotflow migrate`", code, errOut)
	}
}

func TestAdminBadConfig(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DATABASE_URL", "mysql://x")
	code, _, errOut := runCLI(t, "admin", "account", "create", "--name", "Acme")
	if code != 1 || !strings.Contains(errOut, "DATABASE_URL") {
		t.Errorf("admin with DATABASE_URL=mysql://x: exit %d, stderr %q", code, errOut)
	}
}

// Without SECRET_KEY, admin uses DATA_DIR/secret.key (as `shotflow dev` writes it) and says what
// is missing when neither exists.
func TestAdminSecretKeyFallback(t *testing.T) {
	f := newAdminFixture(t)
	t.Setenv("SECRET_KEY", "")
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme") // needs no master key
	code, _, errOut := runCLI(t, "admin", "installation", "create", "--account", acc.AccountID, "--name", "Shop")
	if code != 1 || !strings.Contains(errOut, "SECRET_KEY") {
		t.Errorf("installation create without any master key: exit %d, stderr %q; want 1 naming SECRET_KEY", code, errOut)
	}
	master := secrets.NewMasterKey()
	if err := os.WriteFile(filepath.Join(f.dir, "secret.key"), []byte(master+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var inst engine.InstallationCreated
	adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Shop")
	raw, _ := base64.StdEncoding.DecodeString(master)
	box, err := secrets.NewBox(raw)
	if err != nil {
		t.Fatal(err)
	}
	var enc string
	if err := f.db(t).Raw("SELECT webhook_secret_enc FROM installations WHERE id = ?", inst.InstallationID).Scan(&enc).Error; err != nil {
		t.Fatal(err)
	}
	if got, err := box.Open(enc); err != nil || got != inst.WebhookSecret {
		t.Errorf("webhook secret sealed with DATA_DIR/secret.key opens to %q, %v", got, err)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	f := newAdminFixture(t) // the first migrate ran here
	code, out, errOut := runCLI(t, "migrate")
	if code != 0 {
		t.Fatalf("second migrate: exit %d, stderr %q", code, errOut)
	}
	want := "schema is up to date at version " + strconv.Itoa(models.LatestVersion())
	if !strings.Contains(out, want) {
		t.Errorf("second migrate printed %q, want %q", out, want)
	}
	db := f.db(t)
	if err := models.CheckSchema(db); err != nil {
		t.Errorf("CheckSchema after two migrations: %v", err)
	}
	var rows int64
	db.Table(models.VersionTable).Count(&rows)
	if rows != int64(models.LatestVersion())+1 { // and goose's row for version 0
		t.Errorf("%s has %d rows, want %d", models.VersionTable, rows, models.LatestVersion()+1)
	}
}

func TestMigrateBadConfig(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DATABASE_URL", "mysql://x")
	code, _, errOut := runCLI(t, "migrate")
	if code != 1 || !strings.Contains(errOut, "DATABASE_URL") {
		t.Errorf("migrate with DATABASE_URL=mysql://x: exit %d, stderr %q", code, errOut)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// api and worker refuse a schema version they do not know, older or newer, with a message that says
// what to do, before they dial Temporal.
func TestServeRefusesUnknownSchema(t *testing.T) {
	latest := models.LatestVersion()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) // DATABASE_URL is set; the database is still empty
		want  string
	}{
		{"unmigrated", func(t *testing.T) {}, "at version 0 but this binary needs " + strconv.Itoa(latest) + ": run `shotflow migrate`"},
		{"older", func(t *testing.T) {
			migrateForTest(t)
			execForTest(t, "DELETE FROM "+models.VersionTable+" WHERE version_id = ?", latest)
		}, "at version " + strconv.Itoa(latest-1) + " but this binary needs " + strconv.Itoa(latest) + ": run `shotflow migrate`"},
		{"newer", func(t *testing.T) {
			migrateForTest(t)
			execForTest(t, "INSERT INTO "+models.VersionTable+" (version_id, is_applied) VALUES (?, ?)", latest+1, true)
		}, "at version " + strconv.Itoa(latest+1) + ", newer than this binary knows (" + strconv.Itoa(latest) + "): deploy the newer binary"},
	} {
		for _, cmd := range []string{"api", "worker"} {
			t.Run(c.name+"/"+cmd, func(t *testing.T) {
				isolateEnv(t)
				dir := t.TempDir()
				key := make([]byte, 32)
				rand.Read(key)
				t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dir, "shotflow.db"))
				t.Setenv("SECRET_KEY", base64.StdEncoding.EncodeToString(key))
				t.Setenv("DATA_DIR", dir)
				t.Setenv("BLOB_URL", "file://"+filepath.Join(dir, "blobs"))
				t.Setenv("HTTP_ADDR", closedPort(t))
				t.Setenv("TEMPORAL_ADDRESS", closedPort(t)) // no Temporal: the schema check must come first
				c.setup(t)
				start := time.Now()
				code, _, errOut := runCLI(t, cmd)
				if code != 1 {
					t.Errorf("%s, schema %s: exit %d, want 1 (stderr %q)", cmd, c.name, code, errOut)
				}
				if !strings.Contains(errOut, c.want) {
					t.Errorf("%s, schema %s: stderr %q does not say %q", cmd, c.name, errOut, c.want)
				}
				if strings.Contains(errOut, "Temporal") {
					t.Errorf("%s dialled Temporal before checking the schema: %q", cmd, errOut)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("%s took %v to refuse", cmd, d)
				}
			})
		}
	}
}

// migrateForTest runs `shotflow migrate` on DATABASE_URL.
func migrateForTest(t *testing.T) {
	t.Helper()
	if code, _, errOut := runCLI(t, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut)
	}
}

// execForTest runs one statement on DATABASE_URL.
func execForTest(t *testing.T, sql string, args ...any) {
	t.Helper()
	if err := newAdminFixtureDB(t).Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// `shotflow migrate` only goes forward: it takes no direction or target version, and it refuses a
// database newer than the binary instead of rolling it back.
func TestMigrateOnlyGoesForward(t *testing.T) {
	newAdminFixture(t)
	for _, args := range [][]string{{"migrate", "down"}, {"migrate", "up-to", "3"}} {
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "migrations only go forward") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and that migrations only go forward", args, code, errOut)
		}
	}
	latest := models.LatestVersion()
	execForTest(t, "INSERT INTO "+models.VersionTable+" (version_id, is_applied) VALUES (?, ?)", latest+1, true)
	code, _, errOut := runCLI(t, "migrate")
	if code != 1 || !strings.Contains(errOut, "newer than this binary knows") {
		t.Errorf("migrate on a newer schema: exit %d, stderr %q; want 1 and that the schema is newer", code, errOut)
	}
	db := newAdminFixtureDB(t)
	var newest int
	if err := db.Raw("SELECT MAX(version_id) FROM " + models.VersionTable).Scan(&newest).Error; err != nil || newest != latest+1 {
		t.Errorf("after migrate on a newer schema the newest version is %d (%v), want %d left as it was", newest, err, latest+1)
	}
	if !db.Migrator().HasTable("job_retries") {
		t.Error("migrate on a newer schema dropped job_retries")
	}
}

// TestBadTemporalTLSSettingStopsStartUp: a client certificate that cannot be read stops the
// processes that reach Temporal at start-up, with the setting's name and the reason, before any
// of them dials.
func TestBadTemporalTLSSettingStopsStartUp(t *testing.T) {
	for _, args := range [][]string{{"api"}, {"worker"}, {"admin", "jobs", "stragglers"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			newAdminFixture(t)
			missing := filepath.Join(t.TempDir(), "client.pem")
			t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", missing)
			t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", missing)
			code, _, errOut := runCLI(t, args...)
			want := "TEMPORAL_TLS_CLIENT_CERT_PATH: open " + missing + ": no such file or directory"
			if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "connect to Temporal") {
				t.Errorf("%v with a missing client certificate: exit %d, stderr %q; want 1 and %q", args, code, errOut, want)
			}
		})
	}
}

func TestServeNeedsSecretKey(t *testing.T) {
	for _, cmd := range []string{"api", "worker"} {
		t.Run(cmd, func(t *testing.T) {
			newAdminFixture(t) // a migrated database, so only the key is missing
			t.Setenv("SECRET_KEY", "")
			t.Setenv("TEMPORAL_ADDRESS", closedPort(t))
			code, _, errOut := runCLI(t, cmd)
			if code != 1 || !strings.Contains(errOut, "SECRET_KEY") {
				t.Errorf("%s without SECRET_KEY: exit %d, stderr %q; want 1 naming SECRET_KEY", cmd, code, errOut)
			}
		})
	}
}

func TestServeBadConfig(t *testing.T) {
	isolateEnv(t)
	t.Setenv("LOG_LEVEL", "loud")
	code, _, errOut := runCLI(t, "api")
	if code != 1 || !strings.Contains(errOut, "LOG_LEVEL") {
		t.Errorf("api with LOG_LEVEL=loud: exit %d, stderr %q", code, errOut)
	}
}

func TestTopLevelCommands(t *testing.T) {
	isolateEnv(t)
	code, out, errOut := runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	if out != "" {
		t.Errorf("unknown command printed to stdout: %q", out)
	}
	code, _, errOut = runCLI(t)
	if code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut)
	}
	for _, h := range []string{"help", "-h", "--help"} {
		code, out, errOut = runCLI(t, h)
		if code != 0 || !strings.Contains(out, "shotflow dev") || !strings.Contains(out, "shotflow migrate") || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", h, code, out, errOut)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	isolateEnv(t)
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	if code, _, errOut := runCLI(t, "healthcheck", srv.URL+"/readyz"); code != 0 {
		t.Errorf("healthcheck against a ready server: exit %d, stderr %q", code, errOut)
	}
	status = http.StatusServiceUnavailable
	if code, _, errOut := runCLI(t, "healthcheck", srv.URL+"/readyz"); code != 1 || !strings.Contains(errOut, "503") {
		t.Errorf("healthcheck against an unready server: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "healthcheck", "http://"+closedPort(t)+"/readyz"); code != 1 {
		t.Errorf("healthcheck against nothing: exit %d, want 1", code)
	}
}

// `admin <command> --help` prints the usage and exits 0 without opening anything; `admin help`
// points support staff at docs/operations.md, where their section is.
func TestAdminCommandHelp(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DATABASE_URL", "mysql://nothing-is-opened")
	for _, flag := range []string{"--help", "-h", "-help"} {
		code, out, errOut := runCLI(t, "admin", "jobs", "list", flag)
		if code != 0 || !strings.Contains(out, "shotflow admin jobs list --status STATUS") || errOut != "" {
			t.Errorf("admin jobs list %s: exit %d, stdout %q, stderr %q", flag, code, out, errOut)
		}
	}
	if _, out, _ := runCLI(t, "admin", "help"); !strings.Contains(out, `docs/operations.md, "For support staff"`) {
		t.Errorf("admin help does not point at docs/operations.md: %q", out)
	}
}

// On the embedded defaults (no DATABASE_URL: the database `make run` keeps under .data/), admin
// follows `shotflow dev` and lets an installation's callback URL reach this machine; a
// WEBHOOK_ALLOW_PRIVATE_NETWORKS that is set still decides.
func TestAdminOnTheDevDefaultsAllowsALocalCallback(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	t.Chdir(dir)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	if err := os.MkdirAll(".data", 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut)
	}
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	var inst engine.InstallationCreated
	adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Dev shop", "--callback-url", "http://127.0.0.1:18490/hooks")
	if inst.CallbackURL != "http://127.0.0.1:18490/hooks" {
		t.Errorf("callback_url = %q", inst.CallbackURL)
	}
	t.Setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "false")
	if code, _, errOut := runCLI(t, "admin", "installation", "create", "--account", acc.AccountID, "--name", "Shop",
		"--callback-url", "http://127.0.0.1:18490/hooks"); code != 2 || !strings.Contains(errOut, "not allowed") {
		t.Errorf("with WEBHOOK_ALLOW_PRIVATE_NETWORKS=false: exit %d, stderr %q; want the refusal", code, errOut)
	}
}
