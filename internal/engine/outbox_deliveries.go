package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
)

// StartOwedDeliveries starts the workflows of deliveries whose start a commit has just made owed
// (webhooks.Recorder's answers) and records their starts, each bounded by cancelNotifyTimeout. A
// start that fails, or whose record fails, is left to StartPendingDeliveries, which starts it again
// (a duplicate start is a no-op). The activities call it through their DeliveryStarter port after
// their transactions; the engine's own use cases after theirs.
func (e *Outbox) StartOwedDeliveries(ctx context.Context, owed []models.WebhookDelivery) {
	for i := range owed {
		e.startDelivery(ctx, &owed[i])
	}
}

// startDelivery starts one owed delivery's workflow and records the start (StartOwedDeliveries).
func (e *Outbox) startDelivery(ctx context.Context, d *models.WebhookDelivery) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
	defer cancel()
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
// since olderThan ago or longer (recorded by a transaction whose own start after the commit was
// lost, or queued by a recover that was interrupted) and records their starts; it returns how many
// it started. Then it clears the recovering mark of endpoints none of whose deliveries is owed a
// start any more.
func (e *Outbox) StartPendingDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	due, err := e.store.DeliveriesAwaitingStart(ctx, time.Now().UTC().Add(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	started := 0
	for i := range due {
		if err := e.app.Webhooks.StartWebhookDelivery(ctx, &due[i]); err != nil {
			if e.stopSweep(ctx, "webhook delivery", due[i].ID, err) {
				return started, err
			}
			continue
		}
		if err := e.store.MarkDeliveriesStarted(ctx, due[i].ID); err != nil {
			return started, err
		}
		e.cfg.Log.Info("started webhook delivery left pending", zap.String("delivery_id", due[i].ID))
		started++
	}
	if _, err := e.store.FinishRecoveries(ctx, ""); err != nil {
		return started, err
	}
	return started, nil
}
