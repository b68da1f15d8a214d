package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Alerts (migration 0025, docs/api-guide.md "Alerts"): credits.low when an account's available
// balance first falls below a threshold of the account or of one of its installations, and
// spend_limit.alert when a month's spend first passes the alert percentage of a limit. Only a
// reservation lowers a balance and raises a spend, and it holds the account's row, so its own
// before and after tell a crossing exactly, once: the reservation queues one PendingAlert per
// crossing in its own statement or transaction (createOrder, reserveForJobs), and TakePendingAlerts
// turns them into events. spend_limit.reached is sent on a refusal (MarkSpendLimitReached).

// Alert event names.
const (
	AlertCreditsLow        = "credits.low"
	AlertSpendLimit        = "spend_limit.alert"
	AlertSpendLimitReached = "spend_limit.reached"
)

// PendingAlert is an alert a reservation queued and no event records yet.
type PendingAlert struct {
	ID             int64 `gorm:"primaryKey"`
	AccountID      string
	InstallationID *string // nil: the account's own alert
	Event          string  // AlertCreditsLow or AlertSpendLimit
	Threshold      *int64  // credits.low: the threshold passed
	Balance        *int64  // credits.low: the available balance after the reservation
	SpendLimit     *int64  // spend_limit.alert: the monthly limit
	AlertPercent   *int    // spend_limit.alert: the percentage passed
	SpendUsed      *int64  // spend_limit.alert: the month's spend after the reservation
	Month          string  // the month (YYYY-MM) of the reservation; a spend alert's, the month its spend counts
	CreatedAt      time.Time
}

// crossedBelow reports whether a balance that went from before to after fell below threshold t.
func crossedBelow(t *int64, before, after int64) bool {
	return t != nil && after < *t && before >= *t
}

// crossedPercent reports whether a spend that went from before to after passed pct percent of limit.
func crossedPercent(limit *int64, pct int, before, after int64) bool {
	return limit != nil && after*100 >= int64(pct)**limit && before*100 < int64(pct)**limit
}

func lowAlert(accountID string, installationID *string, threshold, balance int64, month string, now time.Time) PendingAlert {
	return PendingAlert{AccountID: accountID, InstallationID: installationID, Event: AlertCreditsLow,
		Threshold: &threshold, Balance: &balance, Month: month, CreatedAt: now}
}

// spendAlert is the spend_limit.alert of the limits l as a reservation left them, of the month the
// reservation counted into (l.SpendMonth: the next one when another process's clock started it).
func spendAlert(accountID string, installationID *string, l SpendLimits, now time.Time) PendingAlert {
	pct, used := l.SpendAlertPercent, l.SpendUsed
	return PendingAlert{AccountID: accountID, InstallationID: installationID, Event: AlertSpendLimit,
		SpendLimit: l.SpendLimitMonthly, AlertPercent: &pct, SpendUsed: &used, Month: l.SpendMonth, CreatedAt: now}
}

// accountAlertColumns and installationAlertColumns are what queueReservationAlerts needs of an
// account and an installation after a reservation, which the reservation's UPDATEs return.
var (
	accountAlertColumns = []string{"id", "credit_balance", "low_balance_threshold", "low_balance_watch",
		"spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used"}
	installationAlertColumns = []string{"id", "spend_limit_monthly", "spend_alert_percent", "spend_month", "spend_used"}
)

// returning is the RETURNING clause of columns.
func returning(columns []string) clause.Returning {
	r := clause.Returning{Columns: make([]clause.Column, len(columns))}
	for i, c := range columns {
		r.Columns[i] = clause.Column{Name: c}
	}
	return r
}

// queueReservationAlerts queues the alerts of a reservation of total credits of month that has just
// been made in tx, given the account and, for a plugin order, the installation as the reservation's
// UPDATEs returned them (accountAlertColumns, installationAlertColumns; the rows are held by tx),
// and returns the account's available balance after it and how many alerts it queued. It is the
// statement-by-statement twin of the alert queries of createOrder's one statement.
func queueReservationAlerts(tx *gorm.DB, acc *Account, inst *Installation, total int64, month string, now time.Time) (int64, int, error) {
	accountID := acc.ID
	after := acc.CreditBalance
	before := after + total
	var alerts []PendingAlert
	if crossedBelow(acc.LowBalanceThreshold, before, after) {
		alerts = append(alerts, lowAlert(accountID, nil, *acc.LowBalanceThreshold, after, month, now))
	}
	if acc.LowBalanceWatch != nil && after < *acc.LowBalanceWatch {
		var insts []Installation
		if err := tx.Select("id", "low_balance_threshold").
			Where("account_id = ? AND low_balance_threshold > ? AND low_balance_threshold <= ?", accountID, after, before).
			Order("id").Find(&insts).Error; err != nil {
			return 0, 0, err
		}
		for i := range insts {
			alerts = append(alerts, lowAlert(accountID, &insts[i].ID, *insts[i].LowBalanceThreshold, after, month, now))
		}
	}
	if crossedPercent(acc.SpendLimitMonthly, acc.SpendAlertPercent, acc.SpendUsed-total, acc.SpendUsed) {
		alerts = append(alerts, spendAlert(accountID, nil, acc.SpendLimits, now))
	}
	if inst != nil {
		if crossedPercent(inst.SpendLimitMonthly, inst.SpendAlertPercent, inst.SpendUsed-total, inst.SpendUsed) {
			alerts = append(alerts, spendAlert(accountID, &inst.ID, inst.SpendLimits, now))
		}
	}
	if len(alerts) > 0 {
		if err := tx.Create(&alerts).Error; err != nil {
			return 0, 0, fmt.Errorf("queue alerts: %w", err)
		}
	}
	return after, len(alerts), nil
}

// alertQueries are the data-modifying WITH query of createOrder's one statement that queues the
// alerts of its reservation, reading the reservation's RETURNING (reserve: the account after it)
// and, for a plugin order, the installation's (inst): the same rows queueReservationAlerts writes.
// Its parameters are total (four times), month and now, in that order of appearance.
const alertQueriesSQL = `INSERT INTO pending_alerts (account_id, installation_id, event, threshold, balance, spend_limit, alert_percent, spend_used, month, created_at) ` +
	`SELECT r.id, NULL::text, 'credits.low', r.low_balance_threshold, r.credit_balance, NULL::bigint, NULL::integer, NULL::bigint, m.month, m.at FROM reserve r, m ` +
	`WHERE r.credit_balance < r.low_balance_threshold AND r.credit_balance + m.total >= r.low_balance_threshold ` +
	`UNION ALL SELECT r.id, i.id, 'credits.low', i.low_balance_threshold, r.credit_balance, NULL, NULL, NULL, m.month, m.at FROM reserve r JOIN installations i ON i.account_id = r.id, m ` +
	`WHERE r.credit_balance < r.low_balance_watch AND r.credit_balance < i.low_balance_threshold AND r.credit_balance + m.total >= i.low_balance_threshold ` +
	`UNION ALL SELECT r.id, NULL, 'spend_limit.alert', NULL, NULL, r.spend_limit_monthly, r.spend_alert_percent, r.spend_used, r.spend_month, m.at FROM reserve r, m ` +
	`WHERE r.spend_used * 100 >= r.spend_alert_percent * r.spend_limit_monthly AND (r.spend_used - m.total) * 100 < r.spend_alert_percent * r.spend_limit_monthly`

// alertQueriesInstSQL is the part of alertQueriesSQL for a plugin order's installation (inst).
const alertQueriesInstSQL = ` UNION ALL SELECT r.id, n.id, 'spend_limit.alert', NULL, NULL, n.spend_limit_monthly, n.spend_alert_percent, n.spend_used, n.spend_month, m.at FROM reserve r, inst n, m ` +
	`WHERE n.spend_used * 100 >= n.spend_alert_percent * n.spend_limit_monthly AND (n.spend_used - m.total) * 100 < n.spend_alert_percent * n.spend_limit_monthly`

// TakePendingAlerts hands the pending alerts of accountID (of every account when "") to fn, at
// most limit of them, oldest first, and deletes them in the same transaction, so each becomes one
// event: fn records them. On PostgreSQL alerts another transaction is taking are skipped. It
// returns how many it took.
func (s *Store) TakePendingAlerts(ctx context.Context, accountID string, limit int, fn func(tx *Store, alerts []PendingAlert) error) (int, error) {
	var n int
	err := s.Tx(ctx, func(tx *Store) error {
		q := tx.conn(ctx).Order("id").Limit(limit)
		if accountID != "" {
			q = q.Where("account_id = ?", accountID)
		}
		if tx.db.Dialector.Name() == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var alerts []PendingAlert
		if err := q.Find(&alerts).Error; err != nil {
			return err
		}
		if len(alerts) == 0 {
			return nil
		}
		if err := fn(tx, alerts); err != nil {
			return err
		}
		ids := make([]int64, len(alerts))
		for i := range alerts {
			ids[i] = alerts[i].ID
		}
		n = len(alerts)
		return tx.conn(ctx).Where("id IN ?", ids).Delete(&PendingAlert{}).Error
	})
	return n, err
}

// MarkSpendLimitReached records that the spend limit of scope, of the account accountID, refused a
// request in month and, when it is the first refusal of the month (since the limit was set), runs
// fn in the same transaction: fn records spend_limit.reached. It reports whether it was the first.
//
// An installation's row is taken after its account's, as a reservation takes them (createOrder),
// in the lock order every path keeps (credits.go).
func (s *Store) MarkSpendLimitReached(ctx context.Context, scope SpendScope, accountID, month string, fn func(tx *Store) error) (bool, error) {
	model, id, err := scope.model()
	if err != nil {
		return false, err
	}
	// A runaway client refused again and again must not take the account's row each time: once the
	// month is marked, a plain read answers.
	var marked struct{ SpendReachedMonth string }
	if err := s.conn(ctx).Model(model).Select("spend_reached_month").Where("id = ?", id).Take(&marked).Error; err != nil {
		return false, orNotFound(err)
	}
	if marked.SpendReachedMonth == month {
		return false, nil
	}
	first := false
	err = s.Tx(ctx, func(tx *Store) error {
		if scope.InstallationID != "" && tx.db.Dialector.Name() == "postgres" {
			var acc Account
			if err := lockAccountRow(tx.conn(ctx)).Select("id").
				Where("id = ?", accountID).Take(&acc).Error; err != nil {
				return orNotFound(err)
			}
		}
		res := tx.conn(ctx).Model(model).Where("id = ? AND spend_reached_month <> ?", id, month).
			Update("spend_reached_month", month)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		first = true
		return fn(tx)
	})
	return first, err
}

// LowBalanceThresholdOf returns the credits.low threshold of scope (nil: none); ErrNotFound when
// there is no such installation or account.
func (s *Store) LowBalanceThresholdOf(ctx context.Context, scope SpendScope) (*int64, error) {
	model, id, err := scope.model()
	if err != nil {
		return nil, err
	}
	var row struct{ LowBalanceThreshold *int64 }
	if err := s.conn(ctx).Model(model).Select("low_balance_threshold").Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, orNotFound(err)
	}
	return row.LowBalanceThreshold, nil
}

// SetLowBalanceThreshold sets (nil: clears) the credits.low threshold of scope and keeps its
// account's low_balance_watch, the highest threshold of the account and its installations, in
// the same transaction; ErrNotFound when there is no such installation or account. The account's
// row is locked first, as a reservation locks it, so no reservation runs between the two updates.
func (s *Store) SetLowBalanceThreshold(ctx context.Context, scope SpendScope, threshold *int64) error {
	model, id, err := scope.model()
	if err != nil {
		return err
	}
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		accountID := scope.AccountID
		if scope.InstallationID != "" {
			var inst Installation
			if err := db.Select("account_id").Where("id = ?", id).Take(&inst).Error; err != nil {
				return orNotFound(err)
			}
			accountID = inst.AccountID
		}
		lock := db.Model(&Account{}).Where("id = ?", accountID)
		if db.Dialector.Name() == "postgres" {
			lock = lockAccountRow(lock)
		}
		var acc Account
		if err := lock.Select("id").Take(&acc).Error; err != nil {
			return orNotFound(err)
		}
		res := db.Model(model).Where("id = ?", id).Updates(map[string]any{"low_balance_threshold": threshold, "updated_at": time.Now().UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return db.Model(&Account{}).Where("id = ?", accountID).Update("low_balance_watch", gorm.Expr(
			"(SELECT MAX(t) FROM (SELECT low_balance_threshold AS t FROM accounts WHERE id = ? "+
				"UNION ALL SELECT low_balance_threshold FROM installations WHERE account_id = ?) AS thresholds)",
			accountID, accountID)).Error
	})
}
