package engine

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Sealer encrypts secrets at rest (secrets.Box): webhook secrets, and recorded answers that show
// one.
type Sealer interface {
	Seal(plaintext string) string
	Open(sealed string) (string, error)
}

// retryReplayAfter is the Retry-After of a replay that could not be queued.
const retryReplayAfter = 5 * time.Second

// ReplayWebhook re-sends a webhook delivery of the installation now (StartWebhookReplay) and
// returns its ID: KindNotFound for a delivery of another installation, KindConflict for one whose
// endpoint is disabled (it would be held, not sent) or deleted, or that has no endpoint,
// KindUnavailable when the replay could not be queued.
func (e *Webhooks) ReplayWebhook(ctx context.Context, installationID, deliveryID string) (string, error) {
	d, err := e.store.FindWebhookDelivery(ctx, installationID, deliveryID)
	if errors.Is(err, models.ErrNotFound) {
		return "", refuse(KindNotFound, "", "", "No webhook delivery with this ID.")
	}
	if err != nil {
		return "", err
	}
	if err := e.replayable(ctx, d); err != nil {
		return "", err
	}
	if err := e.StartWebhookReplay(ctx, d); err != nil {
		return "", unavailable("The replay could not be queued; retry later.", retryReplayAfter, err)
	}
	return d.ID, nil
}

// replayable checks that a delivery's endpoint can receive a replay: KindConflict when it was
// deleted, or is disabled (the replay would be held, not sent), and when the delivery has none
// (recorded before endpoints, migration 0016, for an installation
// without a callback URL; its every attempt fails for want of a URL).
func (e *Webhooks) replayable(ctx context.Context, d *models.WebhookDelivery) error {
	if d.EndpointID == nil {
		return refuse(KindConflict, "", "",
			"The delivery was recorded before webhook endpoints existed, for an installation without a callback URL: it has no endpoint, so nothing can receive it.")
	}
	scope := models.WebhookScope{AccountID: d.AccountID}
	if d.InstallationID != nil {
		scope.InstallationID = *d.InstallationID
	}
	ep, err := e.store.WebhookEndpoint(ctx, scope, *d.EndpointID)
	if errors.Is(err, models.ErrNotFound) {
		return refuse(KindConflict, "", "", "The delivery's endpoint was deleted; nothing can receive it.")
	}
	if err != nil {
		return err
	}
	if ep.Status != models.EndpointEnabled {
		return refuse(KindConflict, "", "", "The delivery's endpoint is disabled; enable it (PATCH /webhook-endpoints/{id} status=enabled), then replay or recover.")
	}
	return nil
}

// StartWebhookReplay starts a new run of the delivery's WebhookDeliveryWorkflow: it sends the
// stored payload now, with the same webhook-id and a new timestamp, and retries on the usual
// schedule if needed. `POST /webhooks/{delivery_id}/replay` and `shotflow admin webhooks replay`
// both come here.
func (e *Webhooks) StartWebhookReplay(ctx context.Context, d *models.WebhookDelivery) error {
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: e.cfg.TaskQueue,
		// A replay is a new run of the same delivery, also after earlier runs closed.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// A run still waiting in its backoff is replaced, so the replay sends now rather than at
		// the next scheduled attempt.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.Installation(), d.Order()),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID, Replay: true})
	return err
}

// StartWebhookDelivery starts a run of a delivery's WebhookDeliveryWorkflow whose start is owed:
// the first one of a recorded delivery, or a new one of a delivery a recover queued again. A run
// under way is left alone. A start made twice (its record was lost) makes a second run only after
// the first closed, and that run sends nothing when the first delivered it (DeliverWebhook).
func (e *Webhooks) StartWebhookDelivery(ctx context.Context, d *models.WebhookDelivery) error {
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.WebhookWorkflowID(d.ID),
		TaskQueue: e.cfg.TaskQueue,
		// A recovered delivery's earlier run has closed: its new run reuses the ID.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    workflows.WebhookSearchAttributes(d.AccountID, d.Installation(), d.Order()),
	}, workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: d.ID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

// RotateWebhookSecret replaces the webhook signing secret of installationID, which must be the
// caller's own installation (KindNotFound otherwise), with a new one sealed by box. The previous
// secret keeps signing, next to the new one, for models.PreviousSecretGrace.
func (e *Webhooks) RotateWebhookSecret(ctx context.Context, box Sealer, callerInstallationID, installationID string) (RotatedSecret, error) {
	if installationID != callerInstallationID {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	secret := webhooks.NewSecret()
	until, err := e.store.RotateWebhookSecret(ctx, box, installationID, secret, time.Now())
	if errors.Is(err, models.ErrNotFound) {
		return RotatedSecret{}, refuse(KindNotFound, "", "", "No installation with this ID.")
	}
	if err != nil {
		return RotatedSecret{}, err
	}
	return RotatedSecret{Secret: secret, PreviousSecretValidUntil: until}, nil
}
