package support

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// StartWebhookDelivery starts the first run of a delivery's WebhookDeliveryWorkflow, as a job's
// workflow does when the job ends; a run that already exists is left alone.
func StartWebhookDelivery(ctx context.Context, tc client.Client, taskQueue string, d *models.WebhookDelivery) error {
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: taskQueue,
		// One automatic run per delivery, as in workflows.NotifyJobEnded.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.InstallationID, d.OrderID),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// StartWebhookReplay starts a new run of the delivery's WebhookDeliveryWorkflow: it sends the
// stored payload now, with the same webhook-id and a new timestamp, and retries on the usual
// schedule if needed. Both `POST /webhooks/{delivery_id}/replay` and `shotflow admin webhooks
// replay` call it.
func StartWebhookReplay(ctx context.Context, tc client.Client, taskQueue string, d *models.WebhookDelivery) error {
	_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: taskQueue,
		// A replay is a new run of the same delivery, also after earlier runs closed.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A run still waiting in its backoff is replaced, so the replay sends now rather than at
		// the next scheduled attempt.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.InstallationID, d.OrderID),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID, Replay: true})
	return err
}

// ReplayResult answers ReplayWebhook.
type ReplayResult struct {
	DeliveryID    string `json:"delivery_id"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
	Status        string `json:"status"` // always "queued": the new run's first attempt is under way
}

// ReplayWebhook re-sends a delivery of any installation now (StartWebhookReplay).
func ReplayWebhook(ctx context.Context, db *gorm.DB, tc client.Client, taskQueue string, ui UI, deliveryID string) (ReplayResult, error) {
	d, err := models.GetWebhookDelivery(db.WithContext(ctx), deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return ReplayResult{}, notFound("webhook delivery", deliveryID)
	}
	if err != nil {
		return ReplayResult{}, err
	}
	if err := StartWebhookReplay(ctx, tc, taskQueue, d); err != nil {
		return ReplayResult{}, fmt.Errorf("queue the replay of delivery %s: %w", d.ID, err)
	}
	id := workflows.WebhookWorkflowID(d.ID)
	return ReplayResult{DeliveryID: d.ID, WorkflowID: id, TemporalUIURL: ui.WorkflowURL(id), Status: "queued"}, nil
}
