package support

import (
	"context"

	"github.com/shotflow/shotflow/internal/engine"
)

// RetryRequest asks to run a failed or expired job again (engine.RetryJob).
type RetryRequest = engine.RetryRequest

// RetryResult is the new run of a retried job, as `shotflow admin jobs retry` prints it.
type RetryResult struct {
	JobID           string `json:"job_id"`
	OrderID         string `json:"order_id"`
	PreviousStatus  string `json:"previous_status"`
	Run             int    `json:"run"`
	WorkflowID      string `json:"workflow_id"`
	TemporalUIURL   string `json:"temporal_ui_url"`
	CreditsReserved int64  `json:"credits_reserved"`
	AuditID         string `json:"audit_id"`
	// WorkflowStarted is false when the run was committed but its workflow could not be started
	// now; a worker's sweeper starts it (OUTBOX_START_AFTER after the retry).
	WorkflowStarted bool   `json:"workflow_started"`
	StartError      string `json:"start_error,omitempty"`
}

// RetryJob runs a failed or expired job again inside its order, as a new run (engine.RetryJob),
// and links the run's workflow in the Temporal UI.
func RetryJob(ctx context.Context, e *engine.Engine, ui UI, req RetryRequest) (RetryResult, error) {
	r, err := e.Support.RetryJob(ctx, req)
	if err != nil {
		return RetryResult{}, err
	}
	return RetryResult{
		JobID: r.JobID, OrderID: r.OrderID, PreviousStatus: r.PreviousStatus, Run: r.Run, WorkflowID: r.WorkflowID,
		TemporalUIURL: ui.WorkflowURL(r.WorkflowID), CreditsReserved: r.CreditsReserved, AuditID: r.AuditID,
		WorkflowStarted: r.WorkflowStarted, StartError: r.StartError,
	}, nil
}
