package workflows

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/internal/errorcat"
	"github.com/shotflow/shotflow/models"
)

// OrderInput starts an OrderWorkflow. Jobs carry only what the children need to start; everything
// else is read from the database by the activities.
type OrderInput struct {
	OrderID        string
	AccountID      string
	InstallationID string
	JobType        string
	Jobs           []JobRef
}

// JobRef identifies one job of an order, with the memo fields operators see in the UI.
type JobRef struct {
	JobID        string
	Run          int
	ProductRef   string
	ProductLabel string
}

// OrderResult counts how the order's jobs ended.
type OrderResult struct {
	Completed int
	Failed    int
}

// OrderWorkflow runs one order: it starts a JobWorkflow per job and waits for all of them. A
// failed job does not fail the order (partial completion is normal); the read model's order status
// is maintained by the jobs' own settlement transactions.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (OrderResult, error) {
	futures := make([]workflow.ChildWorkflowFuture, 0, len(in.Jobs))
	for _, j := range in.Jobs {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: JobWorkflowID(j.JobID, j.Run),
			// ABANDON: a job owns its credit reservation, so it must settle it even if an operator
			// terminates the order workflow.
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
			// A job run executes once; a second start under the same ID would settle credits twice.
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			TypedSearchAttributes: jobSearchAttributes(in),
			Memo:                  map[string]any{"product_ref": j.ProductRef, "product_label": j.ProductLabel},
		})
		futures = append(futures, workflow.ExecuteChildWorkflow(cctx, JobWorkflow, JobInput{
			JobID: j.JobID, Run: j.Run, OrderID: in.OrderID,
		}))
	}
	var res OrderResult
	for i, f := range futures {
		var jr JobResult
		if err := f.Get(ctx, &jr); err != nil {
			workflow.GetLogger(ctx).Error("job workflow failed", "job_id", in.Jobs[i].JobID, "error", err)
			res.Failed++
			continue
		}
		if jr.Status == models.JobCompleted {
			res.Completed++
		} else {
			res.Failed++
		}
	}
	return res, nil
}

// RetrySchedule is how JobWorkflow retries attempts whose category is retryable.
type RetrySchedule struct {
	// Delays[i] is the wait after failed attempt i+1; the last delay repeats.
	Delays []time.Duration
	// MaxAttempts caps the attempts of one job run.
	MaxAttempts int
	// MaxTotal caps the time from the first attempt to the start of the last one.
	MaxTotal time.Duration
}

// DefaultRetrySchedule: 5 s, 30 s, 2 min, 5 min, 10 min between attempts, at most 6 attempts, and
// no new attempt later than 30 minutes after the first (docs/job-states.md).
var DefaultRetrySchedule = RetrySchedule{
	Delays:      []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute},
	MaxAttempts: 6,
	MaxTotal:    30 * time.Minute,
}

func (s RetrySchedule) delay(attempt int) time.Duration {
	if len(s.Delays) == 0 {
		return 0
	}
	if attempt-1 < len(s.Delays) {
		return s.Delays[attempt-1]
	}
	return s.Delays[len(s.Delays)-1]
}

// JobInput starts a JobWorkflow.
type JobInput struct {
	JobID   string
	Run     int
	OrderID string
	// Retry overrides DefaultRetrySchedule when MaxAttempts > 0.
	Retry RetrySchedule
}

// JobResult is how a job run ended.
type JobResult struct {
	Status   string
	Attempts int
	Category errorcat.Category `json:",omitempty"`
}

// JobWorkflow runs one job: one generate activity execution per attempt, retries by errorCategory
// with visible retry_pending and attempt_count, and settlement of the job's credits at the end.
func JobWorkflow(ctx workflow.Context, in JobInput) (JobResult, error) {
	var a *activities.Activities
	schedule := in.Retry
	if schedule.MaxAttempts <= 0 {
		schedule = DefaultRetrySchedule
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		// One execution is one attempt: JobWorkflow decides about retries by category.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	first := workflow.Now(ctx)
	for attempt := 1; ; attempt++ {
		err := workflow.ExecuteLocalActivity(lctx, a.BeginAttempt, activities.AttemptInput{JobID: in.JobID, Run: in.Run, Attempt: attempt}).Get(ctx, nil)
		if isType(err, activities.ErrTypeJobNotRunnable) {
			return JobResult{Status: "not_runnable", Attempts: attempt - 1}, nil
		}
		if err != nil {
			return JobResult{}, err
		}
		if attempt == 1 {
			setStatus(ctx, models.JobInProgress, "")
		}
		var gen activities.GenerateResult
		err = workflow.ExecuteActivity(actx, a.Generate, activities.AttemptInput{JobID: in.JobID, Run: in.Run, Attempt: attempt}).Get(ctx, &gen)
		if err == nil {
			if err := workflow.ExecuteLocalActivity(lctx, a.CompleteJob, activities.CompleteInput{JobID: in.JobID, Run: in.Run, Outputs: gen.Outputs}).Get(ctx, nil); err != nil {
				return JobResult{}, err
			}
			setStatus(ctx, models.JobCompleted, "")
			return JobResult{Status: models.JobCompleted, Attempts: attempt}, nil
		}
		category, retryAfter, detail := classify(err)
		wait := max(schedule.delay(attempt), retryAfter)
		elapsed := workflow.Now(ctx).Sub(first)
		if category.Retryable() && attempt < schedule.MaxAttempts && elapsed+wait <= schedule.MaxTotal {
			if err := workflow.ExecuteLocalActivity(lctx, a.MarkRetryPending, activities.RetryPendingInput{
				JobID: in.JobID, Run: in.Run, Category: category, Detail: detail,
			}).Get(ctx, nil); err != nil {
				return JobResult{}, err
			}
			if err := workflow.Sleep(ctx, wait); err != nil {
				return JobResult{}, err
			}
			continue
		}
		if err := workflow.ExecuteLocalActivity(lctx, a.EndJob, activities.EndInput{
			JobID: in.JobID, Run: in.Run, Status: models.JobFailed, Category: category, Detail: detail,
		}).Get(ctx, nil); err != nil {
			return JobResult{}, err
		}
		setStatus(ctx, models.JobFailed, category)
		return JobResult{Status: models.JobFailed, Attempts: attempt, Category: category}, nil
	}
}

// classify reads the errorCategory of a failed generate activity. A timeout (for example a worker
// that died mid-attempt) is TRANSIENT_INFRA; anything unrecognised is INTERNAL_BUG.
func classify(err error) (errorcat.Category, time.Duration, string) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if c, ok := errorcat.Parse(appErr.Type()); ok {
			var seconds float64
			if appErr.HasDetails() {
				_ = appErr.Details(&seconds)
			}
			return c, time.Duration(seconds * float64(time.Second)), appErr.Error()
		}
		return errorcat.InternalBug, 0, appErr.Error()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return errorcat.TransientInfra, 0, err.Error()
	}
	return errorcat.InternalBug, 0, err.Error()
}

func isType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}

// setStatus keeps the job's status search attributes current for operators.
func setStatus(ctx workflow.Context, status string, category errorcat.Category) {
	updates := []temporal.SearchAttributeUpdate{SAJobStatus.ValueSet(status)}
	if category != "" {
		updates = append(updates, SAErrorCategory.ValueSet(string(category)))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
	}
}
