package models

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
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
// The alerts the reservation crosses are queued in the same transaction (alert_store.go).
func ReserveForJobs(tx *gorm.DB, accountID, orderID string, jobs []Job) (int64, error) {
	r, err := reserveForJobs(tx, accountID, orderID, jobs)
	return r.total, err
}

// reserved is what a reservation did: the credits it reserved, the account's available balance
// after it and how many alerts it queued.
type reserved struct {
	total, remaining int64
	alerts           int
}

// reserveForJobs is ReserveForJobs, telling what it did.
func reserveForJobs(tx *gorm.DB, accountID, orderID string, jobs []Job) (reserved, error) {
	r := reserved{total: ReservationTotal(jobs)}
	// One reading of the clock: the month the spend counts in is the month of the ledger entries,
	// which a release later looks at to give the spend back (releaseSpend), even across midnight.
	now := time.Now().UTC()
	if total := r.total; total > 0 {
		month := SpendMonth(now)
		fits, args := spendFits(month, total)
		// The UPDATE returns the account as it leaves it, what the alerts need, so the row it
		// holds is not read again.
		var acc Account
		res := tx.Model(&acc).Clauses(returning(accountAlertColumns)).
			Where("id = ? AND credit_balance >= ?", accountID, total).Where(fits, args...).
			Updates(reservation(total, month))
		if res.Error != nil {
			return reserved{}, res.Error
		}
		instID := ""
		if inst := jobs[0].InstallationID; inst != nil {
			instID = *inst
		}
		if res.RowsAffected == 0 {
			// Told as the one-statement order tells it (createOrder): a short balance first,
			// then the installation's limit, so a refusal is the same whatever the path.
			return reserved{}, refusalOf(tx, accountID, instID, total, month, now)
		}
		// The account's row is held from here, so the installation's comes second, as in the
		// one-statement order (createOrder).
		var inst *Installation
		if instID != "" {
			var err error
			if inst, err = countInstallationSpend(tx, instID, month, total, now); err != nil {
				return reserved{}, err
			}
		}
		var err error
		if r.remaining, r.alerts, err = queueReservationAlerts(tx, &acc, inst, total, month, now); err != nil {
			return reserved{}, err
		}
	} else {
		var acc Account
		if err := tx.Select("credit_balance").Where("id = ?", accountID).Take(&acc).Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return reserved{}, err
		}
		r.remaining = acc.CreditBalance
	}
	entries := reservationEntries(accountID, orderID, jobs, now)
	if len(entries) > 0 {
		if err := tx.CreateInBatches(entries, insertBatch).Error; err != nil {
			return reserved{}, err
		}
	}
	return r, nil
}

// insertBatch is how many rows one INSERT of jobs or ledger entries holds.
const insertBatch = 200

// reservation is the account's change for a reservation of total credits in month: its balance
// and its month's spend.
func reservation(total int64, month string) map[string]any {
	return spendAdd(map[string]any{
		"credit_balance":   gorm.Expr("credit_balance - ?", total),
		"credits_reserved": gorm.Expr("credits_reserved + ?", total),
		"updated_at":       time.Now().UTC(),
	}, month, total)
}

// reservationEntries are the ledger entries of a reservation for jobs: one per job.
func reservationEntries(accountID, orderID string, jobs []Job, now time.Time) []LedgerEntry {
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
// On PostgreSQL an order of up to insertBatch jobs is one statement: the account's reservation
// UPDATE, conditional on the balance like ReserveForJobs', and the three INSERTs ride as
// data-modifying WITH queries of one SELECT, which spares the database and the API three round
// trips per accepted order. The INSERTs are the ones gorm builds for the models, so they cannot
// drift from them, each made to write its rows only when the reservation took the account's row: a
// short balance writes nothing and is no database error (no ERROR in PostgreSQL's log per refused
// order, and a transaction around it goes on). The accounts table's CHECK (credit_balance >= 0)
// stays as a safety net. SQLite has no data-modifying WITH; there, and for a larger order, the
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
	// The statement is built once: its parts are gorm's own statements, each numbering its bind
	// parameters where the previous part's stopped (continuedNumbering), sent as they are.
	numbering := &continuedNumbering{Dialector: tx.Dialector}
	dry := tx.Session(&gorm.Session{DryRun: true, NewDB: true, SkipHooks: true})
	config := *dry.Config
	config.Dialector = numbering
	dry.Config = &config
	var one prebuilt
	part := func(build func(*gorm.DB) *gorm.DB) (string, error) {
		numbering.from = len(one.vars)
		st := build(dry).Statement
		if st.Error != nil {
			return "", st.Error
		}
		one.vars = append(one.vars, st.Vars...)
		return st.SQL.String(), nil
	}
	total := order.CreditsReserved
	gate := ""
	now := time.Now().UTC() // once: the spend's month is the month of the ledger entries (reserveForJobs)
	entries := reservationEntries(order.AccountID, order.ID, jobs, now)
	month := SpendMonth(now)
	if total > 0 {
		fits, fitsArgs := spendFits(month, total)
		one.sql.WriteString("WITH ")
		reserveGate := ""
		if order.InstallationID != nil {
			// A plugin order counts against its installation's limit too. The account's row is
			// locked first (a locking read reads its latest version, past any order that held it),
			// and the installation's UPDATE takes its row only when both the account (balance and
			// limit) and the installation (limit) fit the order; the reservation then follows it,
			// on the row this statement holds, so the two move together or not at all. The lock is
			// the one the reservation's UPDATE takes, FOR NO KEY UPDATE: FOR UPDATE would also
			// wait for the KEY SHARE locks the account's settlements in flight hold on it (lock
			// order, below).
			acct, err := part(func(db *gorm.DB) *gorm.DB {
				return db.Raw("SELECT id FROM accounts WHERE id = ? AND credit_balance >= ? AND "+fits+" FOR "+accountRowLock,
					append([]any{order.AccountID, total}, fitsArgs...)...)
			})
			if err != nil {
				return err
			}
			inst, err := part(func(db *gorm.DB) *gorm.DB {
				return db.Model(&Installation{}).Where("id = ?", *order.InstallationID).Where(fits, fitsArgs...).
					Where("EXISTS (SELECT 1 FROM acct)").Updates(spendAdd(map[string]any{}, month, total))
			})
			if err != nil {
				return err
			}
			one.sql.WriteString("acct AS (" + acct + "), inst AS (" + inst + " RETURNING id, spend_month, spend_used, spend_limit_monthly, spend_alert_percent), ")
			reserveGate = "EXISTS (SELECT 1 FROM inst)"
		}
		// The reservation of ReserveForJobs: it takes the account's row only when the balance
		// covers the order and the month's spend fits the limit, and the INSERTs write only when
		// it did.
		reserve, err := part(func(db *gorm.DB) *gorm.DB {
			q := db.Model(&Account{}).Where("id = ? AND credit_balance >= ?", order.AccountID, total).Where(fits, fitsArgs...)
			if reserveGate != "" {
				q = q.Where(reserveGate)
			}
			return q.Updates(reservation(total, month))
		})
		if err != nil {
			return err
		}
		one.sql.WriteString("reserve AS (" + reserve + " RETURNING id, credit_balance, low_balance_threshold, low_balance_watch, " +
			"spend_month, spend_used, spend_limit_monthly, spend_alert_percent), ")
		// The alerts the reservation crossed (alert_store.go), queued by the statement itself.
		alerts, err := part(func(db *gorm.DB) *gorm.DB {
			return db.Raw("SELECT CAST(? AS BIGINT) AS total, CAST(? AS TEXT) AS month, CAST(? AS TIMESTAMPTZ) AS at", total, month, now)
		})
		if err != nil {
			return err
		}
		queue := alertQueriesSQL
		if order.InstallationID != nil {
			queue += alertQueriesInstSQL
		}
		one.sql.WriteString("m AS (" + alerts + "), alerts AS (" + queue + " RETURNING 1), ")
		gate = "SELECT 1 FROM reserve"
	} else { // nothing to reserve: the INSERTs alone
		one.sql.WriteString("WITH ")
	}
	for i, rows := range []any{order, &jobs, &entries} {
		insert, err := part(func(db *gorm.DB) *gorm.DB { return db.Create(rows) })
		if err != nil {
			return err
		}
		if gate != "" {
			if insert, err = gatedInsert(insert, gate); err != nil {
				return err
			}
		}
		if i > 0 {
			one.sql.WriteString(", ")
		}
		fmt.Fprintf(&one.sql, "insert%d AS (%s)", i, insert)
	}
	bind := func(v any) {
		numbering.from = len(one.vars)
		one.vars = append(one.vars, v)
		numbering.BindVarTo(&one.sql, &gorm.Statement{Vars: one.vars[len(one.vars)-1:]}, v)
	}
	// One row tells the answer: the outcome, the account's available balance after the statement
	// and the number of alerts it queued. Outcome 3: accepted; 2: a spend limit refused it, whose
	// details are read next (refusalOf); 1: a short balance (as the statement began), said without
	// another statement. No row: no such account. (Raw and Rows, not Scan: gorm's Scan would
	// render the whole statement with its values for its logger.)
	if total <= 0 {
		one.sql.WriteString(" SELECT 3, credit_balance, 0 FROM accounts WHERE id = ")
		bind(order.AccountID)
	} else {
		one.sql.WriteString(" SELECT 3, credit_balance, (SELECT count(*) FROM alerts) FROM reserve " +
			"UNION ALL SELECT CASE WHEN credit_balance >= ")
		bind(total)
		one.sql.WriteString(" THEN 2 ELSE 1 END, credit_balance, 0 FROM accounts WHERE id = ")
		bind(order.AccountID)
		one.sql.WriteString(" AND NOT EXISTS (SELECT 1 FROM reserve)")
	}
	rows, err := tx.Raw("?", &one).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	outcome, remaining, alerts := int64(0), int64(0), int64(0)
	if rows.Next() {
		if err := rows.Scan(&outcome, &remaining, &alerts); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := rows.Close(); err != nil {
		return err
	}
	switch outcome {
	case 3:
		order.CreditsRemaining, order.AlertsPending = remaining, int(alerts)
		return nil
	case 0:
		if total <= 0 {
			return nil // nothing to reserve: written, whoever the account
		}
		return fmt.Errorf("account %s: %w", order.AccountID, ErrNotFound)
	case 1:
		return ErrInsufficientCredits
	default:
		instID := ""
		if order.InstallationID != nil {
			instID = *order.InstallationID
		}
		return refusalOf(tx, order.AccountID, instID, total, month, now)
	}
}

// prebuilt is an SQL statement with its bind parameters already numbered ($1, $2, …) and its
// values, written into a gorm statement as it is (a clause.Expression).
type prebuilt struct {
	sql  strings.Builder
	vars []any
}

// Build writes the statement into b, a *gorm.Statement.
func (o *prebuilt) Build(b clause.Builder) {
	st := b.(*gorm.Statement)
	st.SQL.WriteString(o.sql.String())
	st.Vars = append(st.Vars, o.vars...)
}

// continuedNumbering is the PostgreSQL dialector numbering a statement's bind parameters from
// from+1: a part of a larger statement continues the numbering of the parts before it.
type continuedNumbering struct {
	gorm.Dialector
	from int
}

// BindVarTo writes the parameter of v, the last of stmt.Vars.
func (n *continuedNumbering) BindVarTo(writer clause.Writer, stmt *gorm.Statement, v any) {
	writer.WriteByte('$')
	writer.WriteString(strconv.Itoa(n.from + len(stmt.Vars)))
}

// gatedInsert rewrites gorm's INSERT INTO t (c1, …) VALUES (…), … into an INSERT of the same rows
// that writes them only when gate (a query) returns a row: INSERT … SELECT from the VALUES list.
// A VALUES list in FROM types its columns by their first row, and a bind parameter alone would be
// text there, so the list starts with a row typed as t's columns ((NULL::t).c1, …), which the
// SELECT leaves out by its primary key, id, NULL there and never in a row of t.
func gatedInsert(insert, gate string) (string, error) {
	head, values, ok := strings.Cut(insert, ") VALUES (")
	table, list, ok2 := strings.Cut(head, " (")
	table, ok3 := strings.CutPrefix(table, "INSERT INTO ")
	if !ok || !ok2 || !ok3 {
		return "", fmt.Errorf("gatedInsert: not an INSERT … VALUES: %.80s", insert)
	}
	columns := strings.Split(list, ",")
	id := slices.Index(columns, `"id"`)
	if id < 0 {
		return "", fmt.Errorf("gatedInsert: %s has no id column", table)
	}
	var b strings.Builder
	b.Grow(len(insert) + len(columns)*(len(table)+16) + len(gate) + 64)
	b.WriteString(head + ") SELECT * FROM (VALUES (")
	for i, c := range columns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(NULL::" + table + ")." + c)
	}
	b.WriteString("), (" + values + ") AS v WHERE v.column" + strconv.Itoa(id+1) + " IS NOT NULL AND EXISTS (" + gate + ")")
	return b.String(), nil
}

// createOrderStepByStep is CreateOrder one statement at a time.
func createOrderStepByStep(tx *gorm.DB, order *Order, jobs []Job) error {
	if err := tx.Create(order).Error; err != nil {
		return err
	}
	if err := tx.CreateInBatches(jobs, insertBatch).Error; err != nil {
		return err
	}
	r, err := reserveForJobs(tx, order.AccountID, order.ID, jobs)
	order.CreditsRemaining, order.AlertsPending = r.remaining, r.alerts
	return err
}

// Lock order. A transaction that takes more than one of these rows takes them in this order, so
// that no two transactions each hold a row the other waits for (a deadlock):
//
//	the job → its order → the account → the account's installation
//
//   - A job's settlement (CompleteJob, EndJob, CancelJobNotBegun, alone or in a caller's Tx such as
//     the worker's FinishJob) updates the job, whose change takes its order's row in the same
//     statement (the trigger that numbers the order's events, migration 0020), then updates the
//     order's counters, and only then the account's credits: settle writes the ledger entry and
//     owes the account's UPDATE (accountSettlement), which the transaction sends last, just before
//     its COMMIT (Store.Tx), followed for a release by the installation's month's spend.
//   - A reservation of a new order (createOrder, reserveForJobs) takes the account's row, then the
//     installation's; the order, jobs and ledger entries it inserts are rows no other transaction
//     sees. An operator's re-run (engine's RetryJob) updates the job and so its order first, then
//     reserves on the account.
//   - A spend limit's first refusal (MarkSpendLimitReached) and a low-balance threshold
//     (SetLowBalanceThreshold) lock the account's row before the installation's.
//
// Rows that reference the account (ledger entries, outputs, events) take a KEY SHARE lock on its
// row when inserted, before a settlement's UPDATE of it; an UPDATE that changes no key never waits
// for that lock. The reservation's statement and the paths above that lock the account before
// updating it take the row FOR NO KEY UPDATE (accountRowLock), the lock their UPDATE takes, not
// FOR UPDATE, which would wait for every settlement of the account in flight. SQLite runs one
// writing transaction at a time, so there the order changes nothing.

// accountRowLock is the strength of the lock with which a statement that updates the account
// later in its transaction takes the account's row first, on PostgreSQL (the lock order above).
const accountRowLock = "NO KEY UPDATE"

// lockAccountRow is q locking the rows it reads FOR accountRowLock.
func lockAccountRow(q *gorm.DB) *gorm.DB {
	return q.Clauses(clause.Locking{Strength: accountRowLock})
}

// settle records the consume or release of one job run's reservation in the ledger. It returns
// false when that run was already settled, so replays of the calling activity never move credits
// twice; the caller records the credits in the order (endOfJob) only when it returns true, and
// sends the account's side of the settlement it returns (accountSettlement.send) last in its
// transaction (see the lock order above).
func settle(tx *gorm.DB, j *Job, kind string) (accountSettlement, bool, error) {
	entry := LedgerEntry{
		ID: NewID(), AccountID: j.AccountID, OrderID: &j.OrderID, JobID: &j.ID, Run: j.Run,
		Kind: kind, ReservedDelta: -j.CreditCost, CreatedAt: time.Now().UTC(),
	}
	if kind == LedgerRelease {
		// The note says how the run ended (failed, expired, cancelled): usage counts failed and
		// cancelled jobs from the ledger alone (UsageOf).
		entry.BalanceDelta, entry.Note = j.CreditCost, j.Status
	}
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&entry)
	if res.Error != nil {
		return accountSettlement{}, false, res.Error
	}
	if res.RowsAffected == 0 {
		return accountSettlement{}, false, nil
	}
	st := accountSettlement{accountID: j.AccountID, installationID: j.InstallationID, jobID: j.ID, run: j.Run,
		credits: j.CreditCost, release: kind == LedgerRelease}
	if st.release {
		month, err := spendMonthOfRun(tx, j)
		if err != nil {
			return accountSettlement{}, false, err
		}
		st.spendMonth = month
	}
	return st, true, nil
}

// accountSettlement is the account's side of a settled job run: its reserved credits go down by
// credits, and for a release they go back to its balance and, when the run's reservation counted
// in spendMonth, out of that month's spend of the account and the installation.
type accountSettlement struct {
	accountID      string
	installationID *string
	jobID          string
	run            int
	credits        int64
	release        bool
	spendMonth     string // "": no spend to give back
}

// spendBackSQL is a row's month's spend after a release gives back credits (the second and third
// parameters) counted in the month of the first: never below zero, and unchanged when the row
// counts another month by now.
const spendBackSQL = "CASE WHEN spend_month = ? THEN (CASE WHEN spend_used >= ? THEN spend_used - ? ELSE 0 END) ELSE spend_used END"

// send updates the account, conditional on it holding the reserved credits, then, for a release
// with spend to give back, the installation: one UPDATE of each, in the lock order.
func (st accountSettlement) send(tx *gorm.DB) error {
	now := time.Now().UTC()
	update := map[string]any{
		"credits_reserved": gorm.Expr("credits_reserved - ?", st.credits),
		"updated_at":       now,
	}
	if st.release {
		update["credit_balance"] = gorm.Expr("credit_balance + ?", st.credits)
		if st.spendMonth != "" {
			update["spend_used"] = gorm.Expr(spendBackSQL, st.spendMonth, st.credits, st.credits)
		}
	}
	res := tx.Model(&Account{}).Where("id = ? AND credits_reserved >= ?", st.accountID, st.credits).Updates(update)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("account %s holds less reserved credit than job %s run %d settles", st.accountID, st.jobID, st.run)
	}
	if st.spendMonth != "" && st.installationID != nil {
		return tx.Model(&Installation{}).Where("id = ? AND spend_month = ?", *st.installationID, st.spendMonth).
			Update("spend_used", gorm.Expr("CASE WHEN spend_used >= ? THEN spend_used - ? ELSE 0 END", st.credits, st.credits)).Error
	}
	return nil
}

// owedSettlements are the account updates a transaction owes for the settlements it made, sent by
// send in the order they were made.
type owedSettlements struct{ list []accountSettlement }

// settled sends st's account update now, last in the transaction of a settlement that runs alone
// (owed nil), or adds it to owed, for the enclosing transaction to send last (Store.Tx).
func settled(tx *gorm.DB, owed *owedSettlements, st accountSettlement) error {
	if owed == nil {
		return st.send(tx)
	}
	owed.list = append(owed.list, st)
	return nil
}

// send sends every owed account update in tx and forgets them.
func (o *owedSettlements) send(tx *gorm.DB) error {
	for _, st := range o.list {
		if err := st.send(tx); err != nil {
			return err
		}
	}
	o.list = nil
	return nil
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
