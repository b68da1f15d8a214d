package support

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// ReplayResult answers ReplayWebhook.
type ReplayResult struct {
	DeliveryID    string `json:"delivery_id"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
	Status        string `json:"status"` // always "queued": the new run's first attempt is under way
}

// ReplayWebhook re-sends a delivery of any installation now (engine.StartWebhookReplay).
func ReplayWebhook(ctx context.Context, e *engine.Engine, db *gorm.DB, ui UI, deliveryID string) (ReplayResult, error) {
	d, err := models.GetWebhookDelivery(db.WithContext(ctx), deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return ReplayResult{}, notFound("webhook delivery", deliveryID)
	}
	if err != nil {
		return ReplayResult{}, err
	}
	if err := e.Webhooks.StartWebhookReplay(ctx, d); err != nil {
		return ReplayResult{}, fmt.Errorf("queue the replay of delivery %s: %w", d.ID, err)
	}
	id := workflows.WebhookWorkflowID(d.ID)
	return ReplayResult{DeliveryID: d.ID, WorkflowID: id, TemporalUIURL: ui.WorkflowURL(id), Status: "queued"}, nil
}
