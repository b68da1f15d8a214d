package models

import "gorm.io/gorm"

// CreateOrderStepByStep is CreateOrder one statement at a time, for the test that holds its one
// statement on PostgreSQL to the rows of the statements it replaces.
func CreateOrderStepByStep(tx *gorm.DB, order *Order, jobs []Job) error {
	return createOrder(tx, order, jobs, false)
}
