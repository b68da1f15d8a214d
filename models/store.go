package models

import (
	"context"

	"gorm.io/gorm"
)

// Store is the database boundary: the queries and writes of shotflow's use cases are its methods,
// so that SQL and gorm stay in this package. A method that writes several rows that must change
// together does so in a transaction of its own (a savepoint when the store is already in one); a
// use case whose writes through several methods must be atomic runs them in Tx.
//
// A Store wraps the *gorm.DB of Open, which runs each write outside a transaction on its own
// (SkipDefaultTransaction): a method that is one statement costs one round trip.
type Store struct {
	db   *gorm.DB
	inTx bool         // the store of a transaction (Tx)
	gate *accountGate // one reservation per account at a time (PlaceOrder); nil in a transaction
	// owed are the account updates of the settlements made through this store of a transaction
	// (Tx), which the transaction sends last, just before its COMMIT; nil outside Tx, where each
	// settlement sends its account's update last in its own transaction.
	owed *owedSettlements
}

// NewStore returns the store of db. It keeps db itself, not a session of it, so that what is
// configured on db later (callbacks, a test's statement recorder) applies to the store too.
func NewStore(db *gorm.DB) *Store { return &Store{db: db, gate: &accountGate{}} }

// Tx runs fn in one transaction: the methods of the store fn gets run in it, an error fn returns
// (or a panic) rolls everything back, and nil commits. Called on the store of a transaction, Tx
// runs fn in a savepoint of it, which an error rolls back without ending the outer transaction.
//
// The account updates of the job settlements fn makes (CompleteJob, EndJob, CancelJobNotBegun)
// are the transaction's last statements, sent after fn returns and just before the COMMIT, so that
// the account's row, which every reservation and settlement of the account takes, is held for the
// least time (the lock order: credits.go). fn therefore reads an account it settled a job of as it
// was before the settlement; its ledger entries are already written. A savepoint that fails drops
// the updates of its settlements with its other writes.
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		inner := &Store{db: tx, inTx: true, owed: &owedSettlements{}}
		if err := fn(inner); err != nil {
			return err
		}
		if s.owed != nil { // a savepoint: its settlements join the enclosing transaction's
			s.owed.list = append(s.owed.list, inner.owed.list...)
			return nil
		}
		return inner.owed.send(tx)
	})
}

// Atomic runs fn so that its writes commit together: in a transaction of its own (Tx), or, on the
// store of a transaction, in that transaction itself, without a savepoint: an error fn returns then
// fails the caller's transaction as a whole. Methods whose writes only need to be atomic, not to
// be undone alone, use it and cost no savepoint round trips inside a caller's transaction.
func (s *Store) Atomic(ctx context.Context, fn func(tx *Store) error) error {
	if s.inTx {
		return fn(s)
	}
	return s.Tx(ctx, fn)
}

// reserving waits for the account's turn to reserve (accountGate) and returns the function that
// ends it. A store in a transaction does not wait: its transaction may already hold the account's
// row, and the turn is for what holds the row only as long as its own statement or transaction.
func (s *Store) reserving(ctx context.Context, accountID string) (func(), error) {
	if s.gate == nil || s.inTx {
		return func() {}, nil
	}
	return s.gate.enter(ctx, accountID)
}

// conn is the store's database, or its transaction, bound to ctx.
func (s *Store) conn(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// OpenStore opens the database of databaseURL (Open) behind the store boundary.
func OpenStore(databaseURL string, opts OpenOptions) (*Store, error) {
	db, err := Open(databaseURL, opts)
	if err != nil {
		return nil, err
	}
	return NewStore(db), nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// CheckSchema fails unless the database is at the schema version this binary knows (CheckSchema).
func (s *Store) CheckSchema() error { return CheckSchema(s.db) }

// Migrate applies the pending migrations and returns the versions it applied (Migrate).
func (s *Store) Migrate(ctx context.Context) ([]int, error) { return Migrate(ctx, s.db) }
