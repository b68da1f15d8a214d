package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// 50 sessions at once against an installation's limit that fits 10: exactly 10 are accepted, the
// others refused KindInsufficientCredits/spend_limit_exceeded with the limit, the month's use and
// its reset, and nothing created; on both databases.
func TestSpendLimitSessionsAtOnce(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLedgeredFixture(t, db, 10_000)
		ctx := t.Context()
		scope := engine.SpendScope{InstallationID: f.inst.ID}
		lim, err := f.eng.Accounts.SetSpendLimit(ctx, scope, 30, nil)
		require.NoError(t, err)
		assert.Equal(t, engine.DefaultSpendAlertPercent, lim.AlertAtPercent)
		assert.EqualValues(t, 0, lim.Used)

		const senders = 50
		var wg sync.WaitGroup
		errs := make([]error, senders)
		for i := range senders {
			wg.Go(func() {
				_, errs[i] = f.eng.Sessions.CommitSession(ctx, f.request("", shoot("ok", 1)), nil)
			})
		}
		wg.Wait()
		accepted := 0
		for _, err := range errs {
			if err == nil {
				accepted++
				continue
			}
			e, ok := engine.As(err)
			require.True(t, ok, "want an engine refusal, got %v", err)
			assert.Equal(t, engine.KindInsufficientCredits, e.Kind)
			assert.Equal(t, engine.ReasonSpendLimitExceeded, e.Reason)
			require.NotNil(t, e.SpendLimit)
			assert.EqualValues(t, 30, e.SpendLimit.Limit)
			assert.EqualValues(t, 30, e.SpendLimit.Used)
			assert.True(t, e.SpendLimit.Installation)
			assert.Equal(t, models.SpendResetsAt(time.Now()), e.SpendLimit.ResetsAt)
			assert.EqualValues(t, 3, e.CreditsRequired)
		}
		assert.Equal(t, 10, accepted)
		var orders int64
		require.NoError(t, db.Model(&models.Order{}).Where("account_id = ?", f.inst.AccountID).Count(&orders).Error)
		assert.EqualValues(t, 10, orders)
		acc := requireLedger(t, db, f.inst.AccountID)
		assert.EqualValues(t, 30, acc.CreditsReserved)

		lim, err = f.eng.Accounts.SpendLimit(ctx, scope)
		require.NoError(t, err)
		assert.EqualValues(t, 30, *lim.MonthlyCredits)
		assert.EqualValues(t, 30, lim.Used)
		now := time.Now().UTC()
		assert.Equal(t, time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC), lim.ResetsAt)

		// Cleared: the next session is accepted, and still counted.
		require.NoError(t, f.eng.Accounts.ClearSpendLimit(ctx, scope))
		_, err = f.eng.Sessions.CommitSession(ctx, f.request("", shoot("ok", 1)), nil)
		require.NoError(t, err)
		lim, err = f.eng.Accounts.SpendLimit(ctx, scope)
		require.NoError(t, err)
		assert.Nil(t, lim.MonthlyCredits)
		assert.EqualValues(t, 33, lim.Used)
	})
}

// SetSpendLimit refuses values out of range by field; an unknown tenant is KindNotFound.
func TestSetSpendLimitRefusals(t *testing.T) {
	f := newLedgeredFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), 10)
	ctx := t.Context()
	scope := engine.SpendScope{AccountID: f.inst.AccountID}
	for _, c := range []struct {
		monthly int64
		alert   *int
		field   string
	}{
		{0, nil, "monthly_credits"}, {engine.MaxSpendLimit + 1, nil, "monthly_credits"},
		{10, new(0), "alert_at_percent"}, {10, new(101), "alert_at_percent"},
	} {
		_, err := f.eng.Accounts.SetSpendLimit(ctx, scope, c.monthly, c.alert)
		e, ok := engine.As(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, engine.KindInvalid, e.Kind)
		assert.Equal(t, c.field, e.Field)
	}
	lim, err := f.eng.Accounts.SetSpendLimit(ctx, scope, 10, new(50))
	require.NoError(t, err)
	assert.Equal(t, 50, lim.AlertAtPercent)
	_, err = f.eng.Accounts.SpendLimit(ctx, engine.SpendScope{AccountID: models.NewID()})
	e, ok := engine.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, engine.KindNotFound, e.Kind)
}

// When both the account's and the installation's monthly limits refuse a plugin order, the refusal
// names the installation's on either database and whatever the order's size: the one statement of
// PostgreSQL's small orders and the step-by-step reservation (SQLite, and orders of more than 200
// jobs) tell it alike (the step-by-step path named the account's).
func TestBothLimitsRefusingNameTheInstallationOnEveryPath(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := models.NewStore(db)
		tn := newSupportTenant(t, db, 10_000)
		five := int64(5)
		now := time.Now()
		_, err := st.SetSpendLimit(ctx, models.SpendScope{AccountID: tn.accountID}, &five, 80, now)
		require.NoError(t, err)
		_, err = st.SetSpendLimit(ctx, models.SpendScope{InstallationID: tn.installationID}, &five, 80, now)
		require.NoError(t, err)
		for _, n := range []int{1, 200, 201} {
			order := models.Order{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID, API: models.APIPlugin,
				JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: n,
				CreatedAt: now, UpdatedAt: now}
			jobs := make([]models.Job, n)
			for i := range jobs {
				jobs[i] = models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: tn.accountID, InstallationID: &tn.installationID,
					JobType: jobtype.PhotoShoot, Position: i, ProductRef: "p", AIModel: "sim/ok", AspectRatio: "1:1", CreditCost: 10, Run: 1,
					Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
			}
			var sl *models.SpendLimitError
			require.ErrorAs(t, st.PlaceOrder(ctx, &order, jobs, nil), &sl, "%d jobs", n)
			assert.Equal(t, tn.installationID, sl.InstallationID, "%d jobs: the refusal names the installation's limit", n)
		}
	})
}

// A session refused by the month another process's clock already began (the month only goes
// forward, models/spend_limit_store.go) marks that month's spend_limit.reached, the month the
// refusal's resets_at ends, so the processes whose clocks read it do not send it a second time.
func TestSpendLimitReachedMarksTheMonthRefused(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLedgeredFixture(t, db, 10_000)
		ctx := t.Context()
		scope := engine.SpendScope{InstallationID: f.inst.ID}
		_, err := f.eng.Accounts.SetSpendLimit(ctx, scope, 30, nil)
		require.NoError(t, err)
		now := time.Now().UTC()
		next := models.SpendResetsAt(now)
		require.NoError(t, db.Model(&models.Installation{}).Where("id = ?", f.inst.ID).
			Updates(map[string]any{"spend_month": models.SpendMonth(next), "spend_used": 30}).Error)

		_, err = f.eng.Sessions.CommitSession(ctx, f.request("", shoot("ok", 1)), nil)
		e, ok := engine.As(err)
		require.True(t, ok, "want an engine refusal, got %v", err)
		assert.Equal(t, engine.ReasonSpendLimitExceeded, e.Reason)
		require.NotNil(t, e.SpendLimit)
		assert.Equal(t, models.SpendResetsAt(next), e.SpendLimit.ResetsAt)
		var marked string
		require.NoError(t, db.Model(&models.Installation{}).Select("spend_reached_month").
			Where("id = ?", f.inst.ID).Scan(&marked).Error)
		assert.Equal(t, models.SpendMonth(next), marked)
	})
}
