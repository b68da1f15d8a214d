package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
)

// MaxTestCredits is the largest test balance a client may set (PUT …/test/credits).
const MaxTestCredits = 1_000_000

// SetTestCredits sets the available test credits of the test twin accountID to available, as
// PUT …/test/credits asks (test: the caller's key is a test key): the twin's day is refilled first
// when it has not started, so the value holds until the next UTC midnight; reserved credits are
// untouched and the ledger records the change (an adjust entry). An available outside
// 0..MaxTestCredits is KindInvalid; then a live key is KindForbidden: test mode's balance is set by
// test keys alone, and a live balance never changes through this route. It returns the account
// with its new balance.
func (e *Accounts) SetTestCredits(ctx context.Context, accountID string, test bool, available int64) (Account, error) {
	if available < 0 || available > MaxTestCredits {
		return Account{}, refuse(KindInvalid, "", "available", "must be an integer from 0 to %d.", MaxTestCredits)
	}
	if !test {
		return Account{}, refuse(KindForbidden, "", "",
			"This route is for test keys only (pk_test_…, mk_test_…): it sets test mode's credits, and a live key's balance never changes through it. Send the request with a test key.")
	}
	acc, err := e.store.SetTestCredits(ctx, accountID, available, e.now())
	if errors.Is(err, models.ErrNotFound) {
		return Account{}, refuse(KindNotFound, "", "", "No test account with this ID.")
	}
	if err != nil {
		return Account{}, err
	}
	return accountOf(acc), nil
}
