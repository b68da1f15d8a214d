package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/status"
)

// Signal names.
const (
	// SignalInputReady wakes a job waiting with INPUT_NOT_READY: its input became ready.
	SignalInputReady = "input-ready"
	// SignalJobFinished tells an order workflow that one of its jobs reached a terminal status.
	SignalJobFinished = "job-finished"
)

// DefaultInputWait is how long a job waits for an input that is not ready before it fails.
const DefaultInputWait = 30 * time.Minute

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

// TestRetrySchedule is how test mode's jobs retry (docs/test-mode.md): as many attempts as
// DefaultRetrySchedule, seconds apart (1 s, 1 s, 2 s, 2 s, 3 s), so that a rehearsed retryable
// failure fails after the real number of retries within seconds. The engine gives it to a test
// mode order's jobs in JobOptions.Retry; live orders never have it.
var TestRetrySchedule = RetrySchedule{
	Delays:      []time.Duration{time.Second, time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second},
	MaxAttempts: DefaultRetrySchedule.MaxAttempts,
	MaxTotal:    DefaultRetrySchedule.MaxTotal,
}

func (s RetrySchedule) delay(failures int) time.Duration {
	if len(s.Delays) == 0 {
		return 0
	}
	if failures-1 < len(s.Delays) {
		return s.Delays[failures-1]
	}
	return s.Delays[len(s.Delays)-1]
}

// JobOptions tune every job of an order; zero values mean the defaults.
type JobOptions struct {
	Retry     RetrySchedule
	InputWait time.Duration
}

func (o JobOptions) withDefaults() JobOptions {
	if o.Retry.MaxAttempts <= 0 {
		o.Retry = DefaultRetrySchedule
	}
	if o.InputWait <= 0 {
		o.InputWait = DefaultInputWait
	}
	return o
}

// JobInput starts a JobWorkflow.
type JobInput struct {
	JobID   string
	Run     int
	OrderID string
	Options JobOptions
	// Provider is the provider of the job's model: its generate attempts run on that provider's
	// task queue (GenerateTaskQueue). Empty (jobs started before provider queues existed) runs
	// them on the workflow's own queue.
	Provider string `json:",omitempty"`
	// Shape is the history shape the run writes (JobShapeOriginal, JobShapeLean or JobShapeQuiet).
	// The order that launches the job decides it once per order run with workflow.GetVersion, so
	// that a job's history stays the same on every replay without a version marker of its own.
	Shape int `json:",omitempty"`
}

// retryWindowChange is the version marker of the JobWorkflow runs whose retry window leaves out
// the time spent waiting on an unreachable database or blob store (version 1).
const retryWindowChange = "retry-window-excludes-outages"

// inputWaitChange is the version marker of the JobWorkflow runs whose retry window leaves out the
// time spent waiting for an input that was not ready (version 1): a job whose upload took 25
// minutes to prepare still has its whole window for the provider's transient failures after it.
const inputWaitChange = "retry-window-excludes-input-wait"

// firstAttemptChange is the version marker of the JobWorkflow runs whose retry window starts when
// the first attempt began running, as the Generate activity reports it, rather than when the
// workflow asked for it (version 1): the wait in the provider's task queue before it (a burst of
// jobs ahead, PROVIDER_CONCURRENCY, PROVIDER_RATE_LIMITS) uses none of the window. It is written
// only by runs for which it changes the decision (a retry the old window would have refused).
const firstAttemptChange = "retry-window-starts-at-first-attempt"

// History shapes of a JobWorkflow run (JobInput.Shape).
const (
	// JobShapeOriginal is the shape of every run started before issue 15, re-runs included: an
	// in_progress search-attribute upsert at the first attempt, and at the end the settlement
	// and the webhook record as two local activities.
	JobShapeOriginal = 0
	// JobShapeLean sets no in_progress search attribute (the read model shows it; operators
	// query finished, failed and retry_pending jobs) and ends the run with one FinishJob local
	// activity: settlement and webhook record in one transaction and one marker.
	JobShapeLean = 1
	// JobShapeQuiet is JobShapeLean without the job-finished signal: the order learns of the
	// job's end from its child workflow's result, and a re-run (engine.StartJobRun) reports to
	// no one, its order having counted the job when its first run ended. A cancel accepted by
	// the job's own workflow is recorded with its webhook in one FinishJob too.
	JobShapeQuiet = 2
)

// signalsOrder reports whether a run of this shape tells its order with SignalJobFinished.
func signalsOrder(shape int) bool { return shape < JobShapeQuiet }

// GenerateTaskQueue is the task queue of a provider's generate activities beside the main queue.
func GenerateTaskQueue(mainQueue, provider string) string { return mainQueue + "-generate-" + provider }

// JobResult is how a job run ended.
type JobResult struct {
	Status   string
	Attempts int
	Category errorcat.Category `json:",omitempty"`
}

// JobFinished is the payload of SignalJobFinished.
type JobFinished struct {
	JobID  string
	Run    int
	Status string
}

// JobWorkflow runs one job: one generate activity execution per attempt, retries by errorCategory
// with visible retry_pending and attempt_count, a signal-driven wait for inputs that are not ready,
// and settlement of the job's credits at the end. Its result tells its order how it ended (older
// shapes also signal the order, see JobShapeQuiet). It never fails because the database or the
// blob store is away: every step waits for them (outage.go).
// Until its first attempt begins it can be cancelled with UpdateCancelJob (startGate): then it
// ends cancelled without any attempt, and its reservation is released.
func JobWorkflow(ctx workflow.Context, in JobInput) (JobResult, error) {
	gate := &startGate{in: in}
	if err := gate.register(ctx); err != nil {
		return JobResult{}, err
	}
	res, err := runJob(ctx, in, gate)
	if err != nil {
		return res, err
	}
	if res.Status != statusNotRunnable && signalsOrder(in.Shape) {
		notifyOrder(ctx, in, res.Status)
	}
	drainInputReady(ctx)
	return res, nil
}

// drainInputReady consumes the input-ready signals nothing waits for any more: the preparation of
// an uploaded input signals every job that uses it, also a job that found the input ready without
// waiting, or after its wait had ended. Left in the channel they would make the SDK warn of
// unhandled signals when the run closes. Receiving a signal already in the history adds no event.
func drainInputReady(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalInputReady)
	for ch.ReceiveAsync(nil) {
	}
}

// finishJob ends a job run as res says: fin settles it and records its webhook, the status search
// attributes follow, then the webhook's delivery workflow starts. JobShapeLean and later shapes do
// the first two in one FinishJob local activity; JobShapeOriginal (only on replay of runs started
// before issue 15) settles with CompleteJob or EndJob and records the webhook after the status
// upsert with NotifyJobEnded.
func finishJob(ctx workflow.Context, in JobInput, fin contract.FinishJobInput, res JobResult) (JobResult, error) {
	if in.Shape < JobShapeLean {
		var err error
		if fin.Complete != nil {
			err = project(ctx, contract.CompleteJob, nil, *fin.Complete)
		} else {
			err = project(ctx, contract.EndJob, nil, *fin.End)
		}
		if err != nil {
			return JobResult{}, err
		}
		setStatus(ctx, res.Status, res.Category)
		webhookNotStarted(ctx, in.JobID, NotifyJobEnded(ctx, in.JobID, in.Run))
		return res, nil
	}
	var rec contract.RecordWebhookResult
	if err := project(ctx, contract.FinishJob, &rec, fin); err != nil {
		return JobResult{}, err
	}
	setStatus(ctx, res.Status, res.Category)
	webhookNotStarted(ctx, in.JobID, startDelivery(ctx, rec))
	return res, nil
}

// webhookNotStarted logs err, when set, of a job webhook that could not be started: a job's end
// never fails for its webhook's sake.
func webhookNotStarted(ctx workflow.Context, jobID string, err error) {
	if err != nil {
		workflow.GetLogger(ctx).Error("job webhook not started", "job_id", jobID, "error", err)
	}
}

// statusNotRunnable is the result of a job run that found its job already terminal.
const statusNotRunnable = "not_runnable"

func runJob(ctx workflow.Context, in JobInput, gate *startGate) (JobResult, error) {
	opts := in.Options.withDefaults()
	generateQueue := ""
	if in.Provider != "" {
		generateQueue = GenerateTaskQueue(workflow.GetInfo(ctx).TaskQueueName, in.Provider)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: generateQueue,
		// Only the attempt is timed, not its wait in a provider's throttled queue; a provider's
		// asynchronous jobs (videos) are polled with heartbeats within this.
		StartToCloseTimeout: 15 * time.Minute,
		// A worker that dies mid-attempt is noticed within this, and the attempt counts as TRANSIENT_INFRA.
		HeartbeatTimeout: 20 * time.Second,
		// One execution is one attempt: JobWorkflow decides about retries by category.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	inputReady := workflow.GetSignalChannel(ctx, SignalInputReady)
	ctx, outages := withOutageClock(ctx)
	first := workflow.Now(ctx)
	var inputWaitStarted time.Time
	var inputWaited time.Duration // time spent waiting for the input, left out of the retry window
	var queued time.Duration      // time before the first attempt began that was no outage: its wait in the provider's queue
	failures := 0                 // failed attempts of retryable categories, counted against the schedule
	if !gate.begin() {
		return gate.awaitCancelled(ctx)
	}
	for attempt := 1; ; attempt++ {
		err := project(ctx, contract.BeginAttempt, nil, contract.AttemptInput{JobID: in.JobID, Run: in.Run, Attempt: attempt})
		if isType(err, contract.ErrTypeJobNotRunnable) {
			return JobResult{Status: statusNotRunnable, Attempts: attempt - 1}, nil
		}
		if err != nil {
			return JobResult{}, err
		}
		if attempt == 1 && in.Shape < JobShapeLean {
			setStatus(ctx, status.JobInProgress, "")
		}
		var gen contract.GenerateResult
		// An outage of the database or the blob store is waited out here and is no attempt.
		err = runActivity(ctx, actx, contract.Generate, &gen, contract.AttemptInput{JobID: in.JobID, Run: in.Run, Attempt: attempt})
		if err == nil {
			return finishJob(ctx, in, contract.FinishJobInput{Complete: &contract.CompleteInput{
				JobID: in.JobID, Run: in.Run, Outputs: gen.Outputs,
			}}, JobResult{Status: status.JobCompleted, Attempts: attempt})
		}
		category, retryAfter, began, detail := classify(err)
		if attempt == 1 && !began.IsZero() {
			// Every outage waited so far came before the attempt began.
			queued = max(began.Sub(first)-outages.waited, 0)
		}

		if category == errorcat.InputNotReady {
			if inputWaitStarted.IsZero() {
				inputWaitStarted = workflow.Now(ctx)
			}
			remaining := opts.InputWait - workflow.Now(ctx).Sub(inputWaitStarted)
			if remaining > 0 {
				if err := markRetryPending(ctx, in, category, detail, attempt, nil); err != nil {
					return JobResult{}, err
				}
				// No polling: the job sleeps until the input-ready signal or the deadline.
				waitFrom := workflow.Now(ctx)
				ready, err := workflow.AwaitWithTimeout(ctx, remaining, func() bool { return inputReady.Len() > 0 })
				if err != nil {
					return JobResult{}, err
				}
				inputWaited += workflow.Now(ctx).Sub(waitFrom)
				for inputReady.ReceiveAsync(nil) {
				}
				if ready {
					continue
				}
			}
			return endJob(ctx, in, attempt, category, detail)
		}

		failures++
		wait := max(opts.Retry.delay(failures), retryAfter)
		elapsed := workflow.Now(ctx).Sub(first)
		// An outage is no attempt and uses none of the retry window either. Runs that waited on
		// one before this change count it (their histories decided on it): the version marker,
		// written only by runs that waited on an outage, tells them apart.
		if outages.waited > 0 && workflow.GetVersion(ctx, retryWindowChange, workflow.DefaultVersion, 1) >= 1 {
			elapsed -= outages.waited
		}
		// Nor does a wait for the input; the marker, written only by runs that waited for one,
		// keeps the runs from before this change counting it, as their histories decided.
		if inputWaited > 0 && workflow.GetVersion(ctx, inputWaitChange, workflow.DefaultVersion, 1) >= 1 {
			elapsed -= inputWaited
		}
		retry := category.Retryable() && failures < opts.Retry.MaxAttempts
		if retry && elapsed+wait > opts.Retry.MaxTotal {
			// The window runs from the first attempt's start, not from its request: its wait in
			// the provider's queue uses none of it. The marker, written only by runs that retry
			// thanks to this, keeps the runs from before this change deciding as their histories did.
			retry = queued > 0 && elapsed-queued+wait <= opts.Retry.MaxTotal &&
				workflow.GetVersion(ctx, firstAttemptChange, workflow.DefaultVersion, 1) >= 1
		}
		if retry {
			next := workflow.Now(ctx).Add(wait).UTC()
			if err := markRetryPending(ctx, in, category, detail, attempt, &next); err != nil {
				return JobResult{}, err
			}
			if err := workflow.Sleep(ctx, wait); err != nil {
				return JobResult{}, err
			}
			continue
		}
		return endJob(ctx, in, attempt, category, detail)
	}
}

// markRetryPending shows the job as retry_pending after failed attempt number attempt; next is when
// the next attempt is due after a retryable failure (it records job.retrying), nil while the job
// waits for an input.
func markRetryPending(ctx workflow.Context, in JobInput, category errorcat.Category, detail string, attempt int, next *time.Time) error {
	err := project(ctx, contract.MarkRetryPending, nil, contract.RetryPendingInput{
		JobID: in.JobID, Run: in.Run, Category: category, Detail: detail, Attempt: attempt, NextAttemptAt: next,
	})
	if err == nil {
		setStatus(ctx, status.JobRetryPending, category)
	}
	return err
}

func endJob(ctx workflow.Context, in JobInput, attempt int, category errorcat.Category, detail string) (JobResult, error) {
	end := contract.EndInput{JobID: in.JobID, Run: in.Run, Status: status.JobFailed, Category: category, Detail: detail}
	return finishJob(ctx, in, contract.FinishJobInput{End: &end},
		JobResult{Status: status.JobFailed, Attempts: attempt, Category: category})
}

// notifyOrder signals the order workflow that this job is done (shapes before JobShapeQuiet). An
// order that has already closed (for example when an operator re-runs a job later) needs no signal.
func notifyOrder(ctx workflow.Context, in JobInput, status string) {
	err := workflow.SignalExternalWorkflow(ctx, OrderWorkflowID(in.OrderID), "", SignalJobFinished,
		JobFinished{JobID: in.JobID, Run: in.Run, Status: status}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Info("order workflow not signalled", "order_id", in.OrderID, "error", err)
	}
}

// classify reads the errorCategory of a failed generate activity, the provider's Retry-After and
// when the attempt began running (zero when the failure does not say: a timeout, or an attempt
// recorded before the activity reported it), from the failure's details (contract.Generate). A
// timeout (for example a worker that died mid-attempt) is TRANSIENT_INFRA; anything unrecognised
// is INTERNAL_BUG.
func classify(err error) (c errorcat.Category, retryAfter time.Duration, began time.Time, detail string) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if c, ok := errorcat.Parse(appErr.Type()); ok {
			var seconds float64
			if appErr.HasDetails() {
				_ = appErr.Details(&seconds, &began)
			}
			return c, time.Duration(seconds * float64(time.Second)), began, errorDetail(appErr)
		}
		return errorcat.InternalBug, 0, time.Time{}, errorDetail(appErr)
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return errorcat.TransientInfra, 0, time.Time{}, err.Error()
	}
	return errorcat.InternalBug, 0, time.Time{}, err.Error()
}

// errorDetail is the error_detail support reads of an attempt's failure: its message, its cause,
// and its type (the category) in brackets. Not appErr.Error(), whose "retryable: false" speaks of
// the activity's own retries, of which there are none: whether the job is retried is the
// category's, decided by runJob.
func errorDetail(appErr *temporal.ApplicationError) string {
	detail := appErr.Message()
	if cause := appErr.Unwrap(); cause != nil {
		detail += ": " + cause.Error()
	}
	return detail + " [" + appErr.Type() + "]"
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
