package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A placement waits for its account's turn (accountGate): while another holds it, a placement of
// the account gives up with its context and writes nothing, one of another account goes through,
// and a placement inside a transaction does not wait (its transaction may hold the row already).
func TestPlaceOrderWaitsForItsAccountsTurn(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		store := models.NewStore(db)
		held, err := models.CreateAccount(db, "held", 1000)
		if err != nil {
			t.Fatal(err)
		}
		free, err := models.CreateAccount(db, "free", 1000)
		if err != nil {
			t.Fatal(err)
		}
		release, err := models.HoldAccount(context.Background(), store, held.ID)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		order, jobs := orderOf(held.ID, 1, 4, time.Now())
		if err := store.PlaceOrder(ctx, order, jobs, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("placement while the account's turn is held: err = %v, want context.DeadlineExceeded", err)
		}
		var n int64
		db.Model(&models.Order{}).Where("account_id = ?", held.ID).Count(&n)
		if n != 0 {
			t.Fatalf("the placement that gave up wrote %d orders, want 0", n)
		}
		other, otherJobs := orderOf(free.ID, 1, 4, time.Now())
		if err := store.PlaceOrder(context.Background(), other, otherJobs, nil); err != nil {
			t.Fatalf("another account's placement: %v", err)
		}
		inTx, inTxJobs := orderOf(held.ID, 1, 4, time.Now())
		// A bounded wait, so that a transaction's placement that waited for the turn fails here
		// rather than hanging the test.
		txCtx, txCancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer txCancel()
		err = store.Tx(txCtx, func(tx *models.Store) error {
			return tx.PlaceOrder(txCtx, inTx, inTxJobs, nil)
		})
		if err != nil {
			t.Fatalf("placement inside a transaction while the turn is held: %v", err)
		}
		release()
		again, againJobs := orderOf(held.ID, 1, 4, time.Now())
		if err := store.PlaceOrder(context.Background(), again, againJobs, nil); err != nil {
			t.Fatalf("placement after the turn ended: %v", err)
		}
	})
}
