package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
)

// A stray word among the flags of a command that takes no positional argument would stop Go's
// flag parsing there, and every flag after it would keep its default: such a command is a usage
// mistake (exit 2) that changes nothing.
func TestAdminRefusesAWordAmongTheFlags(t *testing.T) {
	f := newAdminFixture(t)
	db := f.db(t)
	count := func(table string) int64 {
		var n int64
		if err := db.Table(table).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}

	// account create: "--name Acme oops --credits 100" creates an account with 0 credits.
	accountsBefore := count("accounts")
	code, out, errOut := runCLI(t, "admin", "account", "create", "--name", "Acme", "oops", "--credits", "100")
	if code != 2 {
		t.Errorf("account create with a stray word before --credits: exit %d (stdout %q, stderr %q); want 2 and nothing created", code, out, errOut)
	}
	if n := count("accounts"); n != accountsBefore {
		t.Errorf("account create with a stray word created %d account(s) (stdout %q)", n-accountsBefore, out)
	}

	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Real", "--credits", "10")
	accountID := acc["account_id"].(string)

	// keys issue: "--account A x --test" issues a LIVE key (mk_live_…) instead of a test key.
	code, out, errOut = runCLI(t, "admin", "keys", "issue", "--account", accountID, "x", "--test")
	if code != 2 {
		t.Errorf("keys issue with a stray word before --test: exit %d, stdout %q, stderr %q; want 2 and no key", code, out, errOut)
	}
	if strings.Contains(out, "mk_live_") {
		t.Errorf("keys issue ... x --test issued a live key: %s", out)
	}

	// spend-limit clear: "--account A stray" clears the limit anyway (harmless here, but the word
	// might have been meant as a flag); spend-limit set ignores --alert-at-percent after a word.
	code, out, errOut = runCLI(t, "admin", "spend-limit", "set", "--account", accountID, "--monthly-credits", "50", "x", "--alert-at-percent", "10")
	if code != 2 {
		t.Errorf("spend-limit set with a stray word before --alert-at-percent: exit %d, stdout %q, stderr %q; want 2", code, out, errOut)
	}

	// installation create: "--account A --name N x --test-key" creates an installation without its test key.
	instBefore := count("installations")
	code, out, errOut = runCLI(t, "admin", "installation", "create", "--account", accountID, "--name", "Shop", "x", "--test-key")
	if code != 2 {
		t.Errorf("installation create with a stray word before --test-key: exit %d, stdout %q, stderr %q; want 2", code, out, errOut)
	}
	if n := count("installations"); n != instBefore {
		t.Errorf("installation create with a stray word created %d installation(s)", n-instBefore)
	}

	// usage: "--account A x --group-by key" would answer grouped by day.
	code, out, errOut = runCLI(t, "admin", "usage", "--account", accountID, "x", "--group-by", "key")
	if code != 2 || out != "" {
		t.Errorf("usage with a stray word before --group-by: exit %d, stdout %q, stderr %q; want 2 and no report", code, out, errOut)
	}
}

// A test twin's account ID (what `keys list` prints as test_account_id) is no account for a live
// key or installation: such a key would run live jobs on test credits, which the twin's test key
// sets at will. keys issue and installation create answer "does not exist" (exit 1), as keys
// issue --test does.
func TestAdminRefusesATestTwinAsALiveAccount(t *testing.T) {
	f := newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme", "--credits", "10")
	accountID := acc["account_id"].(string)
	var test map[string]any
	adminJSON(t, &test, "keys", "issue", "--account", accountID, "--test")
	var listed map[string]any
	adminJSON(t, &listed, "keys", "list", "--account", accountID)
	twin, _ := listed["test_account_id"].(string)
	if twin == "" || twin == accountID {
		t.Fatalf("keys list printed no test_account_id: %v", listed)
	}

	code, out, errOut := runCLI(t, "admin", "keys", "issue", "--account", twin)
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("keys issue --account <test twin>: exit %d, stdout %q, stderr %q; want exit 1 \"does not exist\" like keys issue --test", code, out, errOut)
	}
	var liveOnTwin int64
	if err := f.db(t).Raw("SELECT COUNT(*) FROM api_keys WHERE account_id = ? AND test_mode = ?", twin, false).Scan(&liveOnTwin).Error; err != nil {
		t.Fatal(err)
	}
	if liveOnTwin != 0 {
		t.Errorf("the test twin %s holds %d live key(s)", twin, liveOnTwin)
	}

	code, out, errOut = runCLI(t, "admin", "installation", "create", "--account", twin, "--name", "Shop")
	if code != 1 {
		t.Errorf("installation create --account <test twin>: exit %d, stdout %q, stderr %q; want exit 1", code, out, errOut)
	}
}

// `admin installation create --scopes` refuses an unknown scope (exit 2, creating nothing), as
// `installation test-key --scopes` and `keys issue --scopes` do.
func TestAdminInstallationCreateRefusesAnUnknownScope(t *testing.T) {
	f := newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	accountID := acc["account_id"].(string)
	code, out, errOut := runCLI(t, "admin", "installation", "create", "--account", accountID, "--name", "Shop", "--scopes", "plugin.jobs:read,bogus")
	if code != 2 || !strings.Contains(errOut, "bogus") {
		t.Errorf("installation create --scopes plugin.jobs:read,bogus: exit %d, stdout %q, stderr %q; want 2 naming the unknown scope", code, out, errOut)
	}
	var n int64
	if err := f.db(t).Raw("SELECT COUNT(*) FROM installations WHERE account_id = ?", accountID).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("installation create with an unknown scope created %d installation(s)", n)
	}
}

// docs/operations.md: "a failed command, or one naming a record that does not exist, exits 1":
// keys list of an unknown account too.
func TestAdminKeysListOfAnUnknownAccount(t *testing.T) {
	newAdminFixture(t)
	unknown := "00000000-0000-4000-8000-000000000000"
	code, out, errOut := runCLI(t, "admin", "keys", "list", "--account", unknown)
	if code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("keys list --account <unknown>: exit %d, stdout %q, stderr %q; want 1 \"does not exist\"", code, out, errOut)
	}
}

// `--expires` refuses an RFC 3339 time in the past, as it does a duration that is not positive:
// the key would be expired from the start.
func TestAdminKeyExpiresInThePastIsRefused(t *testing.T) {
	f := newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	accountID := acc["account_id"].(string)
	before := countKeys(t, f, accountID)
	code, out, errOut := runCLI(t, "admin", "keys", "issue", "--account", accountID, "--expires", "2020-01-01T00:00:00Z")
	if code != 2 {
		t.Errorf("keys issue --expires 2020-01-01T00:00:00Z: exit %d, stdout %q, stderr %q; want 2 (a past expiry, like -5h)", code, out, errOut)
	}
	if n := countKeys(t, f, accountID); n != before {
		t.Errorf("keys issue with a past --expires stored %d already-expired key(s)", n-before)
	}
}

func countKeys(t *testing.T, f *adminFixture, accountID string) int64 {
	t.Helper()
	var n int64
	if err := f.db(t).Raw("SELECT COUNT(*) FROM api_keys WHERE account_id = ?", accountID).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// account create --credits takes 0 to 10^12, as a grant does: beyond, a usage mistake naming the
// flag, so no account can hold a balance its next grant would overflow.
func TestAdminAccountCreditsAreBounded(t *testing.T) {
	newAdminFixture(t)
	for _, credits := range []string{"9223372036854775807", "1000000000001", "-1"} {
		code, out, errOut := runCLI(t, "admin", "account", "create", "--name", "Big", "--credits", credits)
		if code != 2 || !strings.Contains(errOut, "--credits") {
			t.Errorf("account create --credits %s: exit %d, stdout %q, stderr %q; want 2 naming --credits", credits, code, out, errOut)
		}
	}
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Most", "--credits", "1000000000000")
	adminJSON(t, &acc, "credits", "grant", "--account", acc["account_id"].(string), "--amount", "5")
}

// docs/operations.md: "a usage mistake (a flag missing, or a value the command refuses, named by
// its flag) exits 2": spend-limit set's refused values too.
func TestAdminSpendLimitRefusalsNameTheFlag(t *testing.T) {
	newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	accountID := acc["account_id"].(string)
	for _, args := range [][]string{
		{"--monthly-credits", "0"},
		{"--monthly-credits", "5", "--alert-at-percent", "101"},
	} {
		code, _, errOut := runCLI(t, append([]string{"admin", "spend-limit", "set", "--account", accountID}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--") {
			t.Errorf("spend-limit set %v: exit %d, stderr %q; want 2 naming the flag", args, code, errOut)
		}
	}
}

// `shotflow dev` keeps its database in DATA_DIR, and `admin` with the same DATA_DIR (and no
// DATABASE_URL) opens that database and secret key, never an empty .data/shotflow.db in the
// working directory.
func TestAdminOpensTheDatabaseUnderDataDir(t *testing.T) {
	isolateEnv(t)
	dataDir := t.TempDir()
	// The dev layout: DATA_DIR/shotflow.db, migrated, and DATA_DIR/secret.key.
	t.Setenv("DATA_DIR", dataDir)
	t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dataDir, "shotflow.db"))
	if code, _, errOut := runCLI(t, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "secret.key"), []byte(secrets.NewMasterKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", "") // the embedded defaults, as under `shotflow dev`
	cwd := t.TempDir()
	t.Chdir(cwd)

	code, out, errOut := runCLI(t, "admin", "account", "create", "--name", "Acme")
	if code != 0 {
		t.Errorf("admin account create with DATA_DIR=%s (the dev database there): exit %d, stderr %q; want it to use $DATA_DIR/shotflow.db", dataDir, code, errOut)
	} else if !strings.Contains(out, "account_id") {
		t.Errorf("admin account create printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(cwd, ".data", "shotflow.db")); err == nil {
		t.Errorf("admin created a stray database %s in the working directory", filepath.Join(cwd, ".data", "shotflow.db"))
	}
}

// IDs copied in capitals (a client's e-mail, a spreadsheet) name the same records: the positional
// ID of a command and the --account, --installation and --endpoint flags are read as the store
// keeps them, as the API's path parameters are.
func TestAdminReadsIDsInAnyCase(t *testing.T) {
	f := newSupportFixture(t)
	var order map[string]any
	adminJSON(t, &order, "orders", "show", strings.ToUpper(f.orderID))
	if o, _ := order["order"].(map[string]any); o["order_id"] != f.orderID {
		t.Errorf("orders show <ID in capitals> = %v", order["order"])
	}
	var keys map[string]any
	adminJSON(t, &keys, "keys", "list", "--account", strings.ToUpper(f.accountID))
	if keys["account_id"] != f.accountID {
		t.Errorf("keys list --account <ID in capitals> = %v", keys)
	}
	var limit map[string]any
	adminJSON(t, &limit, "spend-limit", "show", "--installation", strings.ToUpper(f.installationID))
	var list map[string]any
	adminJSON(t, &list, "jobs", "list", "--status", "failed", "--installation", strings.ToUpper(f.installationID))
	if jobs, _ := list["jobs"].([]any); len(jobs) != 1 {
		t.Errorf("jobs list --installation <ID in capitals> = %v; want its failed job", list)
	}
}

// An admin command run where no dev database is (the wrong directory, a DATA_DIR with a typo)
// creates nothing on disk and says that no database was found at the path (exit 1), instead of
// making an empty shotflow.db and advising to migrate it.
func TestAdminInTheWrongPlaceCreatesNoDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-the-dev-data-dir")
	t.Setenv("DATA_DIR", dir)
	t.Setenv("DATABASE_URL", "")
	t.Setenv("BLOB_URL", "")
	t.Setenv("SECRET_KEY", "")
	code, out, errOut := runCLI(t, "admin", "jobs", "list", "--status", "failed")
	if _, err := os.Stat(filepath.Join(dir, "shotflow.db")); err == nil {
		t.Errorf("admin jobs list (exit %d) created %s/shotflow.db", code, dir)
	}
	if strings.Contains(errOut, "run `shotflow migrate` first") {
		t.Errorf("admin jobs list in the wrong place says %q (stdout %q): migrating there would set up a stray empty database", strings.TrimSpace(errOut), out)
	}
	if code != 1 || !strings.Contains(errOut, "no database at "+filepath.Join(dir, "shotflow.db")) {
		t.Errorf("admin jobs list in the wrong place: exit %d, stderr %q; want 1 naming the path", code, errOut)
	}
}

// installation create --test-key makes the installation and then, in a second transaction, its
// test key. When that second step fails, the installation stands with a plugin key and a webhook
// secret that are shown only once, and no command issues them again: the command still prints
// them (and exits 1 saying the test key was not made).
func TestAdminInstallationCreateShowsItsSecretsWhenItsTestKeyFails(t *testing.T) {
	f := newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	accountID := acc["account_id"].(string)
	db := f.db(t)
	if err := db.Exec(`CREATE TRIGGER refuse_test_keys BEFORE INSERT ON api_keys WHEN NEW.test_mode
		BEGIN SELECT RAISE(ABORT, 'test keys refused by the test'); END`).Error; err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "admin", "installation", "create", "--account", accountID, "--name", "Shop", "--test-key")
	if code != 1 || !strings.Contains(errOut, "test keys refused by the test") || !strings.Contains(errOut, "installation test-key") {
		t.Fatalf("installation create --test-key whose test key fails: exit %d, stdout %q, stderr %q; want 1 saying so", code, out, errOut)
	}
	var created struct {
		InstallationID string `json:"installation_id"`
		APIKey         string `json:"api_key"`
		WebhookSecret  string `json:"webhook_secret"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.APIKey, "pk_live_") ||
		!strings.HasPrefix(created.WebhookSecret, "whsec_") {
		t.Fatalf("stdout %q (%v); want the installation with its plugin key and webhook secret", out, err)
	}
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM installations WHERE id = ? AND account_id = ?", created.InstallationID, accountID).Scan(&n).Error; err != nil || n != 1 {
		t.Fatalf("installation %s: %d rows, %v", created.InstallationID, n, err)
	}
	if _, err := models.AuthenticateKey(db, models.KeyKindPlugin, created.APIKey, time.Now()); err != nil {
		t.Fatalf("the printed plugin key: %v", err)
	}
}
