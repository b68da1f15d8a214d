package models_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// testTwin makes a live account and its external test twin (TestDailyCredits granted today).
func testTwin(t *testing.T, db *gorm.DB, liveCredits int64) (live, twin *models.Account) {
	t.Helper()
	live, err := models.CreateAccount(db, "Acme", liveCredits)
	require.NoError(t, err)
	twin, err = models.NewStore(db).TestTwinOfAccount(t.Context(), live.ID)
	require.NoError(t, err)
	return live, twin
}

// testOrderOf is orderOf in test mode.
func testOrderOf(accountID string, n int, cost int64, now time.Time) (*models.Order, []models.Job) {
	order, jobs := orderOf(accountID, n, cost, now)
	order.TestMode = true
	for i := range jobs {
		jobs[i].TestMode = true
	}
	return order, jobs
}

// setJobsToday brings a twin to jobs jobs run on the day of now.
func setJobsToday(t *testing.T, db *gorm.DB, accountID string, jobs int, now time.Time) {
	t.Helper()
	require.NoError(t, db.Model(&models.Account{}).Where("id = ?", accountID).
		Updates(map[string]any{"test_day": models.TestDay(now), "test_jobs_today": jobs}).Error)
}

// countOrders is the number of the account's orders.
func countOrders(t *testing.T, db *gorm.DB, accountID string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Model(&models.Order{}).Where("account_id = ?", accountID).Count(&n).Error)
	return n
}

// A test twin's balance is refilled to the day's allowance by the first order or read of a new UTC
// day, once, through the ledger; reserved credits and the live balance are untouched.
func TestTestCreditsRefillOncePerUTCDay(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		live, twin := testTwin(t, db, 50)
		// The twin's day is yesterday, so that the days the test crosses stay within the database's
		// tomorrow (a later day is a clock far ahead: TestFarFutureTestDayDoesNotFreezeTheTwin).
		today := time.Now().UTC().Add(-24 * time.Hour)
		setJobsToday(t, db, twin.ID, 0, today)
		order, jobs := testOrderOf(twin.ID, 3, 100, today)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, today, nil))
		acc := assertLedgerMatches(t, db, twin.ID)
		require.EqualValues(t, models.TestDailyCredits-300, acc.CreditBalance)
		require.EqualValues(t, 300, acc.CreditsReserved)
		require.Equal(t, 3, acc.TestJobsToday)

		// The same day: no refill.
		got, err := s.RefillTestCredits(ctx, twin.ID, today)
		require.NoError(t, err)
		require.EqualValues(t, models.TestDailyCredits-300, got.CreditBalance)

		// One second before the next midnight, still the same day; at midnight the refill.
		midnight := time.Date(today.Year(), today.Month(), today.Day()+1, 0, 0, 0, 0, time.UTC)
		got, err = s.RefillTestCredits(ctx, twin.ID, midnight.Add(-time.Second))
		require.NoError(t, err)
		require.EqualValues(t, models.TestDailyCredits-300, got.CreditBalance)
		got, err = s.RefillTestCredits(ctx, twin.ID, midnight)
		require.NoError(t, err)
		require.EqualValues(t, models.TestDailyCredits, got.CreditBalance, "the day's allowance available")
		require.EqualValues(t, 300, got.CreditsReserved, "reserved credits are untouched")
		require.Equal(t, models.TestDay(midnight), got.TestDay)
		require.Zero(t, got.TestJobsToday, "the quota resets with the day")
		assertLedgerMatches(t, db, twin.ID)
		// Once: a second read of the day changes nothing and writes no entry.
		var adjusts int64
		count := func() int64 {
			require.NoError(t, db.Model(&models.LedgerEntry{}).Where("account_id = ? AND kind = ?", twin.ID, models.LedgerAdjust).Count(&adjusts).Error)
			return adjusts
		}
		require.EqualValues(t, 1, count())
		_, err = s.RefillTestCredits(ctx, twin.ID, midnight.Add(time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, count())

		// An order is what refills too: a day later, with the day's first order.
		dayAfter := midnight.Add(24 * time.Hour)
		order, jobs = testOrderOf(twin.ID, 1, 10, dayAfter)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, dayAfter, nil))
		acc = assertLedgerMatches(t, db, twin.ID)
		require.EqualValues(t, models.TestDailyCredits-10, acc.CreditBalance)
		require.EqualValues(t, 310, acc.CreditsReserved)
		require.Equal(t, 1, acc.TestJobsToday)

		// A live account is never refilled.
		got, err = s.RefillTestCredits(ctx, live.ID, dayAfter)
		require.NoError(t, err)
		require.EqualValues(t, 50, got.CreditBalance)
		require.Equal(t, "", got.TestDay)
		assertLedgerMatches(t, db, live.ID)
	})
}

// SetTestCredits sets the available test balance through the ledger, for the rest of the day: a
// balance of 0 refuses the next order (a 402 rehearsed), and the next day's refill restores the
// allowance, downwards too. A live account is no test twin.
func TestSetTestCredits(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		live, twin := testTwin(t, db, 50)
		// The twin's day is yesterday, so that the days the test crosses stay within the database's
		// tomorrow.
		now := time.Now().UTC().Add(-24 * time.Hour)
		setJobsToday(t, db, twin.ID, 0, now)
		order, jobs := testOrderOf(twin.ID, 1, 40, now)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, now, nil))

		acc, err := s.SetTestCredits(ctx, twin.ID, 0, now)
		require.NoError(t, err)
		require.Zero(t, acc.CreditBalance)
		require.EqualValues(t, 40, acc.CreditsReserved, "reserved credits are untouched")
		assertLedgerMatches(t, db, twin.ID)

		refused, refusedJobs := testOrderOf(twin.ID, 1, 1, now)
		err = s.PlaceTestOrder(ctx, refused, refusedJobs, now, nil)
		require.True(t, errors.Is(err, models.ErrInsufficientCredits), "err = %v", err)
		require.EqualValues(t, 1, countOrders(t, db, twin.ID), "nothing created")
		acc = assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, 1, acc.TestJobsToday, "a refused order counts no job")

		// The same day's reads keep the value set; the next day's refill brings the allowance back,
		// down from a larger value too.
		acc, err = s.RefillTestCredits(ctx, twin.ID, now)
		require.NoError(t, err)
		require.Zero(t, acc.CreditBalance)
		_, err = s.SetTestCredits(ctx, twin.ID, 250_000, now)
		require.NoError(t, err)
		tomorrow := now.Add(24 * time.Hour)
		acc, err = s.RefillTestCredits(ctx, twin.ID, tomorrow)
		require.NoError(t, err)
		require.EqualValues(t, models.TestDailyCredits, acc.CreditBalance)
		assertLedgerMatches(t, db, twin.ID)

		// Set on a day not yet started: the day starts first, so its refill does not undo the value.
		later := tomorrow.Add(24 * time.Hour)
		acc, err = s.SetTestCredits(ctx, twin.ID, 7, later)
		require.NoError(t, err)
		require.EqualValues(t, 7, acc.CreditBalance)
		acc, err = s.RefillTestCredits(ctx, twin.ID, later)
		require.NoError(t, err)
		require.EqualValues(t, 7, acc.CreditBalance)
		assertLedgerMatches(t, db, twin.ID)

		_, err = s.SetTestCredits(ctx, live.ID, 0, now)
		require.ErrorIs(t, err, models.ErrNotFound, "a live account has no test balance")
		_, err = s.SetTestCredits(ctx, models.NewID(), 0, now)
		require.ErrorIs(t, err, models.ErrNotFound)
		_, err = s.SetTestCredits(ctx, twin.ID, -1, now)
		require.Error(t, err)
		liveAcc := assertLedgerMatches(t, db, live.ID)
		require.EqualValues(t, 50, liveAcc.CreditBalance, "the live balance is untouched")
	})
}

// The quota's edge: at TestDailyJobs-2 jobs run, two one-job orders fit and the next does not,
// creating nothing; an order larger than what is left is refused whole; the next day it resets.
func TestTestQuotaEdge(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 0)
		now := time.Now().UTC()
		setJobsToday(t, db, twin.ID, models.TestDailyJobs-2, now)
		for range 2 {
			order, jobs := testOrderOf(twin.ID, 1, 1, now)
			require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, now, nil))
		}
		order, jobs := testOrderOf(twin.ID, 1, 1, now)
		err := s.PlaceTestOrder(ctx, order, jobs, now, nil)
		require.True(t, errors.Is(err, models.ErrTestQuotaExceeded), "err = %v", err)
		require.EqualValues(t, 2, countOrders(t, db, twin.ID))
		acc := assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, models.TestDailyJobs, acc.TestJobsToday)
		require.EqualValues(t, models.TestDailyCredits-2, acc.CreditBalance)

		setJobsToday(t, db, twin.ID, models.TestDailyJobs-2, now)
		order, jobs = testOrderOf(twin.ID, 3, 1, now)
		err = s.PlaceTestOrder(ctx, order, jobs, now, nil)
		require.True(t, errors.Is(err, models.ErrTestQuotaExceeded), "a 3-job order with 2 left: err = %v", err)
		require.EqualValues(t, 2, countOrders(t, db, twin.ID))

		tomorrow := now.Add(24 * time.Hour)
		order, jobs = testOrderOf(twin.ID, 3, 1, tomorrow)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, tomorrow, nil))
		acc = assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, 3, acc.TestJobsToday)
		require.EqualValues(t, models.TestDailyCredits-3, acc.CreditBalance)
	})
}

// Orders placed at once near the quota: exactly what is left is accepted, on both databases.
func TestTestQuotaUnderConcurrency(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 0)
		now := time.Now().UTC()
		const left, senders = 5, 16
		setJobsToday(t, db, twin.ID, models.TestDailyJobs-left, now)
		var wg sync.WaitGroup
		errs := make([]error, senders)
		for i := range senders {
			wg.Go(func() {
				order, jobs := testOrderOf(twin.ID, 1, 2, now)
				errs[i] = s.PlaceTestOrder(ctx, order, jobs, now, nil)
			})
		}
		wg.Wait()
		accepted := 0
		for _, err := range errs {
			if err == nil {
				accepted++
				continue
			}
			require.True(t, errors.Is(err, models.ErrTestQuotaExceeded), "err = %v", err)
		}
		require.Equal(t, left, accepted)
		require.EqualValues(t, left, countOrders(t, db, twin.ID))
		acc := assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, models.TestDailyJobs, acc.TestJobsToday)
		require.EqualValues(t, models.TestDailyCredits-2*left, acc.CreditBalance)
		require.EqualValues(t, 2*left, acc.CreditsReserved)
	})
}

// Orders placed at once on the first moment of a day: the day is refilled once, whichever order
// gets there first, and every order is counted.
func TestTestDayStartsOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 0)
		now := time.Now().UTC()
		first, firstJobs := testOrderOf(twin.ID, 1, 100, now)
		require.NoError(t, s.PlaceTestOrder(ctx, first, firstJobs, now, nil))
		tomorrow := now.Add(24 * time.Hour)
		const senders = 8
		var wg sync.WaitGroup
		errs := make([]error, senders)
		for i := range senders {
			wg.Go(func() {
				order, jobs := testOrderOf(twin.ID, 1, 3, tomorrow)
				errs[i] = s.PlaceTestOrder(ctx, order, jobs, tomorrow, nil)
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		acc := assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, senders, acc.TestJobsToday)
		require.EqualValues(t, models.TestDailyCredits-3*senders, acc.CreditBalance)
		require.EqualValues(t, 100+3*senders, acc.CreditsReserved)
		var adjusts []models.LedgerEntry
		require.NoError(t, db.Where("account_id = ? AND kind = ?", twin.ID, models.LedgerAdjust).Find(&adjusts).Error)
		require.Len(t, adjusts, 1, "one refill")
		require.EqualValues(t, 100, adjusts[0].BalanceDelta)
	})
}

// The test day only goes forward: around midnight UTC, a process whose clock is a few milliseconds
// behind another's (or that read its clock before the other's request committed) finds the new
// day started and leaves it, so it neither undoes a PUT /test/credits of the new day nor resets
// its job count (docs/test-mode.md: the refill "happens once a day however many requests race for
// it"); and a test job it counts goes into the new day's count.
func TestTestDayNeverGoesBack(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 50)
		now := time.Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)

		// Process A, just past midnight: the client sets its test balance to 0 to rehearse a 402,
		// and one test job is counted.
		_, err := s.SetTestCredits(ctx, twin.ID, 0, midnight.Add(time.Millisecond))
		require.NoError(t, err)
		setJobsToday(t, db, twin.ID, 999, midnight.Add(time.Millisecond))

		// Process B, whose clock is 2 ms behind A's, reads the balance (GET /account's refill).
		got, err := s.RefillTestCredits(ctx, twin.ID, midnight.Add(-time.Millisecond))
		require.NoError(t, err)
		require.EqualValues(t, 0, got.CreditBalance, "a read on the previous day refilled the balance the client set for the new day")
		require.Equal(t, 999, got.TestJobsToday, "a read on the previous day reset the new day's job count")
		require.Equal(t, models.TestDay(midnight), got.TestDay, "the twin's day went back")
	})
}

// A test day far in the future (written by a process whose clock had jumped ahead, or by an
// installation whose clock was once wrong) does not freeze the twin's day until real time reaches
// it: a day beyond the database's tomorrow is not believed, so today's first read or order starts
// today (the balance refilled, the count reset); and a process whose own clock is that far ahead
// works in the database's day instead of writing its own.
func TestFarFutureTestDayDoesNotFreezeTheTwin(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 0)
		now := time.Now().UTC()
		future := time.Date(2999, 1, 1, 12, 0, 0, 0, time.UTC)
		farFuture := func() {
			t.Helper()
			_, err := s.SetTestCredits(ctx, twin.ID, 3, now)
			require.NoError(t, err)
			setJobsToday(t, db, twin.ID, models.TestDailyJobs, future)
		}

		// A balance read today refills.
		farFuture()
		got, err := s.RefillTestCredits(ctx, twin.ID, now)
		require.NoError(t, err)
		require.Equal(t, models.TestDay(now), got.TestDay, "the far-future day was kept")
		require.EqualValues(t, models.TestDailyCredits, got.CreditBalance, "today's credits")
		require.Zero(t, got.TestJobsToday, "today's count")
		assertLedgerMatches(t, db, twin.ID)

		// So does today's first order, which the stored day's spent quota does not refuse.
		farFuture()
		order, jobs := testOrderOf(twin.ID, 2, 5, now)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, now, nil))
		acc := assertLedgerMatches(t, db, twin.ID)
		require.Equal(t, models.TestDay(now), acc.TestDay)
		require.Equal(t, 2, acc.TestJobsToday)
		require.EqualValues(t, models.TestDailyCredits-10, acc.CreditBalance)

		// And PUT /test/credits: the value set holds for today, not undone by a refill.
		farFuture()
		got, err = s.SetTestCredits(ctx, twin.ID, 42, now)
		require.NoError(t, err)
		require.Equal(t, models.TestDay(now), got.TestDay)
		got, err = s.RefillTestCredits(ctx, twin.ID, now)
		require.NoError(t, err)
		require.EqualValues(t, 42, got.CreditBalance)

		// A process whose clock is far ahead counts into the database's day and records no future
		// day, so the others keep theirs: today's count grows, the balance is not refilled.
		order, jobs = testOrderOf(twin.ID, 1, 2, future)
		require.NoError(t, s.PlaceTestOrder(ctx, order, jobs, future, nil))
		got, err = s.RefillTestCredits(ctx, twin.ID, future)
		require.NoError(t, err)
		require.Equal(t, models.TestDay(now), got.TestDay, "a future clock wrote its day")
		require.Equal(t, 1, got.TestJobsToday)
		require.EqualValues(t, 40, got.CreditBalance)
		got, err = s.RefillTestCredits(ctx, twin.ID, now)
		require.NoError(t, err)
		require.EqualValues(t, 40, got.CreditBalance, "today's balance was refilled again")
		assertLedgerMatches(t, db, twin.ID)
	})
}

// A refusal by the test quota names the day refused and the database's time, so that when the
// quota resets is the database's reckoning whatever the clock of the process that asked: the
// midnight UTC ending the later of that day and the database's, on both databases.
func TestTestQuotaRefusalCarriesTheDatabasesClock(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		_, twin := testTwin(t, db, 0)
		dbNow := time.Now().UTC()
		midnight := time.Date(dbNow.Year(), dbNow.Month(), dbNow.Day()+1, 0, 0, 0, 0, time.UTC)
		yesterday, tomorrow := dbNow.AddDate(0, 0, -1), dbNow.AddDate(0, 0, 1)
		for _, tc := range []struct {
			name       string
			recorded   time.Time // the day whose quota is spent
			clock      time.Time // the asking process's
			day        time.Time
			resetsAt   time.Time
			retryAfter time.Duration
		}{
			{"a clock far ahead", dbNow, time.Date(2999, 1, 1, 20, 0, 0, 0, time.UTC), dbNow, midnight, time.Until(midnight)},
			{"a clock far behind", dbNow, time.Date(2001, 1, 1, 3, 0, 0, 0, time.UTC), dbNow, midnight, time.Until(midnight)},
			// Another process a little ahead started the database's tomorrow and spent it: its
			// quota resets when that day ends.
			{"tomorrow started", tomorrow, dbNow, tomorrow, midnight.AddDate(0, 0, 1), time.Until(midnight) + 24*time.Hour},
			// A process a little behind counts into a day that is over: the next midnight.
			{"yesterday's clock", yesterday, yesterday, yesterday, midnight, time.Until(midnight)},
		} {
			setJobsToday(t, db, twin.ID, models.TestDailyJobs, tc.recorded)
			order, jobs := testOrderOf(twin.ID, 1, 1, tc.clock)
			err := s.PlaceTestOrder(ctx, order, jobs, tc.clock, nil)
			var quota *models.TestQuotaError
			require.ErrorAs(t, err, &quota, tc.name)
			require.ErrorIs(t, err, models.ErrTestQuotaExceeded, tc.name)
			require.Equal(t, twin.ID, quota.AccountID, tc.name)
			require.Equal(t, models.TestDay(tc.day), quota.Day, tc.name)
			require.WithinDuration(t, time.Now(), quota.DBNow, 30*time.Second, "%s: the database's time", tc.name)
			require.Equal(t, tc.resetsAt, quota.ResetsAt(), tc.name)
			require.InDelta(t, tc.retryAfter.Seconds(), quota.RetryAfter().Seconds(), 30, tc.name)
		}
	})
}

// clockPool is a connection pool whose SQLite clock ('now') moves between statements as times
// says: the first statement that reads it sees times[0], the next times[1], and so on, the last
// ones the last time. It is how a test puts a midnight between two statements of one call.
type clockPool struct {
	gorm.ConnPool
	mu    *sync.Mutex
	times []time.Time
	reads *int
}

func (p clockPool) at(query string) string {
	if !strings.Contains(query, "'now'") {
		return query
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.times[min(*p.reads, len(p.times)-1)]
	*p.reads++
	return strings.ReplaceAll(query, "'now'", "'"+at.UTC().Format("2006-01-02 15:04:05.000")+"'")
}

func (p clockPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.ConnPool.PrepareContext(ctx, p.at(query))
}

func (p clockPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.ConnPool.ExecContext(ctx, p.at(query), args...)
}

func (p clockPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.ConnPool.QueryContext(ctx, p.at(query), args...)
}

func (p clockPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.ConnPool.QueryRowContext(ctx, p.at(query), args...)
}

// BeginTx begins a transaction whose statements see the same moving clock.
func (p clockPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.ConnPool.(gorm.TxBeginner).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &clockTx{clockPool: clockPool{ConnPool: tx, mu: p.mu, times: p.times, reads: p.reads}, tx: tx}, nil
}

type clockTx struct {
	clockPool
	tx *sql.Tx
}

func (t *clockTx) Commit() error   { return t.tx.Commit() }
func (t *clockTx) Rollback() error { return t.tx.Rollback() }

// A refusal by the test quota is timed by the database's clock of the statement that refused, on
// SQLite too, whose 'now' is each statement's own: with the refusing count a millisecond before
// midnight and the database's next statements a millisecond after it, the refusal names the day
// refused and that count's time, so the quota resets in a moment, not in a day. (PostgreSQL's
// now() is the transaction's start, one time for every statement, which no pool can move.)
func TestTestQuotaRefusalTimesTheRefusingStatement(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	_, twin := testTwin(t, db, 0)
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	beforeMidnight, afterMidnight := day.Add(24*time.Hour-time.Millisecond), day.Add(24*time.Hour+time.Millisecond)
	setJobsToday(t, db, twin.ID, models.TestDailyJobs, day)

	moving := db.Session(&gorm.Session{NewDB: true})
	moving.Statement.ConnPool = clockPool{ConnPool: db.Statement.ConnPool, mu: &sync.Mutex{},
		times: []time.Time{beforeMidnight, afterMidnight}, reads: new(int)}
	clock := beforeMidnight.Add(-time.Millisecond) // the process's, in the same day
	order, jobs := testOrderOf(twin.ID, 1, 1, clock)
	err := models.NewStore(moving).PlaceTestOrder(t.Context(), order, jobs, clock, nil)
	var quota *models.TestQuotaError
	require.ErrorAs(t, err, &quota)
	require.Equal(t, models.TestDay(day), quota.Day)
	require.Equal(t, beforeMidnight, quota.DBNow, "the database's time of the refusing count")
	require.Equal(t, day.Add(24*time.Hour), quota.ResetsAt())
	require.Equal(t, time.Second, quota.RetryAfter(), "the quota resets a millisecond later: the least Retry-After")
}
