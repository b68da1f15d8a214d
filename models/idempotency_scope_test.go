package models_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A key is an installation's or an account's (0019): the same key in an account, in another
// account and in an installation of the account are three independent keys; each scope's unique
// index lets exactly one of many concurrent first requests claim it; a row names exactly one
// scope.
func TestIdempotencyKeyScopes(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		accountID, inst := idemInstallation(t, db)
		otherAccount, _ := idemInstallation(t, db)
		account := models.AccountKeyScope(accountID)
		lease := time.Minute

		const n = 20
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		claims, held := 0, 0
		var firstErr error
		for range n {
			wg.Go(func() {
				<-start
				row, claimed, err := models.ClaimScopedIdempotencyKey(db, account, "k", "h", lease, 0)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					firstErr = err
				case claimed:
					claims++
				case row.Status == models.IdempotencyInProgress && row.AccountID != nil && *row.AccountID == accountID:
					held++
				}
			})
		}
		close(start)
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
		if claims != 1 || held != n-1 {
			t.Fatalf("%d claims and %d held, want 1 and %d", claims, held, n-1)
		}

		// The same key elsewhere is another key.
		for name, scope := range map[string]models.IdempotencyScope{
			"another account":                models.AccountKeyScope(otherAccount),
			"an installation of the account": models.InstallationKeyScope(inst),
		} {
			row, claimed, err := models.ClaimScopedIdempotencyKey(db, scope, "k", "other-hash", lease, 0)
			if err != nil || !claimed || row.RequestHash != "other-hash" {
				t.Fatalf("%s: claim of k = %+v, %v, %v", name, row, claimed, err)
			}
		}
		row, err := models.GetScopedIdempotencyKey(db, account, "k")
		if err != nil || row.InstallationID != nil || row.AccountID == nil || *row.AccountID != accountID || row.RequestHash != "h" {
			t.Fatalf("the account's row = %+v, %v", row, err)
		}
		if inRow, err := models.GetIdempotencyKey(db, inst, "k"); err != nil || inRow.AccountID != nil || inRow.ID == row.ID {
			t.Fatalf("the installation's row = %+v, %v", inRow, err)
		}

		// A scope names one tenant, and so does every row.
		for _, bad := range []models.IdempotencyScope{{}, {InstallationID: inst, AccountID: accountID}} {
			if _, _, err := models.ClaimScopedIdempotencyKey(db, bad, "x", "h", lease, 0); err == nil {
				t.Errorf("claim in scope %+v: no error", bad)
			}
		}
		now := time.Now().UTC()
		for _, owners := range [][2]*string{{nil, nil}, {&inst, &accountID}} {
			raw := models.IdempotencyKey{ID: models.NewID(), InstallationID: owners[0], AccountID: owners[1], Key: "raw",
				RequestHash: "h", Status: models.IdempotencyInProgress, ClaimToken: "t", CreatedAt: now, UpdatedAt: now, ExpiresAt: now}
			if err := db.Create(&raw).Error; err == nil {
				t.Errorf("a row with installation %v and account %v was inserted", owners[0], owners[1])
			}
		}
	})
}

// A claim may ask for another replay time than 24 hours: the answer recorded under it expires
// that long after it is recorded, and the key is then claimed afresh.
func TestIdempotencyKeyTTL(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		accountID, _ := idemInstallation(t, db)
		scope := models.AccountKeyScope(accountID)
		claim, claimed, err := models.ClaimScopedIdempotencyKey(db, scope, "k", "h", time.Minute, time.Hour)
		if err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		if err := models.RecordIdempotencyAnswer(db, claim, "", models.IdempotencyAnswer{Status: 200, Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		row, err := models.GetScopedIdempotencyKey(db, scope, "k")
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(row.ExpiresAt); left < 59*time.Minute || left > time.Hour {
			t.Fatalf("the answer expires in %v, want an hour", left)
		}
		testdb.MustExec(t, db, "UPDATE idempotency_keys SET expires_at = ? WHERE id = ?", time.Now().UTC().Add(-time.Second), row.ID)
		again, claimed, err := models.ClaimScopedIdempotencyKey(db, scope, "k", "h", time.Minute, 0)
		if err != nil || !claimed || again.ID != row.ID {
			t.Fatalf("claim after expiry = %+v, %v, %v", again, claimed, err)
		}
		if left := time.Until(again.ExpiresAt); left < 23*time.Hour {
			t.Fatalf("a claim without a TTL expires in %v, want 24 hours", left)
		}
	})
}

// A database from before 0019 keeps its installations' keys as they were, and then takes
// accounts' keys beside them.
func TestMigrationScopesIdempotencyKeysByInstallationOrAccount(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 17)
		t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Old', ?, ?)", t0, t0)
		testdb.MustExec(t, db, `INSERT INTO installations (id, account_id, name, webhook_secret_enc, created_at, updated_at)
				VALUES ('inst', 'acc', 'shop', 'x', ?, ?)`, t0, t0)
		testdb.MustExec(t, db, `INSERT INTO orders (id, account_id, installation_id, api, job_type, session_config, status, jobs_total, created_at, updated_at)
				VALUES ('order-1', 'acc', 'inst', 'plugin', 'photo_shoot', '{}', 'completed', 1, ?, ?)`, t0, t0)
		expires := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		testdb.MustExec(t, db, `INSERT INTO idempotency_keys (id, installation_id, idempotency_key, request_hash, status, claim_token,
				order_id, response_status, response_body, created_at, updated_at, expires_at, response_headers)
				VALUES ('key-1', 'inst', 'k', 'h', 'completed', 't', 'order-1', 201, '{"order_id":"order-1"}', ?, ?, ?, '{"Content-Type":["application/json"]}')`,
			t0, t0, expires)

		if _, err := models.Migrate(t.Context(), db); err != nil {
			t.Fatalf("migrate a database with an installation's key: %v", err)
		}

		row, err := models.GetIdempotencyKey(db, "inst", "k")
		if err != nil {
			t.Fatal(err)
		}
		answer, done, err := row.Answer()
		if err != nil || !done || row.ID != "key-1" || row.AccountID != nil || row.OrderID == nil || *row.OrderID != "order-1" ||
			answer.Status != 201 || string(answer.Body) != `{"order_id":"order-1"}` || answer.Headers["Content-Type"][0] != "application/json" ||
			!row.ExpiresAt.Equal(expires) || !row.CreatedAt.Equal(t0) {
			t.Fatalf("the key after 0019 = %+v (answer %+v, %v, %v)", row, answer, done, err)
		}
		if _, claimed, err := models.ClaimIdempotencyKey(db, "inst", "k", "h", time.Minute); err != nil || claimed {
			t.Fatalf("the installation's completed key was claimed again: %v, %v", claimed, err)
		}
		claim, claimed, err := models.ClaimScopedIdempotencyKey(db, models.AccountKeyScope("acc"), "k", "h", time.Minute, 0)
		if err != nil || !claimed {
			t.Fatalf("the account's key k: %v, %v", claimed, err)
		}
		if err := models.ReleaseIdempotencyKey(db, claim); err != nil {
			t.Fatal(err)
		}
		if _, err := models.GetScopedIdempotencyKey(db, models.AccountKeyScope("acc"), "k"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("the released account key: %v, want ErrNotFound", err)
		}
	})
}
