package engine

import (
	"context"
	"errors"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// OrderCancelled answers CancelAccountOrder: the order as the cancel left it, how many of its jobs
// it cancelled, and how many it left because they had already started.
type OrderCancelled struct {
	Order          AccountOrder
	Cancelled      int
	AlreadyStarted int
}

// CancelAccountOrder cancels every job of an order of the account that has not started
// (DELETE /api/external/orders/{id}): each as Jobs.CancelJob cancels one, decided by the database
// (its reservation released, job.cancelled or record.failed recorded), then the order workflow is
// told. A job that has begun runs to its end and is counted as already started. An order of
// another account is KindNotFound; an order that has ended is KindConflict. A repeated call
// cancels nothing more and answers the order as it is.
func (e *Orders) CancelAccountOrder(ctx context.Context, accountID, orderID, requestID string) (OrderCancelled, error) {
	order, err := e.store.AccountOrder(ctx, accountID, orderID)
	if errors.Is(err, models.ErrNotFound) {
		return OrderCancelled{}, refuse(KindNotFound, "", "", "Order not found.")
	}
	if err != nil {
		return OrderCancelled{}, err
	}
	if order.Status != status.OrderInProgress {
		return OrderCancelled{}, refuse(KindConflict, "", "", "The order has ended (%s); nothing is left to cancel.", order.Status)
	}
	jobs, err := e.store.OrderJobs(ctx, order.ID)
	if err != nil {
		return OrderCancelled{}, err
	}
	var cancelled []*models.Job
	var owed []models.WebhookDelivery
	started := 0
	for _, j := range jobs {
		begun := j.StartedAt != nil || j.Status == status.JobInProgress || j.Status == status.JobRetryPending
		if j.Status != status.JobPending || begun {
			if begun {
				started++
			}
			continue
		}
		c, o, err := e.app.Jobs.cancelNotBegun(ctx, j.ID, j.Run, status.CancelRequested)
		if err != nil {
			// The cancels made so far are committed and announced; a retry cancels the rest.
			e.app.Jobs.announceCancels(ctx, cancelled, owed, requestID)
			return OrderCancelled{}, err
		}
		if c == nil {
			// It began between the read and the UPDATE, or a concurrent cancel took it.
			if now, err := e.store.GetJob(ctx, j.ID); err == nil && now.Status != status.JobCancelled {
				started++
			}
			continue
		}
		cancelled, owed = append(cancelled, c), append(owed, o...)
	}
	e.app.Jobs.announceCancels(ctx, cancelled, owed, requestID)
	detail, err := e.FindAccountOrder(ctx, accountID, order.ID)
	if err != nil {
		return OrderCancelled{}, err
	}
	return OrderCancelled{Order: detail, Cancelled: len(cancelled), AlreadyStarted: started}, nil
}
