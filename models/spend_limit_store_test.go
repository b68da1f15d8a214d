package models_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// spendInstallation makes an installation on accountID.
func spendInstallation(t *testing.T, db *gorm.DB, accountID string) string {
	t.Helper()
	now := time.Now().UTC()
	inst := models.Installation{ID: models.NewID(), AccountID: accountID, Name: "Shop", WebhookSecretEnc: "x",
		Status: "active", RateLimitPerMin: 60, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&inst).Error)
	return inst.ID
}

// pluginOrderOf is orderOf for an installation's order.
func pluginOrderOf(accountID, installationID string, n int, cost int64, now time.Time) (*models.Order, []models.Job) {
	order, jobs := orderOf(accountID, n, cost, now)
	order.API = models.APIPlugin
	order.InstallationID = &installationID
	for i := range jobs {
		jobs[i].InstallationID = &installationID
	}
	return order, jobs
}

// spendScopes are the two kinds of limit under test: an account's, with an external order, and an
// installation's, with a plugin order (whose account has no limit).
func spendScopes(t *testing.T, db *gorm.DB, credits int64) map[string]struct {
	scope models.SpendScope
	order func(n int, cost int64) (*models.Order, []models.Job)
	acc   string
} {
	t.Helper()
	acc, err := models.CreateAccount(db, "Acme", credits)
	require.NoError(t, err)
	acc2, err := models.CreateAccount(db, "Shop owner", credits)
	require.NoError(t, err)
	inst := spendInstallation(t, db, acc2.ID)
	now := time.Now().UTC()
	return map[string]struct {
		scope models.SpendScope
		order func(n int, cost int64) (*models.Order, []models.Job)
		acc   string
	}{
		"account": {models.SpendScope{AccountID: acc.ID},
			func(n int, cost int64) (*models.Order, []models.Job) { return orderOf(acc.ID, n, cost, now) }, acc.ID},
		"installation": {models.SpendScope{InstallationID: inst},
			func(n int, cost int64) (*models.Order, []models.Job) {
				return pluginOrderOf(acc2.ID, inst, n, cost, now)
			}, acc2.ID},
	}
}

// 50 orders at once against a limit that fits 10: exactly 10 are accepted, on both databases and
// for both an account's limit and an installation's; every refusal is a SpendLimitError that
// names the limit, and nothing of a refused order is written.
func TestSpendLimitExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, c := range spendScopes(t, db, 100_000) {
			t.Run(name, func(t *testing.T) {
				now := time.Now().UTC()
				_, err := s.SetSpendLimit(ctx, c.scope, ptr(int64(100)), 80, now)
				require.NoError(t, err)
				const senders = 50
				errs := make([]error, senders)
				var wg sync.WaitGroup
				for i := range senders {
					wg.Go(func() {
						order, jobs := c.order(2, 5)
						errs[i] = s.PlaceOrder(ctx, order, jobs, nil)
					})
				}
				wg.Wait()
				accepted := 0
				for _, err := range errs {
					if err == nil {
						accepted++
						continue
					}
					var sl *models.SpendLimitError
					require.True(t, errors.As(err, &sl), "err = %v", err)
					require.True(t, errors.Is(err, models.ErrSpendLimitExceeded))
					require.EqualValues(t, 100, sl.Limit)
					require.EqualValues(t, 100, sl.Used)
					require.Equal(t, models.SpendResetsAt(now), sl.ResetsAt)
					require.Equal(t, c.scope.InstallationID, sl.InstallationID)
				}
				require.Equal(t, 10, accepted)
				require.EqualValues(t, 10, countOrders(t, db, c.acc))
				acc := assertLedgerMatches(t, db, c.acc)
				require.EqualValues(t, 100, acc.CreditsReserved)
				st, err := s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.EqualValues(t, 100, st.Used)
				require.EqualValues(t, 100, *st.MonthlyCredits)
			})
		}
	})
}

// A limit lowered while orders are in flight: no order that takes the row after the change passes
// the new limit, so the month ends at most at the new limit (or where it already was).
func TestSpendLimitLoweredInFlight(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, c := range spendScopes(t, db, 100_000) {
			t.Run(name, func(t *testing.T) {
				now := time.Now().UTC()
				_, err := s.SetSpendLimit(ctx, c.scope, ptr(int64(10_000)), 80, now)
				require.NoError(t, err)
				const senders, lowered = 40, 50
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range senders {
					wg.Go(func() {
						<-start
						order, jobs := c.order(1, 10)
						err := s.PlaceOrder(ctx, order, jobs, nil)
						if err != nil {
							require.ErrorIs(t, err, models.ErrSpendLimitExceeded)
						}
					})
				}
				close(start)
				at, err := s.SetSpendLimit(ctx, c.scope, ptr(int64(lowered)), 80, now)
				require.NoError(t, err)
				wg.Wait()
				// Orders after the change: none fits once the month is at the limit.
				for range 10 {
					order, jobs := c.order(1, 10)
					err := s.PlaceOrder(ctx, order, jobs, nil)
					if err != nil {
						require.ErrorIs(t, err, models.ErrSpendLimitExceeded)
					}
				}
				st, err := s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.LessOrEqual(t, st.Used, max(int64(lowered), at.Used), "used %d, %d when lowered", st.Used, at.Used)
				if at.Used < lowered {
					require.EqualValues(t, lowered, st.Used, "what was left under the new limit was taken")
				}
				acc := assertLedgerMatches(t, db, c.acc)
				require.EqualValues(t, st.Used, acc.CreditsReserved)
			})
		}
	})
}

// Released credits count back into the month that reserved them; a new month starts from zero
// in the reservation's own UPDATE; no limit means no check; clearing a limit lifts it.
func TestSpendLimitReleaseRolloverAndClear(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, c := range spendScopes(t, db, 100_000) {
			t.Run(name, func(t *testing.T) {
				now := time.Now().UTC()
				// Without a limit: counted, never refused.
				order, jobs := c.order(3, 10)
				require.NoError(t, s.PlaceOrder(ctx, order, jobs, nil))
				st, err := s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.Nil(t, st.MonthlyCredits)
				require.EqualValues(t, 30, st.Used)

				_, err = s.SetSpendLimit(ctx, c.scope, ptr(int64(30)), 50, now)
				require.NoError(t, err)
				order2, jobs2 := c.order(1, 10)
				require.ErrorIs(t, s.PlaceOrder(ctx, order2, jobs2, nil), models.ErrSpendLimitExceeded)

				// A failed job gives its 10 back: the next order fits.
				_, ended, err := models.EndJobRun(db, jobs[0].ID, 1, status.JobFailed, "", "", "boom")
				require.NoError(t, err)
				require.True(t, ended)
				st, err = s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.EqualValues(t, 20, st.Used)
				require.Equal(t, 50, st.AlertPercent)
				order2, jobs2 = c.order(1, 10)
				require.NoError(t, s.PlaceOrder(ctx, order2, jobs2, nil))

				// A release reserved in an earlier month does not count back into this one.
				table := "accounts"
				id := c.scope.AccountID
				if c.scope.InstallationID != "" {
					table, id = "installations", c.scope.InstallationID
				}
				require.NoError(t, db.Table(table).Where("id = ?", id).Update("spend_month", "2000-01").Error)
				st, err = s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.EqualValues(t, 0, st.Used, "an earlier month's spend is not this month's")
				_, _, err = models.EndJobRun(db, jobs[1].ID, 1, status.JobFailed, "", "", "boom")
				require.NoError(t, err)
				var used int64
				require.NoError(t, db.Table(table).Select("spend_used").Where("id = ?", id).Scan(&used).Error)
				require.EqualValues(t, 30, used, "the earlier month's counter is left as it was")

				// The new month starts from zero in the reservation itself.
				order3, jobs3 := c.order(3, 10)
				require.NoError(t, s.PlaceOrder(ctx, order3, jobs3, nil))
				st, err = s.SpendLimitOf(ctx, c.scope, now)
				require.NoError(t, err)
				require.EqualValues(t, 30, st.Used)

				st, err = s.SetSpendLimit(ctx, c.scope, nil, 80, now)
				require.NoError(t, err)
				require.Nil(t, st.MonthlyCredits)
				order4, jobs4 := c.order(5, 10)
				require.NoError(t, s.PlaceOrder(ctx, order4, jobs4, nil))
				assertLedgerMatches(t, db, c.acc)
			})
		}
	})
}

// A short balance is ErrInsufficientCredits whatever the limit: under one that would fit, and
// under one the order is over too (told the same by the one-statement order and the step-by-step
// one: on both databases and for an order of more than 200 jobs), and writes nothing, the
// installation's spend included.
func TestSpendLimitShortBalance(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, c := range spendScopes(t, db, 15) {
			t.Run(name, func(t *testing.T) {
				for _, limit := range []int64{100, 10} {
					for _, size := range [][2]int64{{2, 10}, {201, 1}} {
						now := time.Now().UTC()
						_, err := s.SetSpendLimit(ctx, c.scope, ptr(limit), 80, now)
						require.NoError(t, err)
						order, jobs := c.order(int(size[0]), size[1])
						require.ErrorIs(t, s.PlaceOrder(ctx, order, jobs, nil), models.ErrInsufficientCredits,
							"limit %d, %d jobs of %d credits", limit, size[0], size[1])
						st, err := s.SpendLimitOf(ctx, c.scope, now)
						require.NoError(t, err)
						require.EqualValues(t, 0, st.Used)
						require.EqualValues(t, 0, countOrders(t, db, c.acc))
					}
				}
			})
		}
	})
}

// Around a month's end, API processes whose clocks are a little apart reserve for the same row: one
// whose clock already reads the next month counts into it first, then one whose clock still reads
// the month before reserves. The later month's spend is kept and counts that reservation too (it
// is checked against, and refused by, the later month's limit), on both databases, in the
// one-statement order and the step-by-step one, for an account's limit and an installation's: the
// month only goes forward. A month further ahead than the next (a clock far off wrote it) is no
// month that started, and the reservation's own month replaces it.
func TestSpendLimitMonthOnlyGoesForward(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		for name, c := range spendScopes(t, db, 100_000) {
			t.Run(name, func(t *testing.T) {
				table, id := "accounts", c.scope.AccountID
				if c.scope.InstallationID != "" {
					table, id = "installations", c.scope.InstallationID
				}
				counter := func() (string, int64) {
					var row struct {
						SpendMonth string
						SpendUsed  int64
					}
					require.NoError(t, db.Table(table).Select("spend_month, spend_used").Where("id = ?", id).Take(&row).Error)
					return row.SpendMonth, row.SpendUsed
				}
				now := time.Now().UTC()
				month := models.SpendMonth(now)
				nextStart := models.SpendResetsAt(now)
				next := models.SpendMonth(nextStart)
				_, err := s.SetSpendLimit(ctx, c.scope, ptr(int64(100)), 80, now)
				require.NoError(t, err)
				for _, step := range []struct {
					name string
					inTx func(*models.Store) error // not nil: the order is written step by step
				}{{"one statement", nil}, {"step by step", func(*models.Store) error { return nil }}} {
					// A process whose clock reads the next month filled that month's limit.
					require.NoError(t, db.Table(table).Where("id = ?", id).
						Updates(map[string]any{"spend_month": next, "spend_used": 100}).Error)
					order, jobs := c.order(1, 10)
					err := s.PlaceOrder(ctx, order, jobs, step.inTx)
					var sl *models.SpendLimitError
					require.True(t, errors.As(err, &sl), "%s: a reservation of this month past the next month's limit: err = %v", step.name, err)
					require.EqualValues(t, 100, sl.Used, step.name)
					require.Equal(t, models.SpendResetsAt(nextStart), sl.ResetsAt, step.name)
					gotMonth, gotUsed := counter()
					require.Equal(t, next, gotMonth, step.name)
					require.EqualValues(t, 100, gotUsed, step.name)

					// Room left in the next month: the reservation counts into it.
					require.NoError(t, db.Table(table).Where("id = ?", id).Update("spend_used", 50).Error)
					order, jobs = c.order(1, 10)
					require.NoError(t, s.PlaceOrder(ctx, order, jobs, step.inTx), step.name)
					gotMonth, gotUsed = counter()
					require.Equal(t, next, gotMonth, "%s: the later month is kept", step.name)
					require.EqualValues(t, 60, gotUsed, "%s: its spend is kept and counts the reservation", step.name)
					st, err := s.SpendLimitOf(ctx, c.scope, now)
					require.NoError(t, err)
					require.EqualValues(t, 60, st.Used, "%s: the month a reservation now counts in", step.name)
					require.Equal(t, models.SpendResetsAt(nextStart), st.ResetsAt, step.name)

					// A month two ahead is no month that started: this month replaces it.
					far := models.SpendMonth(models.SpendResetsAt(nextStart))
					require.NoError(t, db.Table(table).Where("id = ?", id).
						Updates(map[string]any{"spend_month": far, "spend_used": 100}).Error)
					order, jobs = c.order(1, 10)
					require.NoError(t, s.PlaceOrder(ctx, order, jobs, step.inTx), step.name)
					gotMonth, gotUsed = counter()
					require.Equal(t, month, gotMonth, step.name)
					require.EqualValues(t, 10, gotUsed, step.name)
				}
				assertLedgerMatches(t, db, c.acc)
			})
		}
	})
}
