package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// SupportReplayResult answers Support.ReplayWebhook.
type SupportReplayResult struct {
	DeliveryID    string `json:"delivery_id"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
	Status        string `json:"status"` // always "queued": the new run's first attempt is under way
}

// ReplayWebhook re-sends a delivery of any installation now (Webhooks.StartWebhookReplay); an
// unknown delivery is KindNotFound.
func (e *Support) ReplayWebhook(ctx context.Context, deliveryID string) (SupportReplayResult, error) {
	d, err := e.store.GetWebhookDelivery(ctx, deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return SupportReplayResult{}, missing("webhook delivery", deliveryID)
	}
	if err != nil {
		return SupportReplayResult{}, err
	}
	if err := e.app.Webhooks.StartWebhookReplay(ctx, d); err != nil {
		return SupportReplayResult{}, fmt.Errorf("queue the replay of delivery %s: %w", d.ID, err)
	}
	id := workflows.WebhookWorkflowID(d.ID)
	return SupportReplayResult{DeliveryID: d.ID, WorkflowID: id, TemporalUIURL: e.workflowURL(id), Status: "queued"}, nil
}
