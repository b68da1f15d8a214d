package models_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// placers are the two ways an order reaches the database: PlaceOrder (one statement on
// PostgreSQL) and the statement-by-statement path (SQLite, and orders of more than 200 jobs).
var placers = map[string]func(s *models.Store, db *gorm.DB, o *models.Order, jobs []models.Job) error{
	"place": func(s *models.Store, db *gorm.DB, o *models.Order, jobs []models.Job) error {
		return s.PlaceOrder(context.Background(), o, jobs, nil)
	},
	"step-by-step": func(s *models.Store, db *gorm.DB, o *models.Order, jobs []models.Job) error {
		return db.Transaction(func(tx *gorm.DB) error { return models.CreateOrderStepByStep(tx, o, jobs) })
	},
}

// pendingAlerts takes every pending alert of the account.
func pendingAlerts(t *testing.T, s *models.Store, accountID string) []models.PendingAlert {
	t.Helper()
	var got []models.PendingAlert
	_, err := s.TakePendingAlerts(t.Context(), accountID, 100, func(_ *models.Store, a []models.PendingAlert) error {
		got = append(got, a...)
		return nil
	})
	require.NoError(t, err)
	return got
}

// An accepted order tells the balance after it; a reservation that takes the balance below a
// threshold of the account and of an installation queues one credits.low each, once: the orders
// after it, below the threshold already, queue none, and a crossing after the balance rose again
// queues another. A month's spend passing the alert percentage of the account's and of the
// installation's limit queues one spend_limit.alert each, once.
func TestReservationsQueueEachAlertOncePerCrossing(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, place := range placers {
			t.Run(name, func(t *testing.T) {
				acc, err := models.CreateAccount(db, "Acme", 100)
				require.NoError(t, err)
				inst := spendInstallation(t, db, acc.ID)
				other := spendInstallation(t, db, acc.ID)
				require.NoError(t, s.SetLowBalanceThreshold(ctx, models.SpendScope{AccountID: acc.ID}, ptr(int64(50))))
				require.NoError(t, s.SetLowBalanceThreshold(ctx, models.SpendScope{InstallationID: inst}, ptr(int64(80))))
				require.NoError(t, s.SetLowBalanceThreshold(ctx, models.SpendScope{InstallationID: other}, ptr(int64(20))))
				now := time.Now().UTC()
				_, err = s.SetSpendLimit(ctx, models.SpendScope{InstallationID: inst}, ptr(int64(100)), 25, now)
				require.NoError(t, err)
				_, err = s.SetSpendLimit(ctx, models.SpendScope{AccountID: acc.ID}, ptr(int64(1000)), 5, now)
				require.NoError(t, err)

				order := func(n int) *models.Order {
					o, jobs := pluginOrderOf(acc.ID, inst, n, 5, now)
					require.NoError(t, place(s, db, o, jobs))
					return o
				}
				o := order(3) // 100 → 85, installation's spend 15 of 100 (alert at 25), account's 15 of 1000 (at 50)
				require.Equal(t, int64(85), o.CreditsRemaining)
				require.Zero(t, o.AlertsPending, "%+v", pendingAlerts(t, s, acc.ID))
				o = order(1) // 85 → 80: not below 80
				require.Equal(t, int64(80), o.CreditsRemaining)
				require.Zero(t, o.AlertsPending)
				require.Empty(t, pendingAlerts(t, s, acc.ID))

				o = order(1) // 80 → 75: the installation's 80 crossed; spend 25 reaches the installation's 25 % of 100
				require.Equal(t, int64(75), o.CreditsRemaining)
				require.Equal(t, 2, o.AlertsPending)
				got := pendingAlerts(t, s, acc.ID)
				require.Len(t, got, 2)
				byEvent := map[string]models.PendingAlert{}
				for _, a := range got {
					require.Equal(t, inst, *a.InstallationID)
					byEvent[a.Event] = a
				}
				require.Equal(t, int64(80), *byEvent[models.AlertCreditsLow].Threshold)
				require.Equal(t, int64(75), *byEvent[models.AlertCreditsLow].Balance)
				require.Equal(t, int64(100), *byEvent[models.AlertSpendLimit].SpendLimit)
				require.Equal(t, 25, *byEvent[models.AlertSpendLimit].AlertPercent)
				require.Equal(t, int64(25), *byEvent[models.AlertSpendLimit].SpendUsed)

				o = order(1) // 75 → 70: below 80 already, no new crossing
				require.Zero(t, o.AlertsPending)
				o = order(5) // 70 → 45: the account's 50 crossed; account spend 55 passes its 5 % of 1000
				require.Equal(t, int64(45), o.CreditsRemaining)
				got = pendingAlerts(t, s, acc.ID)
				require.Len(t, got, 2, "%+v", got)
				for _, a := range got {
					require.Nil(t, a.InstallationID)
				}
				require.Empty(t, pendingAlerts(t, s, acc.ID))

				// The balance rises above 80 again (a grant), then falls below it: a new crossing.
				require.NoError(t, models.GrantCredits(db, acc.ID, 40, "top-up"))
				_, err = s.SetSpendLimit(ctx, models.SpendScope{InstallationID: inst}, nil, 25, now)
				require.NoError(t, err)
				o = order(1) // 85 → 80: not below
				require.Zero(t, o.AlertsPending)
				o = order(7) // 80 → 45: the installation's 80 and the account's 50 crossed, the other's 20 not
				require.Equal(t, 2, o.AlertsPending)
				got = pendingAlerts(t, s, acc.ID)
				require.Len(t, got, 2)
				for _, a := range got {
					require.Equal(t, models.AlertCreditsLow, a.Event)
				}
				o = order(6) // 45 → 15: the other installation's 20
				require.Equal(t, int64(15), o.CreditsRemaining)
				got = pendingAlerts(t, s, acc.ID)
				require.Len(t, got, 1)
				require.Equal(t, other, *got[0].InstallationID)
			})
		}
	})
}

// 20 concurrent orders that together cross a threshold queue exactly one credits.low.
func TestConcurrentReservationsQueueOneCrossing(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "Acme", 100)
		require.NoError(t, err)
		require.NoError(t, s.SetLowBalanceThreshold(t.Context(), models.SpendScope{AccountID: acc.ID}, ptr(int64(50))))
		now := time.Now().UTC()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				o, jobs := orderOf(acc.ID, 1, 5, now)
				if err := s.PlaceOrder(t.Context(), o, jobs, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got := pendingAlerts(t, s, acc.ID)
		require.Len(t, got, 1)
		require.Equal(t, int64(45), *got[0].Balance)
	})
}

// spend_limit.reached is marked once per month and limit: a new limit re-arms it.
func TestSpendLimitReachedOncePerMonth(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "Acme", 100)
		require.NoError(t, err)
		scope := models.SpendScope{AccountID: acc.ID}
		calls := 0
		mark := func(month string) bool {
			first, err := s.MarkSpendLimitReached(ctx, scope, acc.ID, month, func(*models.Store) error { calls++; return nil })
			require.NoError(t, err)
			return first
		}
		require.True(t, mark("2026-11"))
		require.False(t, mark("2026-11"))
		require.True(t, mark("2026-12"))
		_, err = s.SetSpendLimit(ctx, scope, ptr(int64(10)), 80, time.Now())
		require.NoError(t, err)
		require.True(t, mark("2026-12"))
		require.Equal(t, 3, calls)
	})
}

// The statement-by-statement reservation (SQLite, and orders of more than 200 jobs) learns the
// account's and the installation's balance and spend after it from their UPDATEs (RETURNING), not
// by reading back the rows it has just written: with no threshold under the balance it reads
// nothing, and the alerts it queues and the balance it tells are the same as the one statement's.
func TestStepByStepReservationReadsNoRowItUpdated(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "Acme", 100)
		require.NoError(t, err)
		inst := spendInstallation(t, db, acc.ID)
		now := time.Now().UTC()
		_, err = s.SetSpendLimit(ctx, models.SpendScope{AccountID: acc.ID}, ptr(int64(1000)), 1, now)
		require.NoError(t, err)
		_, err = s.SetSpendLimit(ctx, models.SpendScope{InstallationID: inst}, ptr(int64(100)), 20, now)
		require.NoError(t, err)
		for _, c := range []struct {
			name      string
			order     func() (*models.Order, []models.Job)
			remaining int64
			alerts    int
		}{
			// 100 → 90; the account's spend 10 reaches 1 % of 1000: one alert.
			{"external", func() (*models.Order, []models.Job) { return orderOf(acc.ID, 2, 5, now) }, 90, 1},
			// 90 → 75; the installation's spend 15 of 100 stays under 20 %.
			{"plugin", func() (*models.Order, []models.Job) { return pluginOrderOf(acc.ID, inst, 3, 5, now) }, 75, 0},
			// 75 → 65; the installation's spend 25 passes 20 % of 100.
			{"plugin crossing", func() (*models.Order, []models.Job) { return pluginOrderOf(acc.ID, inst, 2, 5, now) }, 65, 1},
		} {
			order, jobs := c.order()
			stop := testdb.RecordStatements(db)
			err := db.Transaction(func(tx *gorm.DB) error { return models.CreateOrderStepByStep(tx, order, jobs) })
			statements := stop()
			require.NoError(t, err, c.name)
			for _, st := range statements {
				require.False(t, strings.HasPrefix(st, "SELECT"), "%s: the reservation read a row:\n%s", c.name, strings.Join(statements, "\n"))
			}
			require.Equal(t, c.remaining, order.CreditsRemaining, c.name)
			require.Equal(t, c.alerts, order.AlertsPending, c.name)
			require.Len(t, pendingAlerts(t, s, acc.ID), c.alerts, c.name)
		}
		assertLedgerMatches(t, db, acc.ID)
	})
}
