package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Test credits and the test quota (docs/test-mode.md, "Test credits and quota"). A test twin's
// account holds TestDailyCredits available at the start of each UTC day and runs at most
// TestDailyJobs jobs a day. Both are kept lazily, by accounts.test_day: the first order, balance
// read or balance change of a new day refills the balance to the day's allowance (an adjust
// entry in the ledger, so the ledger's sums stay the balance; reserved credits are untouched) and
// resets the day's job count. Live accounts never pass through here.

// ErrTestQuotaExceeded is returned, with nothing created, when an order would take a test twin
// past TestDailyJobs jobs in its UTC day.
var ErrTestQuotaExceeded = errors.New("test quota exceeded")

// TestQuotaError is the refusal of jobs past a twin's test quota, with when the quota resets by
// the database's clock, which bounds the test day (testDayOf), so that the refusal's Retry-After
// does not depend on the clock of the process that asked. errors.Is(err, ErrTestQuotaExceeded)
// holds.
type TestQuotaError struct {
	AccountID string
	// Day is the twin's recorded test day (YYYY-MM-DD) whose jobs are spent.
	Day string
	// DBNow is the database's time in the refusing transaction (on PostgreSQL its start, the now()
	// its statements bounded the day by).
	DBNow time.Time
}

func (e *TestQuotaError) Error() string {
	return fmt.Sprintf("%v: %d jobs of the UTC day %s", ErrTestQuotaExceeded, TestDailyJobs, e.Day)
}

// Unwrap makes errors.Is(err, ErrTestQuotaExceeded) hold.
func (e *TestQuotaError) Unwrap() error { return ErrTestQuotaExceeded }

// ResetsAt is when the twin's next jobs fit: the midnight UTC that ends Day, or, when Day is
// already over by the database's clock (counted into by a process whose clock is behind), the one
// that ends the database's day.
func (e *TestQuotaError) ResetsAt() time.Time {
	u := e.DBNow.UTC()
	end := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	if day, err := time.Parse(time.DateOnly, e.Day); err == nil && !day.AddDate(0, 0, 1).Before(end) {
		end = day.AddDate(0, 0, 1)
	}
	return end
}

// RetryAfter is the time from DBNow to ResetsAt: at least a second.
func (e *TestQuotaError) RetryAfter() time.Duration {
	return max(e.ResetsAt().Sub(e.DBNow), time.Second)
}

// Notes of the adjust entries.
const (
	noteTestRefill = "test credits of the day"
	noteTestSet    = "test credits set by the client"
)

// PlaceTestOrder is PlaceOrder for an order of a test twin (order.TestMode), at now: in one
// transaction it refills the twin's day when now starts a new one, counts the order's jobs against
// the day's quota with one conditional UPDATE (ErrTestQuotaExceeded when they do not fit), creates
// the order, its jobs and their reservation (ErrInsufficientCredits when the balance is short)
// and runs inTx; any refusal or error undoes it all. Concurrent orders of one twin serialize on its
// account row, so the quota is exact.
func (s *Store) PlaceTestOrder(ctx context.Context, order *Order, jobs []Job, now time.Time, inTx func(tx *Store) error) error {
	done, err := s.reserving(ctx, order.AccountID)
	if err != nil {
		return err
	}
	defer done()
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		if err := countTestJobs(db, order.AccountID, len(jobs), now); err != nil {
			return err
		}
		if err := CreateOrder(db, order, jobs); err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
}

// CountTestJobs counts n jobs of the test twin accountID against the quota of its day of now, in
// the caller's transaction (a support re-run of a test job; an order's count is PlaceTestOrder's):
// the day is started first when now begins a new one, and ErrTestQuotaExceeded, with nothing
// counted, when the jobs do not fit.
func (s *Store) CountTestJobs(ctx context.Context, accountID string, n int, now time.Time) error {
	return countTestJobs(s.conn(ctx), accountID, n, now)
}

// countTestJobs adds n jobs to the twin's count of the day of now (or of a later day another
// process's clock already started), or returns a *TestQuotaError (ErrTestQuotaExceeded) naming
// the day refused and the database's time. The common case is one UPDATE (on SQLite after the
// read of the database's clock, dbClock); when it takes no row the day may have turned, so the
// day is refilled (by whichever transaction gets there first) and the count tried once more.
// Every statement, the refusal's included, is of one database time.
func countTestJobs(db *gorm.DB, accountID string, n int, now time.Time) error {
	c, err := dbClock(db)
	if err != nil {
		return err
	}
	day, dbTomorrow := testDayOf(c, now)
	count := func() (bool, error) {
		res := db.Model(&Account{}).
			Where("id = ? AND test_day >= "+day.SQL+" AND test_day <= "+dbTomorrow+" AND test_jobs_today + ? <= ?",
				append(append([]any{accountID}, day.Vars...), n, TestDailyJobs)...).
			Update("test_jobs_today", gorm.Expr("test_jobs_today + ?", n))
		return res.RowsAffected == 1, res.Error
	}
	ok, err := count()
	if err != nil || ok {
		return err
	}
	if _, err := refillTestDay(db, c, accountID, now); err != nil {
		return err
	}
	if ok, err = count(); err != nil || ok {
		return err
	}
	return testQuotaRefusal(db, c, accountID)
}

// testQuotaRefusal is the refusal of jobs past the quota of the twin accountID, whose row the
// caller's transaction holds: its recorded day and the time of the database's clock c, the one
// the refusing count was of, read in that transaction.
func testQuotaRefusal(db *gorm.DB, c dbClockSQL, accountID string) error {
	var row struct {
		TestDay string
		DBNow   string
	}
	if err := db.Model(&Account{}).Select("test_day, "+c.now+" AS db_now").Where("id = ?", accountID).
		Take(&row).Error; err != nil {
		return orNotFound(err)
	}
	dbNow, err := time.Parse(time.RFC3339Nano, row.DBNow)
	if err != nil {
		return fmt.Errorf("the database's time %q: %w", row.DBNow, err)
	}
	return &TestQuotaError{AccountID: accountID, Day: row.TestDay, DBNow: dbNow}
}

// refillTestDay starts the day of now for the twin when it has not started yet: it records the
// day, resets the day's job count and sets the available balance to TestDailyCredits. It reports
// whether it did. The conditional UPDATE that records the day lets one transaction do it (and
// holds the account's row for it); the others find the day started. c is the database's clock
// (dbClock).
func refillTestDay(db *gorm.DB, c dbClockSQL, accountID string, now time.Time) (bool, error) {
	day, dbTomorrow := testDayOf(c, now)
	// Only forward: a process whose clock is a little behind another's, just past midnight, finds
	// the new day started and leaves it (its refill would undo a PUT /test/credits of the new day
	// and reset its count). Days are YYYY-MM-DD, which sort as text as they do in time. A recorded
	// day beyond the database's tomorrow is no day that started: it was written by a clock far
	// ahead, and keeping it would freeze the twin's day until real time reached it.
	where := "id = ? AND test_mode = ? AND (test_day < " + day.SQL + " OR test_day > " + dbTomorrow + ")"
	res := db.Model(&Account{}).Where(where, append([]any{accountID, true}, day.Vars...)...).
		Updates(map[string]any{"test_day": day, "test_jobs_today": 0, "updated_at": now.UTC()})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, setTestBalance(db, accountID, TestDailyCredits, noteTestRefill, now)
}

// testDayOf is the test day of now as SQL for a statement of db, and the database's UTC tomorrow
// (SQL, no arguments). The day is now's UTC day (engine.Config.Now's, which tests move across
// midnight) when it is within a day of the database's (its yesterday to its tomorrow), which
// leaves room for clocks a little apart around midnight. Further away it is a clock far off, and
// the database's own UTC day is taken instead: a clock far ahead neither records a future day nor
// counts into one, and a clock far behind, whose day is older than any the twin recorded, still
// starts the database's day when it comes (refilling the twin) instead of never refilling it.
func testDayOf(c dbClockSQL, now time.Time) (day clause.Expr, dbTomorrow string) {
	d := TestDay(now)
	return gorm.Expr("(CASE WHEN ? BETWEEN "+c.yesterday+" AND "+c.tomorrow+" THEN ? ELSE "+c.today+" END)", d, d), c.tomorrow
}

// dbClockSQL are SQL expressions of the database's clock in UTC: its day, the one before and the
// next (YYYY-MM-DD) and its time (RFC 3339, "Z").
type dbClockSQL struct{ yesterday, today, tomorrow, now string }

// dbClock is the database clock's SQL for statements of db, one time for all of them. On
// PostgreSQL now() is the transaction's start, the same for every statement of it. SQLite's 'now'
// is each statement's own: a count refused a millisecond before midnight and the refusal's read
// of the time a millisecond after it would report a day to wait instead of a moment. So on SQLite
// the clock is read here, once, and the statements are of that time (a literal, written from the
// parsed time).
func dbClock(db *gorm.DB) (dbClockSQL, error) {
	if db.Dialector.Name() == "postgres" {
		return dbClockSQL{
			yesterday: "to_char((now() AT TIME ZONE 'UTC') - interval '1 day', 'YYYY-MM-DD')",
			today:     "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
			tomorrow:  "to_char((now() AT TIME ZONE 'UTC') + interval '1 day', 'YYYY-MM-DD')",
			now:       `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
		}, nil
	}
	const layout = "2006-01-02 15:04:05.000" // SQLite's time value, to the millisecond as its clock
	var read string
	if err := db.Raw("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')").Scan(&read).Error; err != nil {
		return dbClockSQL{}, fmt.Errorf("the database's time: %w", err)
	}
	at, err := time.Parse(layout, read)
	if err != nil {
		return dbClockSQL{}, fmt.Errorf("the database's time %q: %w", read, err)
	}
	t := "'" + at.Format(layout) + "'"
	return dbClockSQL{yesterday: "date(" + t + ", '-1 day')", today: "date(" + t + ")", tomorrow: "date(" + t + ", '+1 day')",
		now: "strftime('%Y-%m-%dT%H:%M:%fZ', " + t + ")"}, nil
}

// setTestBalance sets the available balance of a test twin whose row the caller's transaction
// holds to available, with an adjust ledger entry of the difference (none when there is none).
func setTestBalance(db *gorm.DB, accountID string, available int64, note string, now time.Time) error {
	var acc Account
	if err := db.Select("credit_balance").Where("id = ?", accountID).Take(&acc).Error; err != nil {
		return orNotFound(err)
	}
	delta := available - acc.CreditBalance
	if delta == 0 {
		return nil
	}
	res := db.Model(&Account{}).Where("id = ? AND credit_balance = ?", accountID, acc.CreditBalance).Updates(map[string]any{
		"credit_balance": available, "updated_at": now.UTC(),
	})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("test balance of account %s changed while it was held", accountID)
	}
	return db.Create(&LedgerEntry{
		ID: NewID(), AccountID: accountID, Kind: LedgerAdjust, BalanceDelta: delta, Note: note, CreatedAt: now.UTC(),
	}).Error
}

// RefillTestCredits starts the test twin's day of now if it has not started (refillTestDay) and
// returns the account as it then is; ErrNotFound when there is no such account. A live account is
// returned as it is.
func (s *Store) RefillTestCredits(ctx context.Context, accountID string, now time.Time) (*Account, error) {
	var acc *Account
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		c, err := dbClock(db)
		if err != nil {
			return err
		}
		if _, err := refillTestDay(db, c, accountID, now); err != nil {
			return err
		}
		acc, err = GetAccount(db, accountID)
		return err
	})
	return acc, err
}

// SetTestCredits sets the available balance of the test twin accountID to available (an adjust
// ledger entry; reserved credits are untouched), after starting its day of now if needed, so the
// day's refill never overwrites it later that day. It returns the account; ErrNotFound when there
// is no such test twin (a live account included).
func (s *Store) SetTestCredits(ctx context.Context, accountID string, available int64, now time.Time) (*Account, error) {
	if available < 0 {
		return nil, fmt.Errorf("test balance must not be negative, got %d", available)
	}
	var acc *Account
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		// Take the twin's row first: the balance read next cannot move under the new value.
		res := db.Model(&Account{}).Where("id = ? AND test_mode = ?", accountID, true).Update("updated_at", now.UTC())
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		c, err := dbClock(db)
		if err != nil {
			return err
		}
		if _, err := refillTestDay(db, c, accountID, now); err != nil {
			return err
		}
		if err := setTestBalance(db, accountID, available, noteTestSet, now); err != nil {
			return err
		}
		acc, err = GetAccount(db, accountID)
		return err
	})
	return acc, err
}
