package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Monthly spend limits (migration 0024, docs/api-guide.md "Spend limits (both APIs)"). An
// account and an installation may each hold a limit of credits per UTC calendar month. What a
// month spent (spend_used of spend_month) moves in the reservation's own statement: the UPDATE
// that takes the credits adds them to it, conditional on the limit, so no read before it decides
// and concurrent orders can never pass it. A plugin order counts against its installation and its
// account; an external order against its account. Released credits (failed, cancelled, expired
// jobs) count back when they are released in the month that reserved them.
//
// The month only goes forward. A reservation's month is its process's clock's; around a month's
// end, processes whose clocks are a little apart reserve for the same row, and one whose clock
// still reads the month before may come after one that already counted the next. Its reservation
// then counts into the next month, checked against that month's spend, which it keeps: restarting
// the earlier month would drop what the next had counted and let it pass its limit. A recorded
// month further ahead than the next is no month that started (a clock far off wrote it) and the
// reservation's own month replaces it, so such a clock cannot freeze the count. The release of a
// reservation so counted finds the row counting a month other than its ledger entry's and gives
// nothing back: the later month keeps those credits, never fewer than it took.

// ErrSpendLimitExceeded is returned, with nothing created, when an order would take its account's
// or installation's month past the spend limit; the error is a *SpendLimitError.
var ErrSpendLimitExceeded = errors.New("spend limit exceeded")

// SpendLimitError is the refusal of an order by a spend limit: whose limit, the limit, what the
// month had used before the order and when the month ends.
type SpendLimitError struct {
	InstallationID string // the installation whose limit refused it; empty for the account's
	AccountID      string
	Limit          int64
	AlertPercent   int // the limit's alert threshold (spend_limit.reached tells it)
	Used           int64
	ResetsAt       time.Time
}

func (e *SpendLimitError) Error() string {
	return fmt.Sprintf("spend limit exceeded: %d of %d credits used this month", e.Used, e.Limit)
}

// Unwrap makes errors.Is(err, ErrSpendLimitExceeded) hold.
func (e *SpendLimitError) Unwrap() error { return ErrSpendLimitExceeded }

// Month is the month (YYYY-MM) whose spend refused the order: the one ResetsAt ends, which is the
// next one when another process's clock already began it.
func (e *SpendLimitError) Month() string { return SpendMonth(e.ResetsAt.AddDate(0, -1, 0)) }

// SpendMonth is the UTC month (YYYY-MM) of t.
func SpendMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// SpendResetsAt is the start of the UTC month after t's, when a month's spend starts again from
// zero.
func SpendResetsAt(t time.Time) time.Time {
	u := t.UTC()
	return time.Date(u.Year(), u.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// SpendScope names whose spend limit: an installation's (the plugin API) or an account's (the
// external API); exactly one is set.
type SpendScope struct {
	InstallationID string
	AccountID      string
}

func (s SpendScope) model() (any, string, error) {
	if (s.InstallationID == "") == (s.AccountID == "") {
		return nil, "", fmt.Errorf("spend scope needs exactly one of installation and account")
	}
	if s.InstallationID != "" {
		return &Installation{}, s.InstallationID, nil
	}
	return &Account{}, s.AccountID, nil
}

// SpendStatus is a spend limit as it stands at a moment: Used is the month's spend then (zero when
// the stored month is an earlier one).
type SpendStatus struct {
	MonthlyCredits *int64
	AlertPercent   int
	Used           int64
	ResetsAt       time.Time
}

// spendStatus is the status of limits at now: of the month a reservation at now counts into.
func spendStatus(l SpendLimits, now time.Time) SpendStatus {
	used, resets := countedSpend(l, SpendMonth(now), now)
	return SpendStatus{MonthlyCredits: l.SpendLimitMonthly, AlertPercent: l.SpendAlertPercent, Used: used, ResetsAt: resets}
}

// nextSpendMonth is the month (YYYY-MM) after month.
func nextSpendMonth(month string) string {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return month
	}
	return SpendMonth(t.AddDate(0, 1, 0))
}

// countedSpend is what the limits l have counted of the month a reservation of month (now's)
// counts into, and when that month ends: the recorded spend when the row counts month or the next
// (another process's clock already started it), else zero, as spendUsedSQL reads it.
func countedSpend(l SpendLimits, month string, now time.Time) (int64, time.Time) {
	switch l.SpendMonth {
	case month:
		return l.SpendUsed, SpendResetsAt(now)
	case nextSpendMonth(month):
		return l.SpendUsed, SpendResetsAt(SpendResetsAt(now))
	}
	return 0, SpendResetsAt(now)
}

// SpendLimitOf returns the spend limit of scope at now; ErrNotFound when there is no such
// installation or account.
func (s *Store) SpendLimitOf(ctx context.Context, scope SpendScope, now time.Time) (SpendStatus, error) {
	model, id, err := scope.model()
	if err != nil {
		return SpendStatus{}, err
	}
	var l SpendLimits
	err = s.conn(ctx).Model(model).Select("spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used").
		Where("id = ?", id).Take(&l).Error
	if err != nil {
		return SpendStatus{}, orNotFound(err)
	}
	return spendStatus(l, now), nil
}

// SetSpendLimit sets (monthly not nil) or clears (nil) the spend limit of scope and its alert
// threshold, and returns it as it then is at now; ErrNotFound when there is no such installation
// or account. The month's spend is kept: a limit set mid-month counts what the month already spent,
// and a limit lowered below it refuses every order until the month ends. Orders that hold the row
// when it changes finish first; every order after it is checked against the new limit.
func (s *Store) SetSpendLimit(ctx context.Context, scope SpendScope, monthly *int64, alertPercent int, now time.Time) (SpendStatus, error) {
	model, id, err := scope.model()
	if err != nil {
		return SpendStatus{}, err
	}
	var st SpendStatus
	err = s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		res := db.Model(model).Where("id = ?", id).Updates(map[string]any{
			"spend_limit_monthly": monthly, "spend_alert_percent": alertPercent, "updated_at": now.UTC(),
			// A new limit is one spend_limit.reached has not been sent for yet.
			"spend_reached_month": "",
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		var l SpendLimits
		if err := db.Model(model).Select("spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used").
			Where("id = ?", id).Take(&l).Error; err != nil {
			return err
		}
		st = spendStatus(l, now)
		return nil
	})
	return st, err
}

// The SQL of the spend on the row being updated of the month a reservation of a month counts into,
// for that month and the next bound as its parameters: the row's spend when it counts
// either (the month only goes forward), else zero.
const (
	spendUsedSQL = "(CASE WHEN spend_month = ? OR spend_month = ? THEN spend_used ELSE 0 END)"
	// spendFitsSQL holds when total (the third parameter) fits the limit: trivially without one.
	spendFitsSQL = "(spend_limit_monthly IS NULL OR " + spendUsedSQL + " + ? <= spend_limit_monthly)"
	// spendMonthSQL is the month a reservation counts into: the next one when the row counts it
	// already (its first parameter), else the reservation's (the second).
	spendMonthSQL = "(CASE WHEN spend_month = ? THEN spend_month ELSE ? END)"
)

// spendFits is the condition that total credits fit the row's limit in the month a reservation of
// month counts into.
func spendFits(month string, total int64) (string, []any) {
	return spendFitsSQL, []any{month, nextSpendMonth(month), total}
}

// spendAdd is the change of a row's spend counters that adds total to the spend of the month a
// reservation of month counts into. Both expressions read the row as it was before the UPDATE.
func spendAdd(update map[string]any, month string, total int64) map[string]any {
	next := nextSpendMonth(month)
	update["spend_used"] = gorm.Expr(spendUsedSQL+" + ?", month, next, total)
	update["spend_month"] = gorm.Expr(spendMonthSQL, next, month)
	return update
}

// countInstallationSpend adds total to the installation's spend of month when it fits its limit,
// inside the caller's transaction, and returns the installation's limit and spend as its UPDATE
// left them (installationAlertColumns); the refusal otherwise.
func countInstallationSpend(tx *gorm.DB, installationID string, month string, total int64, now time.Time) (*Installation, error) {
	fits, args := spendFits(month, total)
	var inst Installation
	res := tx.Model(&inst).Clauses(returning(installationAlertColumns)).Where("id = ?", installationID).Where(fits, args...).
		Updates(spendAdd(map[string]any{}, month, total))
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, refusalOf(tx, "", installationID, total, month, now)
	}
	return &inst, nil
}

// refusalOf tells why a reservation of total credits in month was refused, after the fact: a short
// balance (ErrInsufficientCredits) or the limit of the account or of the installation (a
// *SpendLimitError), read as they are now. installationID is empty for an order without one.
func refusalOf(db *gorm.DB, accountID, installationID string, total int64, month string, now time.Time) error {
	err := classifyRefusal(db, accountID, installationID, total, month, now)
	if errors.Is(err, ErrInsufficientCredits) || errors.Is(err, ErrSpendLimitExceeded) || errors.Is(err, ErrNotFound) {
		return err
	}
	// The reservation was refused all the same: the refusal stands, said as a short balance, with
	// why it could not be told apart.
	return fmt.Errorf("%w (the spend limits could not be read: %v)", ErrInsufficientCredits, err)
}

// classifyRefusal is refusalOf, reads failing as they fail. A short balance is told first, as the
// one-statement order tells it (createOrder's outcome 1), then the installation's limit, then the
// account's: the same refusal on either path, whatever the dialect or the order's size.
func classifyRefusal(db *gorm.DB, accountID, installationID string, total int64, month string, now time.Time) error {
	var inst Installation
	if installationID != "" {
		if err := db.Select("id", "account_id", "spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used").
			Where("id = ?", installationID).Take(&inst).Error; err != nil {
			return orNotFound(err)
		}
		if accountID == "" {
			accountID = inst.AccountID
		}
	}
	if accountID == "" {
		return ErrInsufficientCredits
	}
	var acc Account
	if err := db.Select("id", "credit_balance", "spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used").
		Where("id = ?", accountID).Take(&acc).Error; err != nil {
		return orNotFound(err)
	}
	if acc.CreditBalance < total {
		return ErrInsufficientCredits
	}
	if inst.ID != "" {
		if e := overLimit(inst.SpendLimits, month, total, now); e != nil {
			e.InstallationID, e.AccountID = inst.ID, inst.AccountID
			return e
		}
	}
	if e := overLimit(acc.SpendLimits, month, total, now); e != nil {
		e.AccountID = acc.ID
		return e
	}
	return ErrInsufficientCredits
}

// overLimit is the refusal of total credits by the limits l in the month a reservation of month
// counts into, or nil when they fit.
func overLimit(l SpendLimits, month string, total int64, now time.Time) *SpendLimitError {
	if l.SpendLimitMonthly == nil {
		return nil
	}
	used, resets := countedSpend(l, month, now)
	if used+total <= *l.SpendLimitMonthly {
		return nil
	}
	return &SpendLimitError{Limit: *l.SpendLimitMonthly, AlertPercent: l.SpendAlertPercent, Used: used, ResetsAt: resets}
}

// spendMonthOfRun is the month whose spend the reservation of a job run counted in (the month of
// its reserve entry), which its release gives back to the account's and the installation's spend
// if they still count that month (accountSettlement.send); "" when nothing was reserved for the
// run.
func spendMonthOfRun(tx *gorm.DB, j *Job) (string, error) {
	if j.CreditCost <= 0 {
		return "", nil
	}
	var reserved LedgerEntry
	err := tx.Select("created_at").Where("job_id = ? AND run = ? AND kind = ?", j.ID, j.Run, LedgerReserve).
		Order("created_at").Take(&reserved).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", nil // nothing was reserved for this run
	}
	if err != nil {
		return "", err
	}
	return SpendMonth(reserved.CreatedAt), nil
}
