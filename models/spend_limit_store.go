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

// spendStatus is the status of limits at now.
func spendStatus(l SpendLimits, now time.Time) SpendStatus {
	st := SpendStatus{MonthlyCredits: l.SpendLimitMonthly, AlertPercent: l.SpendAlertPercent, ResetsAt: SpendResetsAt(now)}
	if l.SpendMonth == SpendMonth(now) {
		st.Used = l.SpendUsed
	}
	return st
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

// The SQL of a month's spend on the row being updated, for the month bound as its parameter.
const (
	spendUsedSQL = "(CASE WHEN spend_month = ? THEN spend_used ELSE 0 END)"
	// spendFitsSQL holds when total (the second parameter) fits the limit: trivially without one.
	spendFitsSQL = "(spend_limit_monthly IS NULL OR " + spendUsedSQL + " + ? <= spend_limit_monthly)"
)

// spendFits is the condition that total credits fit the row's limit in month.
func spendFits(month string, total int64) (string, []any) {
	return spendFitsSQL, []any{month, total}
}

// spendAdd is the change of a row's spend counters that adds total to month's spend.
func spendAdd(update map[string]any, month string, total int64) map[string]any {
	update["spend_used"] = gorm.Expr(spendUsedSQL+" + ?", month, total)
	update["spend_month"] = month
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

// overLimit is the refusal of total credits by the limits l in month, or nil when they fit.
func overLimit(l SpendLimits, month string, total int64, now time.Time) *SpendLimitError {
	if l.SpendLimitMonthly == nil {
		return nil
	}
	used := int64(0)
	if l.SpendMonth == month {
		used = l.SpendUsed
	}
	if used+total <= *l.SpendLimitMonthly {
		return nil
	}
	return &SpendLimitError{Limit: *l.SpendLimitMonthly, AlertPercent: l.SpendAlertPercent, Used: used, ResetsAt: SpendResetsAt(now)}
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
