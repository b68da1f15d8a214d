package engine_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// asTestTwin makes the fixture's account a test twin on the day of now with jobsToday jobs run,
// and its engine's clock now.
func (f *sessionFixture) asTestTwin(t *testing.T, now time.Time, jobsToday int) {
	t.Helper()
	require.NoError(t, f.db.Model(&models.Account{}).Where("id = ?", f.inst.AccountID).Updates(map[string]any{
		"test_mode": true, "test_day": models.TestDay(now), "test_jobs_today": jobsToday}).Error)
	f.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return now } })
}

// newLedgeredFixture is newSessionFixtureOn whose account's balance came through the ledger (a
// grant), so that requireLedger holds from the start.
func newLedgeredFixture(t *testing.T, db *gorm.DB, balance int64) *sessionFixture {
	t.Helper()
	f := newSessionFixtureOn(t, db, 0)
	require.NoError(t, models.GrantCredits(db, f.inst.AccountID, balance, "test"))
	return f
}

// requireLedger checks that the account's balance and reservations are its ledger's sums.
func requireLedger(t *testing.T, db *gorm.DB, accountID string) *models.Account {
	t.Helper()
	acc, err := models.GetAccount(db, accountID)
	require.NoError(t, err)
	balance, reserved, err := models.LedgerSums(db, accountID)
	require.NoError(t, err)
	require.Equal(t, acc.CreditBalance, balance, "balance and ledger")
	require.Equal(t, acc.CreditsReserved, reserved, "reserved and ledger")
	return acc
}

// Sessions of a test twin sent at once near its quota: exactly the jobs left are accepted, the
// others refused KindRateLimited/test_quota_exceeded with RetryAfter until the database's midnight
// UTC and nothing created, on both databases; balance and ledger agree.
func TestTestSessionsAtOnceNearTheQuota(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLedgeredFixture(t, db, 1000)
		now := time.Now().UTC()
		clock := time.Date(now.Year(), now.Month(), now.Day(), 22, 0, 0, 0, time.UTC)
		const left, senders = 4, 12
		f.asTestTwin(t, clock, models.TestDailyJobs-left)

		var wg sync.WaitGroup
		errs := make([]error, senders)
		for i := range senders {
			wg.Go(func() {
				req := f.request("", shoot("ok", 1))
				req.Test = true
				_, errs[i] = f.eng.Sessions.CommitSession(t.Context(), req, nil)
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
			assert.Equal(t, engine.KindRateLimited, e.Kind)
			assert.Equal(t, engine.ReasonTestQuotaExceeded, e.Reason)
			// Until the database's midnight, not the engine's clock's (22:00, 2 h before it).
			assert.InDelta(t, untilMidnightUTC().Seconds(), e.RetryAfter.Seconds(), 60, "Retry-After %s", e.RetryAfter)
			assert.True(t, errors.Is(err, models.ErrTestQuotaExceeded))
		}
		assert.Equal(t, left, accepted)
		var orders, testOrders int64
		require.NoError(t, db.Model(&models.Order{}).Where("account_id = ?", f.inst.AccountID).Count(&orders).Error)
		require.NoError(t, db.Model(&models.Job{}).Where("account_id = ? AND test_mode = ?", f.inst.AccountID, true).Count(&testOrders).Error)
		assert.EqualValues(t, left, orders)
		assert.EqualValues(t, left, testOrders, "the jobs are test mode's")
		acc := requireLedger(t, db, f.inst.AccountID)
		assert.Equal(t, models.TestDailyJobs, acc.TestJobsToday)
		assert.EqualValues(t, 1000-3*left, acc.CreditBalance)
		assert.EqualValues(t, 3*left, acc.CreditsReserved)
	})
}

// untilMidnightUTC is the time from now, by this machine's clock (the test databases'), to the
// next midnight UTC.
func untilMidnightUTC() time.Duration {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now)
}

// The test day is bounded by the database's clock (docs/test-mode.md), so a refusal by the quota
// says how long until the database's midnight UTC, not the process's: a process whose clock is far
// ahead or far behind still answers the Retry-After of the day it was refused in, on both
// databases.
func TestTestQuotaRetryAfterFollowsTheDatabasesClock(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newLedgeredFixture(t, db, 1000)
		for _, skewed := range []time.Time{
			time.Date(2999, 1, 1, 20, 0, 0, 0, time.UTC), // far ahead: works in the database's day
			time.Date(2001, 1, 1, 3, 0, 0, 0, time.UTC),  // far behind: works in the database's day too
		} {
			// The twin's quota of the database's day is spent.
			require.NoError(t, f.db.Model(&models.Account{}).Where("id = ?", f.inst.AccountID).Updates(map[string]any{
				"test_mode": true, "test_day": models.TestDay(time.Now()), "test_jobs_today": models.TestDailyJobs}).Error)
			f.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return skewed } })
			req := f.request("", shoot("ok", 1))
			req.Test = true
			_, err := f.eng.Sessions.CommitSession(t.Context(), req, nil)
			e, ok := engine.As(err)
			require.True(t, ok, "clock %s: want an engine refusal, got %v", skewed, err)
			require.Equal(t, engine.ReasonTestQuotaExceeded, e.Reason, "clock %s", skewed)
			require.InDelta(t, untilMidnightUTC().Seconds(), e.RetryAfter.Seconds(), 60,
				"clock %s: Retry-After %s, want until the database's midnight UTC (%s)", skewed, e.RetryAfter, untilMidnightUTC())
		}
	})
}

// A process whose clock is far behind the database's (more than a day) works in the database's
// day, as one far ahead does: a twin whose recorded day is the database's yesterday, its credits
// and its quota spent, is refilled by such a process's first session and counts from zero, on both
// databases. (Working in its own day, the process would never refill the twin: the recorded day is
// later than its own.)
func TestFarBehindClockStartsTheDatabasesDay(t *testing.T) {
	for _, behind := range []time.Duration{48 * time.Hour, (365 + 2) * 24 * time.Hour} {
		t.Run(behind.String(), func(t *testing.T) {
			testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
				f := newLedgeredFixture(t, db, 2) // less than the session's 3: only the day's refill pays it
				require.NoError(t, f.db.Model(&models.Account{}).Where("id = ?", f.inst.AccountID).Updates(map[string]any{
					"test_mode": true, "test_day": models.TestDay(time.Now().Add(-24 * time.Hour)), "test_jobs_today": models.TestDailyJobs}).Error)
				skewed := time.Now().UTC().Add(-behind)
				f.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return skewed } })
				req := f.request("", shoot("ok", 1))
				req.Test = true
				_, err := f.eng.Sessions.CommitSession(t.Context(), req, nil)
				require.NoError(t, err, "the spent day of yesterday was not refilled")
				acc := requireLedger(t, db, f.inst.AccountID)
				assert.Equal(t, models.TestDay(time.Now()), acc.TestDay, "the database's day")
				assert.Equal(t, 1, acc.TestJobsToday, "the quota counts from zero")
				assert.EqualValues(t, models.TestDailyCredits-3, acc.CreditBalance, "the day's credits")
				assert.EqualValues(t, 3, acc.CreditsReserved)
			})
		})
	}
}

// A live session pays no test statement and is never counted: the account's test columns stay as
// they are, however many sessions it sends.
func TestLiveSessionsHaveNoQuota(t *testing.T) {
	f := newLedgeredFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), 1000)
	require.NoError(t, f.db.Model(&models.Account{}).Where("id = ?", f.inst.AccountID).
		Update("test_jobs_today", models.TestDailyJobs).Error)
	_, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 2)), nil)
	require.NoError(t, err)
	acc := requireLedger(t, f.db, f.inst.AccountID)
	assert.Equal(t, models.TestDailyJobs, acc.TestJobsToday)
	assert.Equal(t, "", acc.TestDay)
	assert.EqualValues(t, 994, acc.CreditBalance)
}

// Records.Account of a test twin refills its day's credits on the first read of a new UTC day; of
// a live account, it reads it as it is. SetTestCredits refuses a value out of range, then a live
// key, and sets a twin's balance.
func TestTestCreditsOfTheEngine(t *testing.T) {
	f := newLedgeredFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), 40)
	live := f.inst.AccountID
	ctx := t.Context()
	liveKey, err := f.eng.Accounts.SetTestCredits(ctx, live, false, 5)
	require.Error(t, err)
	e, _ := engine.As(err)
	require.NotNil(t, e)
	assert.Equal(t, engine.KindForbidden, e.Kind, "a live key")
	assert.Zero(t, liveKey)
	for _, n := range []int64{-1, engine.MaxTestCredits + 1} {
		for _, test := range []bool{false, true} {
			_, err := f.eng.Accounts.SetTestCredits(ctx, live, test, n)
			e, _ := engine.As(err)
			require.NotNil(t, e, "available %d", n)
			assert.Equal(t, engine.KindInvalid, e.Kind, "available %d", n)
			assert.Equal(t, "available", e.Field)
		}
	}
	_, err = f.eng.Accounts.SetTestCredits(ctx, live, true, 5)
	e, _ = engine.As(err)
	require.NotNil(t, e)
	assert.Equal(t, engine.KindNotFound, e.Kind, "a live account has no test balance")
	acc, err := f.eng.Records.Account(ctx, live)
	require.NoError(t, err)
	assert.False(t, acc.Test)
	assert.EqualValues(t, 40, acc.CreditBalance)

	twin, err := models.NewStore(f.db).TestTwinOfAccount(ctx, live)
	require.NoError(t, err)
	set, err := f.eng.Accounts.SetTestCredits(ctx, twin.ID, true, 12)
	require.NoError(t, err)
	assert.True(t, set.Test)
	assert.EqualValues(t, 12, set.CreditBalance)
	acc, err = f.eng.Records.Account(ctx, twin.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 12, acc.CreditBalance, "the same day")

	tomorrow := time.Now().UTC().Add(24 * time.Hour)
	f.withEngine(func(c *engine.Config) { c.Now = func() time.Time { return tomorrow } })
	acc, err = f.eng.Records.Account(ctx, twin.ID)
	require.NoError(t, err)
	assert.EqualValues(t, models.TestDailyCredits, acc.CreditBalance, "a new day")
	requireLedger(t, f.db, twin.ID)
	assert.EqualValues(t, 40, requireLedger(t, f.db, live).CreditBalance)
}
