package workflows

import (
	"errors"
	"hash/fnv"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
)

// WebhookWorkflowID returns the workflow ID for a webhook delivery. Every run of the delivery
// (the first and each replay) uses it.
func WebhookWorkflowID(deliveryID string) string { return "webhook/" + deliveryID }

// WebhookSchedule is the wait before each attempt of a delivery run: at once, then 5 s, 5 min,
// 30 min, 2 h, 5 h, 10 h and 10 h, eight attempts over about 28 hours. Every wait but the first
// gets a ±20 % jitter (WebhookDelay), and lasts at least the receiver's last Retry-After.
var WebhookSchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// webhookJitter is the relative spread of each scheduled wait.
const webhookJitter = 0.2

// WebhookDelay is the scheduled wait before attempt number attempt (1-based) of a delivery, with
// its jitter. The jitter is a hash of the delivery ID and attempt, so it spreads deliveries that
// failed together yet is the same on every replay of the workflow's history.
func WebhookDelay(deliveryID string, attempt int) time.Duration {
	if attempt < 1 || attempt > len(WebhookSchedule) {
		return 0
	}
	base := WebhookSchedule[attempt-1]
	h := fnv.New64a()
	_, _ = h.Write([]byte(deliveryID + "/" + strconv.Itoa(attempt)))
	unit := float64(h.Sum64()>>11) / float64(1<<53) // uniform in [0, 1)
	return time.Duration(float64(base) * (1 + webhookJitter*(2*unit-1)))
}

// WebhookDeliveryInput starts a run of WebhookDeliveryWorkflow.
type WebhookDeliveryInput struct {
	DeliveryID string
	// Replay marks a run started by POST /webhooks/{id}/replay: it sends even a delivery that
	// was delivered before.
	Replay bool
}

// WebhookDeliveryResult is how a delivery run ended.
type WebhookDeliveryResult struct {
	Delivered  bool
	Attempts   int
	StatusCode int // of the last answer; 0 when none arrived
}

// WebhookDeliveryWorkflow delivers one webhook: an attempt at once and, while none is
// acknowledged with a 2xx, further attempts on WebhookSchedule (at least the receiver's
// Retry-After apart). After the last failed attempt it marks the delivery failed. Every attempt
// is recorded by the DeliverWebhook activity.
func WebhookDeliveryWorkflow(ctx workflow.Context, in WebhookDeliveryInput) (WebhookDeliveryResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The HTTP request is bounded by the client's 15 s; the rest is database work.
		StartToCloseTimeout: 30 * time.Second,
		// Retries here are for infrastructure failures only (database, secrets): an HTTP answer
		// other than 2xx is a result, and the schedule above decides about it.
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{contract.ErrTypeWebhookDeliveryNotFound},
		},
	})
	var res WebhookDeliveryResult
	var retryAfter time.Duration
	for attempt := 1; attempt <= len(WebhookSchedule); attempt++ {
		if wait := max(WebhookDelay(in.DeliveryID, attempt), retryAfter); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return res, err
			}
		}
		res.Attempts = attempt
		var out contract.DeliverResult
		// A database outage is waited out: the attempt is made once the delivery can be read and recorded.
		err := runActivity(ctx, actx, contract.DeliverWebhook, &out, contract.DeliverInput{
			DeliveryID: in.DeliveryID, Attempt: attempt, Replay: in.Replay,
			NextDelay: WebhookDelay(in.DeliveryID, attempt+1),
		})
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == contract.ErrTypeWebhookDeliveryNotFound {
			return res, err
		}
		if temporal.IsCanceledError(err) {
			return res, err
		}
		if err != nil {
			// The attempt could not even be made or recorded; it counts as a failed attempt.
			workflow.GetLogger(ctx).Warn("webhook attempt failed to run", "delivery_id", in.DeliveryID, "attempt", attempt, "error", err)
			retryAfter = 0
			continue
		}
		if out.Stopped {
			// The endpoint is disabled or deleted: the delivery is held (or failed) as it is.
			return res, nil
		}
		res.StatusCode = out.StatusCode
		if out.Delivered {
			res.Delivered = true
			return res, nil
		}
		retryAfter = out.RetryAfter
	}
	return res, project(ctx, contract.MarkWebhookFailed, nil, in.DeliveryID)
}

// WebhookSearchAttributes are the search attributes of a delivery's workflow: its scope, its order
// and SALivemode, false for a delivery of a test twin (models.WebhookDelivery.TestMode), as on the
// twin's order and job workflows.
func WebhookSearchAttributes(accountID, installationID, orderID string, live bool) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		SAAccountID.ValueSet(accountID), SAInstallationID.ValueSet(installationID), SAOrderID.ValueSet(orderID),
		SALivemode.ValueSet(live),
	)
}

// NotifyJobEnded starts the webhook of a job run that reached a terminal status: it records the
// delivery (a local activity) and, when the job's installation has a callback URL, starts the
// delivery's WebhookDeliveryWorkflow as an abandoned child. It waits only until the child has
// started, never for the delivery. Call it after the job's terminal status is stored; calling it
// again for the same run (for example on a replayed history) starts nothing new. An error means
// no webhook will be sent for this run; callers log it rather than fail the job.
func NotifyJobEnded(ctx workflow.Context, jobID string, run int) error {
	var rec contract.RecordWebhookResult
	if err := project(ctx, contract.RecordJobWebhook, &rec, contract.RecordWebhookInput{JobID: jobID, Run: run}); err != nil {
		return err
	}
	return startDelivery(ctx, rec)
}

// startDelivery starts the WebhookDeliveryWorkflow of a recorded job webhook, as an abandoned
// child, when it has a receiver; a delivery already started counts as started.
func startDelivery(ctx workflow.Context, rec contract.RecordWebhookResult) error {
	if !rec.Deliver {
		return nil
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: WebhookWorkflowID(rec.DeliveryID),
		// ABANDON: the delivery retries for hours after the job (and its order) have closed.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// One automatic run per delivery: a second start for the same delivery (a repeated call,
		// or a replay already under way) is refused by the server and treated as done.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Live: a result that asks for this start was recorded before endpoints (migration 0016),
		// so before test mode (0021).
		TypedSearchAttributes: WebhookSearchAttributes(rec.AccountID, rec.InstallationID, rec.OrderID, true),
	})
	err := workflow.ExecuteChildWorkflow(cctx, WebhookDeliveryWorkflow, WebhookDeliveryInput{DeliveryID: rec.DeliveryID}).
		GetChildWorkflowExecution().Get(ctx, nil)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return nil
	}
	return err
}
