package models

import (
	"context"

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
