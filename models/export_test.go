package models

// CreateOrderStepByStep is createOrderStepByStep, for the test that holds CreateOrder's one
// statement on PostgreSQL to the rows of the statements it replaces.
var CreateOrderStepByStep = createOrderStepByStep
