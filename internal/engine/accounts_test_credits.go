package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
)

// MaxTestCredits is the largest test balance a client may set (PUT …/test/credits).
const MaxTestCredits = 1_000_000

// SetTestCredits sets the available test credits of the test twin accountID to available, as
// PUT …/test/credits asks with a test key (test): the twin's day is refilled first when it has not
// started, so the value holds until the next UTC midnight; reserved credits are untouched and the
// ledger records the change (an adjust entry). A live key is KindForbidden (test mode's balance is
// set by test keys alone, and a live balance never through this route); an available outside
// 0..MaxTestCredits KindInvalid. It returns the account with its new balance.
func (e *Accounts) SetTestCredits(ctx context.Context, accountID string, test bool, available int64) (Account, error) {
	if !test {
		return Account{}, refuse(KindForbidden, "", "",
			"Only a test key sets test credits; this live key's balance changes only by purchase. Call this route with your pk_test_ or mk_test_ key.")
	}
	if available < 0 || available > MaxTestCredits {
		return Account{}, refuse(KindInvalid, "", "available", "must be an integer from 0 to %d.", MaxTestCredits)
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
