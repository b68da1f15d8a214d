package models

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ErrInsufficientCredits is returned when an account's available balance cannot cover a reservation.
var ErrInsufficientCredits = errors.New("insufficient credits")

// GrantCredits adds amount credits to an account's balance with a grant ledger entry.
func GrantCredits(db *gorm.DB, accountID string, amount int64, note string) error {
	if amount <= 0 {
		return fmt.Errorf("grant amount must be positive, got %d", amount)
	}
	return db.Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Account{}).Where("id = ?", accountID).Updates(map[string]any{
			"credit_balance": gorm.Expr("credit_balance + ?", amount),
			"updated_at":     time.Now().UTC(),
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.Create(&LedgerEntry{
			ID: NewID(), AccountID: accountID, Kind: LedgerGrant,
			BalanceDelta: amount, Note: note, CreatedAt: time.Now().UTC(),
		}).Error
	})
}

// ReservationTotal is what ReserveForJobs reserves for jobs: the sum of their credit costs.
func ReservationTotal(jobs []Job) int64 {
	var total int64
	for _, j := range jobs {
		total += j.CreditCost
	}
	return total
}

// ReserveForJobs holds the cost of every job of a new order, inside the caller's transaction. The
// balance moves with one conditional UPDATE, so concurrent orders can never overdraw the account.
func ReserveForJobs(tx *gorm.DB, accountID, orderID string, jobs []Job) (int64, error) {
	total := ReservationTotal(jobs)
	if total > 0 {
		res := tx.Model(&Account{}).Where("id = ? AND credit_balance >= ?", accountID, total).Updates(reservation(total))
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected == 0 {
			return 0, ErrInsufficientCredits
		}
	}
	entries := reservationEntries(accountID, orderID, jobs)
	if len(entries) > 0 {
		if err := tx.CreateInBatches(entries, insertBatch).Error; err != nil {
			return 0, err
		}
	}
	return total, nil
}

// insertBatch is how many rows one INSERT of jobs or ledger entries holds.
const insertBatch = 200

// reservation is the account's change for a reservation of total credits.
func reservation(total int64) map[string]any {
	return map[string]any{
		"credit_balance":   gorm.Expr("credit_balance - ?", total),
		"credits_reserved": gorm.Expr("credits_reserved + ?", total),
		"updated_at":       time.Now().UTC(),
	}
}

// reservationEntries are the ledger entries of a reservation for jobs: one per job.
func reservationEntries(accountID, orderID string, jobs []Job) []LedgerEntry {
	now := time.Now().UTC()
	entries := make([]LedgerEntry, 0, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		entries = append(entries, LedgerEntry{
			ID: NewID(), AccountID: accountID, OrderID: &orderID, JobID: &j.ID, Run: j.Run,
			Kind: LedgerReserve, BalanceDelta: -j.CreditCost, ReservedDelta: j.CreditCost, CreatedAt: now,
		})
	}
	return entries
}

// PlaceOrder creates a new order, its jobs and their reservation (CreateOrder) and runs inTx,
// when not nil, in the same transaction: an error from inTx undoes the order. It returns
// ErrInsufficientCredits, and creates nothing, when the balance is short.
//
// An order that CreateOrder writes in one statement (PostgreSQL, up to insertBatch jobs) and that
// has no inTx is that statement alone, in autocommit: one round trip instead of three (BEGIN, the
// statement, COMMIT). A statement is atomic by itself, so this writes everything or nothing too.
func PlaceOrder(db *gorm.DB, order *Order, jobs []Job, inTx func(tx *gorm.DB) error) error {
	if inTx == nil && oneStatementOrder(db, jobs) {
		return createOrder(db, order, jobs, true)
	}
	return db.Transaction(func(tx *gorm.DB) error {
		if err := CreateOrder(tx, order, jobs); err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx)
		}
		return nil
	})
}

// CreateOrder inserts a new order and its jobs and reserves their credits (ReserveForJobs), inside
// the caller's transaction. The order row carries its reservation from its INSERT:
// order.CreditsReserved is set to the jobs' ReservationTotal. It returns ErrInsufficientCredits
// when the balance is short, and the caller's transaction must then roll back (the rows may have
// been written).
//
// On PostgreSQL an order of up to insertBatch jobs is one statement: the three INSERTs ride as
// data-modifying WITH queries on the account's reservation UPDATE, which spares the database and
// the API three round trips per accepted order. They are the statements gorm builds for the
// models, so they cannot drift from them. A short balance fails that statement as a whole, with
// the accounts table's CHECK (credit_balance >= 0): nothing of it is written, even outside a
// transaction (PlaceOrder). SQLite has no data-modifying WITH; there, and for a larger order, the
// statements go one by one, the reservation conditional on the balance.
func CreateOrder(tx *gorm.DB, order *Order, jobs []Job) error {
	return createOrder(tx, order, jobs, oneStatementOrder(tx, jobs))
}

// oneStatementOrder reports whether CreateOrder writes the jobs' order in one statement.
func oneStatementOrder(db *gorm.DB, jobs []Job) bool {
	return db.Dialector.Name() == "postgres" && len(jobs) > 0 && len(jobs) <= insertBatch
}

// createOrder is CreateOrder in one statement or, unless oneStatement, one statement at a time.
func createOrder(tx *gorm.DB, order *Order, jobs []Job, oneStatement bool) error {
	order.CreditsReserved = ReservationTotal(jobs)
	if !oneStatement {
		return createOrderStepByStep(tx, order, jobs)
	}
	dry := tx.Session(&gorm.Session{DryRun: true, NewDB: true})
	entries := reservationEntries(order.AccountID, order.ID, jobs)
	inserts := []*gorm.Statement{dry.Create(order).Statement, dry.Create(&jobs).Statement, dry.Create(&entries).Statement}
	var (
		sql  strings.Builder
		vars []any
	)
	for i, st := range inserts {
		if st.Error != nil {
			return st.Error
		}
		if i == 0 {
			sql.WriteString("WITH ")
		} else {
			sql.WriteString(", ")
		}
		fmt.Fprintf(&sql, "insert%d AS (%s)", i, postgresPlaceholder.ReplaceAllString(st.SQL.String(), "?"))
		vars = append(vars, st.Vars...)
	}
	total := order.CreditsReserved
	if total <= 0 { // nothing to reserve: the INSERTs alone
		sql.WriteString(" SELECT 1")
		return tx.Exec(sql.String(), vars...).Error
	}
	// The reservation of ReserveForJobs without its balance condition: the CHECK refuses a short
	// balance, which fails the whole statement instead of matching no row.
	reserve := dry.Model(&Account{}).Where("id = ?", order.AccountID).Updates(reservation(total)).Statement
	if reserve.Error != nil {
		return reserve.Error
	}
	sql.WriteString(" " + postgresPlaceholder.ReplaceAllString(reserve.SQL.String(), "?"))
	res := tx.Exec(sql.String(), append(vars, reserve.Vars...)...)
	if isBalanceCheckViolation(res.Error) {
		return ErrInsufficientCredits
	}
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 { // the orders' foreign key refuses an unknown account first
		return fmt.Errorf("account %s: %w", order.AccountID, ErrNotFound)
	}
	return nil
}

// balanceCheck is the name PostgreSQL gave the accounts table's CHECK (credit_balance >= 0)
// (0001_init.sql); checkViolation is the SQLSTATE of a row that fails a CHECK.
const (
	balanceCheck   = "accounts_credit_balance_check"
	checkViolation = "23514"
)

// isBalanceCheckViolation reports whether err is PostgreSQL refusing a negative balance.
func isBalanceCheckViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == checkViolation && pgErr.ConstraintName == balanceCheck
}

// postgresPlaceholder is a bind parameter of a statement gorm built for PostgreSQL ($1, $2, …,
// in order: gorm numbers them as it adds its values).
var postgresPlaceholder = regexp.MustCompile(`\$[0-9]+`)

// createOrderStepByStep is CreateOrder one statement at a time.
func createOrderStepByStep(tx *gorm.DB, order *Order, jobs []Job) error {
	if err := tx.Create(order).Error; err != nil {
		return err
	}
	if err := tx.CreateInBatches(jobs, insertBatch).Error; err != nil {
		return err
	}
	_, err := ReserveForJobs(tx, order.AccountID, order.ID, jobs)
	return err
}

// settle records the consume or release of one job run's reservation. It returns false when that
// run was already settled, so replays of the calling activity never move credits twice.
func settle(tx *gorm.DB, j *Job, kind string) (bool, error) {
	entry := LedgerEntry{
		ID: NewID(), AccountID: j.AccountID, OrderID: &j.OrderID, JobID: &j.ID, Run: j.Run,
		Kind: kind, ReservedDelta: -j.CreditCost, CreatedAt: time.Now().UTC(),
	}
	if kind == LedgerRelease {
		entry.BalanceDelta = j.CreditCost
	}
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&entry)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	accountUpdate := map[string]any{
		"credits_reserved": gorm.Expr("credits_reserved - ?", j.CreditCost),
		"updated_at":       time.Now().UTC(),
	}
	orderColumn := "credits_consumed"
	if kind == LedgerRelease {
		accountUpdate["credit_balance"] = gorm.Expr("credit_balance + ?", j.CreditCost)
		orderColumn = "credits_released"
	}
	res = tx.Model(&Account{}).Where("id = ? AND credits_reserved >= ?", j.AccountID, j.CreditCost).Updates(accountUpdate)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected == 0 {
		return false, fmt.Errorf("account %s holds less reserved credit than job %s run %d settles", j.AccountID, j.ID, j.Run)
	}
	err := tx.Model(&Order{}).Where("id = ?", j.OrderID).
		Update(orderColumn, gorm.Expr(orderColumn+" + ?", j.CreditCost)).Error
	return true, err
}

// LedgerSums returns the sums of balance and reserved deltas over an account's ledger.
func LedgerSums(db *gorm.DB, accountID string) (balance, reserved int64, err error) {
	var row struct{ B, R int64 }
	err = db.Raw(`SELECT COALESCE(SUM(balance_delta),0) AS b, COALESCE(SUM(reserved_delta),0) AS r
		FROM credit_ledger WHERE account_id = ?`, accountID).Scan(&row).Error
	return row.B, row.R, err
}

// reservationNamespace derives the ID of an order's credit reservation.
var reservationNamespace = uuid.MustParse("3e0f6a52-71c4-4d59-9a4e-2b8d5c7e1f03")

// ReservationID names the credit reservation of an order: its reserve entries in the ledger
// (one per job). It is derived from the order ID, so it needs no row of its own.
func ReservationID(orderID string) string {
	return uuid.NewSHA1(reservationNamespace, []byte(orderID)).String()
}
