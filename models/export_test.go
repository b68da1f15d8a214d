package models

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// CreateOrderStepByStep is CreateOrder one statement at a time, for the test that holds its one
// statement on PostgreSQL to the rows of the statements it replaces.
func CreateOrderStepByStep(tx *gorm.DB, order *Order, jobs []Job) error {
	return createOrder(tx, order, jobs, false)
}

// StoreConn is the database, or the transaction, a store's methods run in, for tests of Tx that
// write through it without a method of their own.
func StoreConn(ctx context.Context, s *Store) *gorm.DB { return s.conn(ctx) }

// HoldAccount takes the account's turn to reserve in the store (accountGate) and returns the
// function that ends it, for the tests that placements wait for it.
func HoldAccount(ctx context.Context, s *Store, accountID string) (func(), error) {
	return s.gate.enter(ctx, accountID)
}

// ScanExprTime scans src as a time read from a column without a declared type (exprTime).
func ScanExprTime(src any) (time.Time, error) {
	var t exprTime
	err := t.Scan(src)
	return t.Time, err
}
