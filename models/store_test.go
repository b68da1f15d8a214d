package models_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

func TestMigrationsAreVersionedAndIdempotent(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		if err := models.CheckSchema(db); err != nil {
			t.Fatalf("fresh migrated database: %v", err)
		}
		applied, err := models.Migrate(t.Context(), db)
		if err != nil || len(applied) != 0 {
			t.Fatalf("second migrate applied %v, err %v; want nothing", applied, err)
		}
		for _, table := range []string{"accounts", "installations", "api_keys", "products", "assets", "packshots", "orders", "jobs", "credit_ledger"} {
			if !db.Migrator().HasTable(table) {
				t.Errorf("table %s missing", table)
			}
		}
		// A schema newer than the binary is refused, as is an older one.
		testdb.MustExec(t, db, "INSERT INTO "+models.VersionTable+" (version_id, is_applied) VALUES (?, ?)", models.LatestVersion()+1, true)
		var mismatch models.ErrSchemaMismatch
		if err := models.CheckSchema(db); !errors.As(err, &mismatch) || mismatch.Database != models.LatestVersion()+1 {
			t.Fatalf("CheckSchema on a newer schema = %v", err)
		}
		// Migrations only go forward: Migrate refuses the newer schema and leaves it as it is.
		if applied, err := models.Migrate(t.Context(), db); !errors.As(err, &mismatch) || mismatch.Database != models.LatestVersion()+1 || len(applied) != 0 {
			t.Fatalf("Migrate on a newer schema applied %v, err %v; want nothing and a mismatch", applied, err)
		}
		var rows int64
		db.Table(models.VersionTable).Count(&rows)
		if rows != int64(models.LatestVersion())+2 || !db.Migrator().HasTable("accounts") {
			t.Fatalf("Migrate on a newer schema changed it: %d version rows, want %d", rows, models.LatestVersion()+2)
		}
	})
}

func TestCheckSchemaRefusesEmptyDatabase(t *testing.T) {
	t.Parallel()
	db, err := models.Open(testdb.SQLiteURL(t), models.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mismatch models.ErrSchemaMismatch
	if err := models.CheckSchema(db); !errors.As(err, &mismatch) || mismatch.Database != 0 {
		t.Fatalf("CheckSchema on an empty database = %v, want mismatch at 0", err)
	}
}

// newOrder places an order of n jobs of the account, each costing cost (models.PlaceOrder).
func newOrder(t *testing.T, db *gorm.DB, accountID string, n int, cost int64) (*models.Order, []models.Job, error) {
	t.Helper()
	order, jobs := orderOf(accountID, n, cost, time.Now().UTC())
	return order, jobs, models.PlaceOrder(db, order, jobs, nil)
}

// assertLedgerMatches checks that the account's balance and reserved amount equal its ledger sums.
func assertLedgerMatches(t *testing.T, db *gorm.DB, accountID string) *models.Account {
	t.Helper()
	acc, err := models.GetAccount(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	b, r, err := models.LedgerSums(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if b != acc.CreditBalance || r != acc.CreditsReserved {
		t.Fatalf("account balance/reserved = %d/%d, ledger sums = %d/%d", acc.CreditBalance, acc.CreditsReserved, b, r)
	}
	return acc
}

func TestCreditsReserveConsumeRelease(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, err := models.CreateAccount(db, "acme", 10)
		if err != nil {
			t.Fatal(err)
		}
		order, jobs, err := newOrder(t, db, acc.ID, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		got := assertLedgerMatches(t, db, acc.ID)
		if got.CreditBalance != 4 || got.CreditsReserved != 6 {
			t.Fatalf("after reserve: %d available / %d reserved, want 4/6", got.CreditBalance, got.CreditsReserved)
		}
		// Short balance: nothing is created.
		if _, _, err := newOrder(t, db, acc.ID, 3, 2); !errors.Is(err, models.ErrInsufficientCredits) {
			t.Fatalf("order over balance: err = %v, want ErrInsufficientCredits", err)
		}
		var orders int64
		db.Model(&models.Order{}).Where("account_id = ?", acc.ID).Count(&orders)
		if orders != 1 {
			t.Fatalf("%d orders after refused reservation, want 1", orders)
		}

		out := []models.Asset{{ID: models.OutputAssetID(jobs[0].ID, 1, 0), AccountID: acc.ID, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: "image/png", BlobKey: "k", JobID: &jobs[0].ID, CreatedAt: time.Now(), UpdatedAt: time.Now()}}
		for i := range 2 { // a replayed activity settles once, and says the first call completed the job
			if completed, err := models.CompleteJob(db, jobs[0].ID, 1, out); err != nil || completed != (i == 0) {
				t.Fatalf("CompleteJob call %d = %v, %v; want %v", i+1, completed, err, i == 0)
			}
		}
		for range 2 {
			if _, err := models.EndJob(db, jobs[1].ID, 1, status.JobFailed, "CONTENT_POLICY", "hint", "raw"); err != nil {
				t.Fatal(err)
			}
		}
		// A job that already completed cannot then be released.
		if ended, err := models.EndJob(db, jobs[0].ID, 1, status.JobCancelled, "", "", ""); err != nil || ended {
			t.Fatalf("EndJob on a completed job = %v, %v; want no change", ended, err)
		}
		if ended, err := models.EndJob(db, jobs[2].ID, 1, status.JobExpired, "", "", ""); err != nil || !ended {
			t.Fatalf("expire: %v %v", ended, err)
		}
		got = assertLedgerMatches(t, db, acc.ID)
		if got.CreditBalance != 8 || got.CreditsReserved != 0 {
			t.Fatalf("after settlement: %d available / %d reserved, want 8/0", got.CreditBalance, got.CreditsReserved)
		}
		var o models.Order
		db.Take(&o, "id = ?", order.ID)
		if o.CreditsReserved != o.CreditsConsumed+o.CreditsReleased || o.CreditsConsumed != 2 || o.CreditsReleased != 4 {
			t.Fatalf("order credits reserved/consumed/released = %d/%d/%d", o.CreditsReserved, o.CreditsConsumed, o.CreditsReleased)
		}
		if o.Status != status.OrderCompleted || o.JobsCompleted != 1 || o.JobsFailed != 1 || o.JobsExpired != 1 || o.CompletedAt == nil {
			t.Fatalf("order = %+v, want completed with 1/1/1", o)
		}
		outs, err := models.JobOutputs(db, jobs[0].ID)
		if err != nil || len(outs[jobs[0].ID]) != 1 {
			t.Fatalf("outputs = %v, %v", outs, err)
		}
	})
}

func TestOrderStatusRule(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, _ := models.CreateAccount(db, "acme", 100)
		cancelled, cj, _ := newOrder(t, db, acc.ID, 2, 1)
		failed, fj, _ := newOrder(t, db, acc.ID, 2, 1)
		for _, j := range cj {
			models.EndJob(db, j.ID, 1, status.JobCancelled, "", "", "")
		}
		models.EndJob(db, fj[0].ID, 1, status.JobCancelled, "", "", "")
		models.EndJob(db, fj[1].ID, 1, status.JobFailed, "INTERNAL_BUG", "h", "d")
		for id, want := range map[string]string{cancelled.ID: status.OrderCancelled, failed.ID: status.OrderFailed} {
			var o models.Order
			db.Take(&o, "id = ?", id)
			if o.Status != want {
				t.Errorf("order status = %s, want %s", o.Status, want)
			}
		}
		assertLedgerMatches(t, db, acc.ID)
	})
}

// Orders placed at once against one balance never overdraw it: on PostgreSQL each is one statement
// in autocommit, its reservation conditional on the balance; on SQLite a transaction with a conditional
// reservation. The balance covers three of the eight.
func TestConcurrentReservationsNeverOverdraw(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, _ := models.CreateAccount(db, "acme", 10)
		var ok, refused atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := newOrder(t, db, acc.ID, 1, 3)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, models.ErrInsufficientCredits):
					refused.Add(1)
				default:
					t.Errorf("reserve: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 3 || refused.Load() != 5 {
			t.Fatalf("%d accepted, %d refused; want 3 and 5", ok.Load(), refused.Load())
		}
		if got := assertLedgerMatches(t, db, acc.ID); got.CreditBalance != 1 || got.CreditsReserved != 9 {
			t.Fatalf("balance = %d, reserved = %d, want 1 and 9", got.CreditBalance, got.CreditsReserved)
		}
		var orders int64
		if err := db.Model(&models.Order{}).Where("account_id = ?", acc.ID).Count(&orders).Error; err != nil || orders != 3 {
			t.Fatalf("%d orders (%v), want 3: a refused one left rows", orders, err)
		}
	})
}

// newShop creates an account and an installation of it (with its plugin key and the webhook
// secret whsec_x, sealed by the returned box).
func newShop(t *testing.T, db *gorm.DB) (*secrets.Box, *models.Account, *models.CreatedInstallation) {
	t.Helper()
	box := testBox(t)
	acc, err := models.CreateAccount(db, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop", RateLimitPerMin: 60}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	return box, acc, inst
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		box, acc, inst := newShop(t, db)
		var stored models.APIKey
		db.Take(&stored, "id = ?", inst.APIKey.Key.ID)
		if stored.SecretHash == "" || len(inst.APIKey.Secret) < 40 || stored.SecretHash == inst.APIKey.Secret {
			t.Fatalf("key stored as %q", stored.SecretHash)
		}
		if plain, err := box.Open(inst.Installation.WebhookSecretEnc); err != nil || plain != "whsec_x" {
			t.Fatalf("webhook secret round trip: %q %v", plain, err)
		}
		now := time.Now()
		k, err := models.AuthenticateKey(db, models.KeyKindPlugin, inst.APIKey.Secret, now)
		if err != nil || *k.InstallationID != inst.Installation.ID {
			t.Fatalf("authenticate: %v", err)
		}
		for _, bad := range []string{"", "pk_live_", inst.APIKey.Secret + "x", "mk_live_" + inst.APIKey.Secret[8:], "garbage"} {
			if _, err := models.AuthenticateKey(db, models.KeyKindPlugin, bad, now); !errors.Is(err, models.ErrInvalidKey) {
				t.Errorf("key %q: err = %v, want ErrInvalidKey", bad, err)
			}
		}
		past := now.Add(-time.Minute)
		ext, _ := models.IssueKey(db, models.KeyKindExternal, acc.ID, nil, "ci", models.ExternalScopes, &past)
		if _, err := models.AuthenticateKey(db, models.KeyKindExternal, ext.Secret, now); !errors.Is(err, models.ErrInvalidKey) {
			t.Errorf("expired key accepted: %v", err)
		}
		if err := models.RevokeKey(db, inst.APIKey.Key.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := models.AuthenticateKey(db, models.KeyKindPlugin, inst.APIKey.Secret, now); !errors.Is(err, models.ErrInvalidKey) {
			t.Errorf("revoked key accepted: %v", err)
		}
		if err := models.RevokeKey(db, "0000000000000000"); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("revoke unknown key: %v", err)
		}
	})
}

func TestAuthenticateKeyWithInstallation(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		_, acc, inst := newShop(t, db)
		now := time.Now()
		// The key, whole, and what authentication needs of its installation, from one query.
		k, got, err := models.AuthenticateKeyWithInstallation(db, models.KeyKindPlugin, inst.APIKey.Secret, now)
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		want, err := models.GetInstallation(db, inst.Installation.ID)
		if err != nil {
			t.Fatal(err)
		}
		var alone models.APIKey // the key's row as gorm reads it
		if err := db.Take(&alone, "id = ?", inst.APIKey.Key.ID).Error; err != nil {
			t.Fatal(err)
		}
		summary := models.KeyInstallation{ID: want.ID, AccountID: want.AccountID, Name: want.Name, Status: want.Status,
			RateLimitPerMin: want.RateLimitPerMin}
		if got == nil || *got != summary || !sameKey(*k, alone) {
			t.Fatalf("authenticate = %+v, %+v; want %+v, %+v", k, got, alone, want)
		}
		// A key bound to no installation comes without one.
		unbound, _ := models.IssueKey(db, models.KeyKindPlugin, acc.ID, nil, "unbound", models.PluginScopes, nil)
		if k, got, err := models.AuthenticateKeyWithInstallation(db, models.KeyKindPlugin, unbound.Secret, now); err != nil || k.InstallationID != nil || got != nil {
			t.Fatalf("unbound key = %+v, %+v, %v; want the key alone", k, got, err)
		}
		// Refusals are AuthenticateKey's.
		past := now.Add(-time.Minute)
		expired, _ := models.IssueKey(db, models.KeyKindPlugin, acc.ID, &inst.Installation.ID, "old", models.PluginScopes, &past)
		ext, _ := models.IssueKey(db, models.KeyKindExternal, acc.ID, nil, "ci", models.ExternalScopes, nil)
		for _, bad := range []string{"", "pk_live_", inst.APIKey.Secret + "x", "mk_live_" + inst.APIKey.Secret[8:], "garbage",
			expired.Secret, ext.Secret, "pk_live_" + ext.Secret[8:], "pk_live_0000000000000000.secret"} {
			if _, _, err := models.AuthenticateKeyWithInstallation(db, models.KeyKindPlugin, bad, now); !errors.Is(err, models.ErrInvalidKey) {
				t.Errorf("key %q: err = %v, want ErrInvalidKey", bad, err)
			}
		}
		if err := models.RevokeKey(db, inst.APIKey.Key.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := models.AuthenticateKeyWithInstallation(db, models.KeyKindPlugin, inst.APIKey.Secret, now); !errors.Is(err, models.ErrInvalidKey) {
			t.Errorf("revoked key accepted: %v", err)
		}
	})
}

// sameKey compares keys read from the database, times as instants.
func sameKey(a, b models.APIKey) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) || a.InstallationID == nil || b.InstallationID == nil || *a.InstallationID != *b.InstallationID {
		return false
	}
	a.CreatedAt, a.InstallationID = b.CreatedAt, b.InstallationID
	return a == b
}

func TestCatalogIsConsistent(t *testing.T) {
	t.Parallel()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := c.Model("local/studio-v1")
	if !ok || !m.Serves(jobtype.PhotoShoot) || !m.SupportsAspectRatio(c.DefaultAspectRatio()) {
		t.Fatalf("local/studio-v1 = %+v", m)
	}
}
