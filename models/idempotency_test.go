package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// idemInstallation creates an account with one installation and returns both IDs.
func idemInstallation(t *testing.T, db *gorm.DB) (accountID, installationID string) {
	t.Helper()
	acc, err := models.CreateAccount(db, "idem", 100)
	if err != nil {
		t.Fatal(err)
	}
	box, _ := secrets.NewBox(make([]byte, 32))
	inst, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop", RateLimitPerMin: 60}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	return acc.ID, inst.Installation.ID
}

func countKeys(t *testing.T, db *gorm.DB, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Model(&models.IdempotencyKey{}).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIdempotencyKeyClaimCompleteReplay(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		accountID, inst := idemInstallation(t, db)
		_, otherInst := idemInstallation(t, db)
		lease := time.Minute

		claim, claimed, err := models.ClaimIdempotencyKey(db, inst, "k1", "hash-a", lease)
		if err != nil || !claimed || claim.Status != models.IdempotencyInProgress {
			t.Fatalf("first claim = %+v, %v, %v", claim, claimed, err)
		}
		if d := time.Until(claim.ExpiresAt); d < 23*time.Hour || d > 25*time.Hour {
			t.Fatalf("claim expires in %v, want 24h", d)
		}
		// While it runs, the key is held whatever the payload.
		for _, hash := range []string{"hash-a", "hash-b"} {
			row, claimed, err := models.ClaimIdempotencyKey(db, inst, "k1", hash, lease)
			if err != nil || claimed || row.Status != models.IdempotencyInProgress || row.RequestHash != "hash-a" {
				t.Fatalf("claim of a held key (%s) = %+v, %v, %v", hash, row, claimed, err)
			}
		}
		// Keys are per installation.
		if _, claimed, err := models.ClaimIdempotencyKey(db, otherInst, "k1", "hash-b", lease); err != nil || !claimed {
			t.Fatalf("the same key in another installation: claimed %v, %v", claimed, err)
		}

		order, _, err := newOrder(t, db, accountID, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"order_id":"` + order.ID + `"}` + "\n")
		if err := db.Transaction(func(tx *gorm.DB) error {
			return models.CompleteIdempotencyKey(tx, claim, order.ID, 201, body)
		}); err != nil {
			t.Fatal(err)
		}
		row, claimed, err := models.ClaimIdempotencyKey(db, inst, "k1", "hash-a", lease)
		if err != nil || claimed || row.Status != models.IdempotencyCompleted || row.OrderID == nil || *row.OrderID != order.ID ||
			row.ResponseStatus == nil || *row.ResponseStatus != 201 || row.ResponseBody == nil || *row.ResponseBody != string(body) {
			t.Fatalf("claim of a completed key = %+v, %v, %v", row, claimed, err)
		}
		// Completing twice, or releasing a completed key, changes nothing.
		if err := models.CompleteIdempotencyKey(db, claim, order.ID, 201, body); !errors.Is(err, models.ErrIdempotencyClaimLost) {
			t.Fatalf("second completion = %v, want ErrIdempotencyClaimLost", err)
		}
		if err := models.ReleaseIdempotencyKey(db, claim); err != nil {
			t.Fatal(err)
		}
		if n := countKeys(t, db, "installation_id = ? AND status = ?", inst, models.IdempotencyCompleted); n != 1 {
			t.Fatalf("completed keys after a release = %d, want 1", n)
		}

		// The unique index is what arbitrates claims.
		dup := models.IdempotencyKey{ID: models.NewID(), InstallationID: &inst, Key: "k1", RequestHash: "x",
			Status: models.IdempotencyInProgress, ClaimToken: "t", CreatedAt: time.Now(), UpdatedAt: time.Now(), ExpiresAt: time.Now()}
		if err := db.Create(&dup).Error; err == nil {
			t.Fatal("a second row for the same installation and key was inserted")
		}
	})
}

func TestIdempotencyKeyReleaseFreesTheKey(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		_, inst := idemInstallation(t, db)
		claim, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "bad-request", time.Minute)
		if err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		if err := models.ReleaseIdempotencyKey(db, claim); err != nil {
			t.Fatal(err)
		}
		// A corrected request (another payload) claims the key at once.
		if _, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "good-request", time.Minute); err != nil || !claimed {
			t.Fatalf("claim after release: %v, %v", claimed, err)
		}
		// The released claim can no longer complete.
		if err := models.CompleteIdempotencyKey(db, claim, "", 201, nil); !errors.Is(err, models.ErrIdempotencyClaimLost) {
			t.Fatalf("completion of a released claim = %v", err)
		}
	})
}

func TestIdempotencyKeyAbandonedClaimIsTakenOverOnce(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		accountID, inst := idemInstallation(t, db)
		old, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "h", time.Minute)
		if err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		// Younger than the lease: held.
		if _, claimed, _ := models.ClaimIdempotencyKey(db, inst, "k", "h", time.Minute); claimed {
			t.Fatal("a fresh claim was taken over")
		}
		testdb.MustExec(t, db, "UPDATE idempotency_keys SET updated_at = ? WHERE id = ?", time.Now().UTC().Add(-2*time.Minute), old.ID)

		// Many requests find it abandoned at once: exactly one takes it over.
		const n = 10
		var wg sync.WaitGroup
		wins := make(chan *models.IdempotencyKey, n)
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				row, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "h", time.Minute)
				if err != nil {
					errs <- err
				} else if claimed {
					wins <- row
				}
			}()
		}
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(wins) != 1 {
			t.Fatalf("%d requests took the abandoned claim over, want 1", len(wins))
		}
		taker := <-wins
		if taker.ID != old.ID || taker.ClaimToken == old.ClaimToken {
			t.Fatalf("takeover = %+v, old %+v", taker, old)
		}
		// The original request, should it still be alive, can no longer commit under the key.
		order, _, err := newOrder(t, db, accountID, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := models.CompleteIdempotencyKey(db, old, order.ID, 201, []byte("{}")); !errors.Is(err, models.ErrIdempotencyClaimLost) {
			t.Fatalf("completion by the abandoned claim = %v, want ErrIdempotencyClaimLost", err)
		}
		if err := models.ReleaseIdempotencyKey(db, old); err != nil {
			t.Fatal(err)
		}
		if n := countKeys(t, db, "id = ?", old.ID); n != 1 {
			t.Fatal("the abandoned claim's release deleted the new owner's claim")
		}
		if err := models.CompleteIdempotencyKey(db, taker, order.ID, 201, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIdempotencyKeyExpiry(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		accountID, inst := idemInstallation(t, db)
		order, _, err := newOrder(t, db, accountID, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"old", "young"} {
			claim, _, err := models.ClaimIdempotencyKey(db, inst, key, "h1", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := models.CompleteIdempotencyKey(db, claim, order.ID, 201, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		testdb.MustExec(t, db, "UPDATE idempotency_keys SET expires_at = ? WHERE idempotency_key = ?", time.Now().UTC().Add(-time.Second), "old")

		// An expired key is used afresh, even with another payload.
		row, claimed, err := models.ClaimIdempotencyKey(db, inst, "old", "h2", time.Minute)
		if err != nil || !claimed || row.RequestHash != "h2" || row.Status != models.IdempotencyInProgress || row.OrderID != nil {
			t.Fatalf("claim of an expired key = %+v, %v, %v", row, claimed, err)
		}
		stored, err := models.GetIdempotencyKey(db, inst, "old")
		if err != nil || stored.RequestHash != "h2" || stored.OrderID != nil || stored.ResponseBody != nil || time.Until(stored.ExpiresAt) < 23*time.Hour {
			t.Fatalf("stored after takeover = %+v, %v", stored, err)
		}
		// The young one still replays.
		if _, claimed, _ := models.ClaimIdempotencyKey(db, inst, "young", "h2", time.Minute); claimed {
			t.Fatal("an unexpired completed key was claimed again")
		}

		// Purging deletes only expired records.
		testdb.MustExec(t, db, "UPDATE idempotency_keys SET expires_at = ? WHERE idempotency_key = ?", time.Now().UTC().Add(-time.Hour), "young")
		_, otherInst := idemInstallation(t, db)
		if _, _, err := models.ClaimIdempotencyKey(db, otherInst, "young", "h", time.Minute); err != nil {
			t.Fatal(err)
		}
		testdb.MustExec(t, db, "UPDATE idempotency_keys SET expires_at = ? WHERE installation_id = ?", time.Now().UTC().Add(-time.Hour), otherInst)
		n, err := models.NewStore(db).PurgeExpiredIdempotencyKeys(t.Context(), inst, time.Now())
		if err != nil || n != 1 {
			t.Fatalf("purge of one installation = %d, %v; want 1", n, err)
		}
		if countKeys(t, db, "installation_id = ?", inst) != 1 || countKeys(t, db, "installation_id = ?", otherInst) != 1 {
			t.Fatal("purge deleted the wrong records")
		}
		if n, err := models.NewStore(db).PurgeExpiredIdempotencyKeys(t.Context(), "", time.Now()); err != nil || n != 1 {
			t.Fatalf("purge of all = %d, %v; want 1", n, err)
		}
	})
}

// Concurrent first requests with one key: the unique index lets exactly one claim it, on both
// databases, and the others see its claim.
func TestIdempotencyKeyConcurrentClaims(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		_, inst := idemInstallation(t, db)
		for round := range 3 {
			key := fmt.Sprintf("key-%d", round)
			const n = 20
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			claims, held := 0, 0
			var firstErr error
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					row, claimed, err := models.ClaimIdempotencyKey(db, inst, key, "h", time.Minute)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						firstErr = err
					case claimed:
						claims++
					case row.Status == models.IdempotencyInProgress:
						held++
					}
				}()
			}
			close(start)
			wg.Wait()
			if firstErr != nil {
				t.Fatal(firstErr)
			}
			if claims != 1 || held != n-1 {
				t.Fatalf("round %d: %d claims and %d held, want 1 and %d", round, claims, held, n-1)
			}
		}
		if c := countKeys(t, db, "installation_id = ?", inst); c != 3 {
			t.Fatalf("%d rows, want 3", c)
		}
	})
}
