package e2e_test

import (
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// assertCreditInvariants checks, for an account, that its balance and reserved amount equal the
// sums of its ledger, and that every order whose jobs are all terminal has
// reserved = consumed + released.
func assertCreditInvariants(t *testing.T, db *gorm.DB, accountID string) {
	t.Helper()
	acc, err := models.GetAccount(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	balance, reserved, err := models.LedgerSums(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if balance != acc.CreditBalance || reserved != acc.CreditsReserved {
		t.Fatalf("account %s: balance/reserved %d/%d, ledger sums %d/%d", accountID, acc.CreditBalance, acc.CreditsReserved, balance, reserved)
	}
	var orders []models.Order
	if err := db.Where("account_id = ?", accountID).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	for _, o := range orders {
		var open int64
		if err := db.Model(&models.Job{}).Where("order_id = ? AND status NOT IN ?", o.ID,
			[]string{status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired}).Count(&open).Error; err != nil {
			t.Fatal(err)
		}
		if open == 0 && o.CreditsReserved != o.CreditsConsumed+o.CreditsReleased {
			t.Fatalf("order %s: reserved %d != consumed %d + released %d", o.ID, o.CreditsReserved, o.CreditsConsumed, o.CreditsReleased)
		}
		var ledger struct{ Reserved, Settled int64 }
		if err := db.Raw(`SELECT COALESCE(SUM(CASE WHEN kind = 'reserve' THEN reserved_delta ELSE 0 END), 0) AS reserved,
			COALESCE(-SUM(CASE WHEN kind IN ('consume','release') THEN reserved_delta ELSE 0 END), 0) AS settled
			FROM credit_ledger WHERE order_id = ?`, o.ID).Scan(&ledger).Error; err != nil {
			t.Fatal(err)
		}
		if open == 0 && ledger.Reserved != ledger.Settled {
			t.Fatalf("order %s: ledger reserved %d, settled %d", o.ID, ledger.Reserved, ledger.Settled)
		}
	}
}
