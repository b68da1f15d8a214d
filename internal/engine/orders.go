package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/models"
)

// OrderFilter selects an account's orders.
type OrderFilter struct {
	AccountID string
	Status    string     // "" for any
	Since     *time.Time // only orders created after it; nil for any
	Limit     int
}

// ListAccountOrders returns the account's orders matching f, newest first, with the distinct
// provider/model IDs of each order's jobs by order ID.
func (e *Orders) ListAccountOrders(ctx context.Context, f OrderFilter) ([]Order, map[string][]string, error) {
	orders, err := e.store.AccountOrders(ctx, models.AccountOrderFilter{AccountID: f.AccountID, Status: f.Status, Since: f.Since, Limit: f.Limit})
	if err != nil {
		return nil, nil, err
	}
	views := viewsOf(orders, orderOf)
	if len(orders) == 0 {
		return views, map[string][]string{}, nil
	}
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	generators, err := e.store.OrdersAIModels(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	return views, generators, nil
}

// AccountOrder is an account's order with its jobs in order of position; a completed job's
// Outputs hold its first output file while it is still stored, any other job's none.
type AccountOrder struct {
	Order Order
	Jobs  []Job
}

// FindAccountOrder returns an order of the account; KindNotFound when it does not exist or belongs
// to another account.
func (e *Orders) FindAccountOrder(ctx context.Context, accountID, orderID string) (AccountOrder, error) {
	order, err := e.store.AccountOrder(ctx, accountID, orderID)
	if errors.Is(err, models.ErrNotFound) {
		return AccountOrder{}, refuse(KindNotFound, "", "", "Order not found.")
	}
	if err != nil {
		return AccountOrder{}, err
	}
	jobs, err := e.store.OrderJobs(ctx, order.ID)
	if err != nil {
		return AccountOrder{}, err
	}
	outputs, err := e.store.FirstOutputsOfCompletedJobs(ctx, order.ID)
	if err != nil {
		return AccountOrder{}, err
	}
	outputOf := map[string][]models.Asset{}
	for _, a := range outputs {
		outputOf[*a.JobID] = []models.Asset{a}
	}
	o := AccountOrder{Order: orderOf(order), Jobs: make([]Job, len(jobs))}
	for i := range jobs {
		o.Jobs[i] = jobOf(&jobs[i], outputOf[jobs[i].ID])
	}
	return o, nil
}
