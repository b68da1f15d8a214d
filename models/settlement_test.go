package models_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// A settlement holds its account's row from the account's UPDATE to its COMMIT, and every
// reservation and settlement of the account waits for the row meanwhile, so the UPDATE is the
// transaction's last statement (docs/scaling.md, "One account's row"; the lock order: credits.go).

// settlementShop is an account with an installation and a plugin order of three jobs on it, the
// first two begun, under a monthly spend limit (so that a release gives spend back to both rows).
type settlementShop struct {
	account, installation string
	order                 *models.Order
	jobs                  []models.Job
}

func newSettlementShop(t *testing.T, db *gorm.DB) settlementShop {
	t.Helper()
	ctx := t.Context()
	s := models.NewStore(db)
	acc, err := models.CreateAccount(db, "Acme", 100)
	require.NoError(t, err)
	inst := spendInstallation(t, db, acc.ID)
	now := time.Now().UTC()
	_, err = s.SetSpendLimit(ctx, models.SpendScope{AccountID: acc.ID}, ptr(int64(1000)), 80, now)
	require.NoError(t, err)
	_, err = s.SetSpendLimit(ctx, models.SpendScope{InstallationID: inst}, ptr(int64(1000)), 80, now)
	require.NoError(t, err)
	order, jobs := pluginOrderOf(acc.ID, inst, 3, 5, now)
	require.NoError(t, s.PlaceOrder(ctx, order, jobs, nil))
	for _, j := range jobs[:2] {
		require.NoError(t, s.BeginAttempt(ctx, j.ID, 1, 1))
	}
	return settlementShop{acc.ID, inst, order, jobs}
}

// output is the one output of a completed job.
func (sh settlementShop) output(j models.Job) []models.Asset {
	now := time.Now().UTC()
	return []models.Asset{{ID: models.OutputAssetID(j.ID, j.Run, 0), Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: "image/png", BlobKey: "k/" + j.ID, CreatedAt: now, UpdatedAt: now}}
}

// settlements are the three ways a job's reservation is settled, each of one job of the shop: its
// first job completed, its second failed, its third (not begun) cancelled.
var settlements = []struct {
	name   string
	settle func(ctx context.Context, st *models.Store, sh settlementShop) (bool, error)
}{
	{"complete", func(ctx context.Context, st *models.Store, sh settlementShop) (bool, error) {
		_, ok, err := st.CompleteJob(ctx, sh.jobs[0].ID, 1, sh.output(sh.jobs[0]))
		return ok, err
	}},
	{"fail", func(ctx context.Context, st *models.Store, sh settlementShop) (bool, error) {
		_, ok, err := st.EndJob(ctx, sh.jobs[1].ID, 1, status.JobFailed, "CONTENT_POLICY", "hint", "boom")
		return ok, err
	}},
	{"cancel", func(ctx context.Context, st *models.Store, sh settlementShop) (bool, error) {
		_, ok, err := st.CancelJobNotBegun(ctx, sh.jobs[2].ID, 1, status.CancelRequested)
		return ok, err
	}},
}

var (
	accountUpdate      = regexp.MustCompile("^UPDATE [`\"]accounts[`\"] ")
	installationUpdate = regexp.MustCompile("^UPDATE [`\"]installations[`\"] ")
)

// afterAccountUpdate returns the statements after the only UPDATE of the accounts table among
// statements, failing the test when there is not exactly one.
func afterAccountUpdate(t *testing.T, statements []string) []string {
	t.Helper()
	at := -1
	for i, s := range statements {
		if accountUpdate.MatchString(s) {
			require.Equal(t, -1, at, "a second UPDATE of the account:\n%s", strings.Join(statements, "\n"))
			at = i
		}
	}
	require.NotEqual(t, -1, at, "no UPDATE of the account:\n%s", strings.Join(statements, "\n"))
	return statements[at+1:]
}

// The account's UPDATE is the last statement before the COMMIT of a settlement, followed only, in
// a release, by the installation's (whose row comes after the account's in the lock order): in a
// settlement's own transaction, and in a caller's Tx that writes more after the settlement (as
// the worker's FinishJob records the job's events), whose COMMIT it then precedes. The money is
// exact either way.
func TestSettlementUpdatesTheAccountLast(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		check := func(t *testing.T, name string, statements []string) {
			t.Helper()
			after := afterAccountUpdate(t, statements)
			want := 1
			if name != "complete" {
				want = 2
				require.Regexp(t, installationUpdate, after[0], strings.Join(statements, "\n"))
			}
			require.Len(t, after, want, "statements after the account's UPDATE:\n%s", strings.Join(statements, "\n"))
			require.Equal(t, "COMMIT", after[len(after)-1])
		}
		t.Run("alone", func(t *testing.T) {
			sh := newSettlementShop(t, db)
			st := models.NewStore(db)
			for _, c := range settlements {
				stop := testdb.RecordStatements(db)
				ok, err := c.settle(ctx, st, sh)
				statements := stop()
				require.NoError(t, err, c.name)
				require.True(t, ok, c.name)
				check(t, c.name, statements)
			}
			assertSettled(t, db, sh)
		})
		t.Run("in a transaction", func(t *testing.T) {
			sh := newSettlementShop(t, db)
			st := models.NewStore(db)
			for _, c := range settlements {
				stop := testdb.RecordStatements(db)
				err := st.Tx(ctx, func(tx *models.Store) error {
					ok, err := c.settle(ctx, tx, sh)
					if err != nil || !ok {
						return errors.Join(err, errors.New("not settled"))
					}
					// A write after the settlement, in a savepoint, as FinishJob records its events.
					return tx.Tx(ctx, func(sp *models.Store) error {
						_, err := sp.RecordEvent(ctx, &models.WebhookEvent{ID: models.NewID(), AccountID: sh.account,
							InstallationID: &sh.installation, Type: "job.completed", Payload: models.JSON(`{}`)}, models.EventDeliveries{})
						return err
					})
				})
				statements := stop()
				require.NoError(t, err, c.name)
				check(t, c.name, statements)
			}
			assertSettled(t, db, sh)
		})
	})
}

// assertSettled checks the shop after its three jobs were settled: 5 credits consumed, 10 given
// back to the balance and to both months' spend, and the ledger agreeing with the account.
func assertSettled(t *testing.T, db *gorm.DB, sh settlementShop) {
	t.Helper()
	acc := assertLedgerMatches(t, db, sh.account)
	require.EqualValues(t, 95, acc.CreditBalance)
	require.EqualValues(t, 0, acc.CreditsReserved)
	require.EqualValues(t, 5, acc.SpendUsed)
	var inst models.Installation
	require.NoError(t, db.Take(&inst, "id = ?", sh.installation).Error)
	require.EqualValues(t, 5, inst.SpendUsed)
	var o models.Order
	require.NoError(t, db.Take(&o, "id = ?", sh.order.ID).Error)
	require.Equal(t, status.OrderCompleted, o.Status)
	require.EqualValues(t, 5, o.CreditsConsumed)
	require.EqualValues(t, 10, o.CreditsReleased)
	require.Equal(t, []int{1, 1, 1}, []int{o.JobsCompleted, o.JobsFailed, o.JobsCancelled})
}

// While a transaction that settled a job writes on (FinishJob recording the job's events), the
// account's row is free: a new order of the same account, external or of its installation, is
// placed at once, not after the settlement's COMMIT. PostgreSQL only: SQLite runs one writing
// transaction at a time.
func TestSettlementLeavesTheAccountFreeUntilItsCommit(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	ctx := t.Context()
	st := models.NewStore(db)
	sh := newSettlementShop(t, db)
	for _, c := range settlements {
		t.Run(c.name, func(t *testing.T) {
			err := st.Tx(ctx, func(tx *models.Store) error {
				ok, err := c.settle(ctx, tx, sh)
				if err != nil || !ok {
					return errors.Join(err, errors.New("not settled"))
				}
				// A blocked placement waits until this deadline; a free row answers at once.
				wait, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				order, jobs := orderOf(sh.account, 1, 1, time.Now().UTC())
				if err := st.PlaceOrder(wait, order, jobs, nil); err != nil {
					return errors.Join(errors.New("an external order waited for the settlement's account"), err)
				}
				// A plugin order locks the account's row before its installation's: FOR NO KEY
				// UPDATE, which the settlement's ledger entry (a KEY SHARE lock on the account,
				// through its foreign key) does not hold up.
				order, jobs = pluginOrderOf(sh.account, sh.installation, 1, 1, time.Now().UTC())
				if err := st.PlaceOrder(wait, order, jobs, nil); err != nil {
					return errors.Join(errors.New("a plugin order waited for the settlement's account"), err)
				}
				return nil
			})
			require.NoError(t, err)
			assertLedgerMatches(t, db, sh.account)
		})
	}
	assertLedgerMatches(t, db, sh.account)
}

// A savepoint that settled a job and failed takes the account's update with it: the enclosing
// transaction commits without it, and the job, the ledger and the account stay as they were. A
// settlement whose account update fails (the account holds less reserved credit than the job)
// fails the whole transaction.
func TestSettlementOwedByAFailedSavepointIsDropped(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		st := models.NewStore(db)
		sh := newSettlementShop(t, db)
		undo := errors.New("undo")
		for _, c := range settlements {
			err := st.Tx(ctx, func(tx *models.Store) error {
				err := tx.Tx(ctx, func(sp *models.Store) error {
					if ok, err := c.settle(ctx, sp, sh); err != nil || !ok {
						return errors.Join(err, errors.New("not settled"))
					}
					return undo
				})
				if !errors.Is(err, undo) {
					return errors.Join(errors.New("the savepoint did not fail"), err)
				}
				return nil
			})
			require.NoError(t, err, c.name)
		}
		acc := assertLedgerMatches(t, db, sh.account)
		require.EqualValues(t, 85, acc.CreditBalance)
		require.EqualValues(t, 15, acc.CreditsReserved)
		for _, j := range sh.jobs {
			got, err := models.GetJob(db, j.ID)
			require.NoError(t, err)
			require.False(t, status.IsTerminalJob(got.Status), "job %s is %s", j.ID, got.Status)
		}

		// The account holds no reserved credit: the owed update fails and the settlement is undone.
		testdb.MustExec(t, db, "UPDATE accounts SET credits_reserved = 0 WHERE id = ?", sh.account)
		err := st.Tx(ctx, func(tx *models.Store) error {
			_, err := settlements[0].settle(ctx, tx, sh)
			return err
		})
		require.ErrorContains(t, err, "holds less reserved credit")
		got, err := models.GetJob(db, sh.jobs[0].ID)
		require.NoError(t, err)
		require.Equal(t, status.JobInProgress, got.Status)
	})
}
