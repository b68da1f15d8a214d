package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Errors of RetryJob; each is wrapped with the detail an operator needs.
var (
	// ErrNotRetryable: the job is not failed or expired, or changed while it was being retried.
	ErrNotRetryable = errors.New("job cannot run again")
	// ErrReservationNotReleased: the ledger has no release of the current run's reservation, so
	// a new reservation would hold the job's credits twice.
	ErrReservationNotReleased = errors.New("the reservation of the job's current run was not released")
)

// RetryRequest asks to run a failed or expired job again.
type RetryRequest struct {
	JobID  string
	Actor  string // who asked; recorded in the audit row
	Reason string // why; recorded in the audit row
}

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

// RetryJob runs a failed or expired job again inside its order, as a new run. One database
// transaction moves the job to run n+1 (pending, attempts and error cleared), reserves its credits
// anew (only if the ledger shows run n's reservation released), adds them to the order's
// credits_reserved, takes the job out of the order's failed or expired count, puts the order back
// in progress and writes the audit row. Then the run's JobWorkflow is started, which settles the
// credits, updates the order and sends a new webhook when it ends, like any job. The result links
// the run's workflow in the Temporal UI.
//
// A test job's run counts against its test twin's quota of the day (docs/test-mode.md).
//
// A job in any other status is refused with ErrNotRetryable, a short balance with
// models.ErrInsufficientCredits, a test job whose twin has run the day's models.TestDailyJobs with
// models.ErrTestQuotaExceeded; in every case nothing changes. A failed workflow start is not an
// error: the run is committed, the result says so, and intake's sweeper starts it.
func (e *Support) RetryJob(ctx context.Context, req RetryRequest) (RetryResult, error) {
	actor := strings.TrimSpace(req.Actor)
	if actor == "" {
		return RetryResult{}, errors.New("retry: an actor is required for the audit trail")
	}
	var (
		job   *models.Job
		res   RetryResult
		now   = time.Now().UTC()
		audit models.JobRetry
	)
	err := e.store.Tx(ctx, func(tx *models.Store) error {
		j, err := tx.GetJob(ctx, req.JobID)
		if errors.Is(err, models.ErrNotFound) {
			return missing("job", req.JobID)
		}
		if err != nil {
			return err
		}
		if j.Status != status.JobFailed && j.Status != status.JobExpired {
			return fmt.Errorf("%w: job %s is %s; only failed or expired jobs can run again", ErrNotRetryable, j.ID, j.Status)
		}
		released, err := tx.RunReleased(ctx, j.ID, j.Run)
		if err != nil {
			return err
		}
		if !released {
			return fmt.Errorf("%w: job %s run %d; refusing to reserve its credits again", ErrReservationNotReleased, j.ID, j.Run)
		}
		from := j.Run
		moved, err := tx.BeginNextRun(ctx, j, now)
		if err != nil {
			return err
		}
		if !moved {
			return fmt.Errorf("%w: job %s changed while it was being retried; look at it again", ErrNotRetryable, j.ID)
		}
		res.PreviousStatus = j.Status
		j.Run, j.Status, j.UpdatedAt = from+1, status.JobPending, now
		if j.TestMode {
			// A test job's new run is a test job of the day, counted against its twin's quota like
			// an order's jobs, after the day's refill when the day has turned (so the reservation
			// below takes the day's credits).
			err := tx.CountTestJobs(ctx, j.AccountID, 1, e.now())
			var quota *models.TestQuotaError
			if errors.As(err, &quota) {
				return fmt.Errorf("%w: job %s is a test job and its test twin (account %s) has run its %d test jobs of the UTC day; "+
					"the quota resets at midnight UTC, in %s by the database's clock, when this job can run again",
					models.ErrTestQuotaExceeded, j.ID, j.AccountID, models.TestDailyJobs, quota.RetryAfter().Round(time.Second))
			}
			if err != nil {
				return err
			}
		}
		total, err := tx.ReserveForJobs(ctx, j.AccountID, j.OrderID, []models.Job{*j})
		if errors.Is(err, models.ErrInsufficientCredits) {
			available := int64(-1)
			if acc, err := tx.GetAccount(ctx, j.AccountID); err == nil {
				available = acc.CreditBalance
			}
			remedy := "shotflow admin credits grant adds some"
			if j.TestMode {
				// credits grant refuses a test twin: its balance is the client's to set, or the day's.
				remedy = fmt.Sprintf("a test twin's balance: the client sets it with PUT …/test/credits, and it is %d again at midnight UTC",
					models.TestDailyCredits)
			}
			return fmt.Errorf("%w: account %s has %d credits available and the run needs %d (%s)",
				models.ErrInsufficientCredits, j.AccountID, available, j.CreditCost, remedy)
		}
		if err != nil {
			return err
		}
		reopened, err := tx.ReopenOrderForRerun(ctx, j.OrderID, res.PreviousStatus, total, now)
		if err != nil {
			return err
		}
		if !reopened {
			return fmt.Errorf("order %s does not count job %s as %s; refusing to change its counters", j.OrderID, j.ID, res.PreviousStatus)
		}
		audit = models.JobRetry{
			ID: models.NewID(), JobID: j.ID, OrderID: j.OrderID, AccountID: j.AccountID,
			FromRun: from, ToRun: from + 1, Action: models.JobRetryActionRetry, Actor: actor, Reason: strings.TrimSpace(req.Reason), CreatedAt: now,
		}
		if err := tx.CreateJobRetry(ctx, &audit); err != nil {
			return err
		}
		job, res.CreditsReserved = j, total
		return nil
	})
	if err != nil {
		return RetryResult{}, err
	}
	res.JobID, res.OrderID, res.Run, res.AuditID = job.ID, job.OrderID, job.Run, audit.ID
	res.WorkflowID = workflows.JobWorkflowID(job.ID, job.Run)
	res.TemporalUIURL = e.workflowURL(res.WorkflowID)
	// The alerts the run's reservation crossed are recorded now, as an order's are (the outbox
	// sweep records them otherwise).
	e.app.Alerts.Flush(ctx, job.AccountID)

	// The run is committed: from here on a failure only delays it, and the caller going away must
	// not cancel the start.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.app.Outbox.StartJobRun(startCtx, job); err != nil {
		res.StartError = err.Error() + "; the run is saved and a worker's sweeper will start it"
		return res, nil
	}
	res.WorkflowStarted = true
	return res, nil
}
