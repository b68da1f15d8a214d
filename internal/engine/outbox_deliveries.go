package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// startDelivery starts the workflow of a delivery the engine recorded with its start owed
// (a job CancelJob cancelled) and records the start. A start that fails, or whose record fails,
// is left to StartPendingDeliveries, which starts it again (a duplicate start is a no-op).
func (e *Outbox) startDelivery(ctx context.Context, rec webhooks.RecordedDelivery) {
	sctx, cancel := context.WithTimeout(ctx, cancelNotifyTimeout)
	defer cancel()
	d := &models.WebhookDelivery{ID: rec.DeliveryID, AccountID: rec.AccountID, InstallationID: &rec.InstallationID, OrderID: &rec.OrderID}
	err := e.app.Webhooks.StartWebhookDelivery(sctx, d)
	if err == nil {
		err = e.store.MarkDeliveriesStarted(sctx, d.ID)
	}
	if err != nil {
		e.cfg.Log.Info("webhook delivery not started yet; the sweeper will start it",
			zap.String("delivery_id", d.ID), zap.Error(err))
	}
}

// StartPendingDeliveries starts the workflows of webhook deliveries whose start has been owed
// since olderThan ago or longer (recorded by CancelJob, whose own start after the commit was lost)
// and records their starts; it returns how many it started.
func (e *Outbox) StartPendingDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	due, err := e.store.DeliveriesAwaitingStart(ctx, time.Now().UTC().Add(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	for i := range due {
		if err := e.app.Webhooks.StartWebhookDelivery(ctx, &due[i]); err != nil {
			return i, err
		}
		if err := e.store.MarkDeliveriesStarted(ctx, due[i].ID); err != nil {
			return i, err
		}
		e.cfg.Log.Info("started webhook delivery left pending", zap.String("delivery_id", due[i].ID))
	}
	return len(due), nil
}
