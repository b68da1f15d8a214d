package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// ErrNotStraggler: the job is terminal, or a workflow still runs it (or is about to start it).
var ErrNotStraggler = errors.New("job is not stranded")

// Redrive actions.
const (
	// RedriveSettle ends the stranded run failed (INTERNAL_BUG), releases its credits, tells its
	// order and sends its webhook.
	RedriveSettle = "settle"
	// RedriveRerun settles the stranded run without a webhook and runs the job again as run n+1,
	// like Support.RetryJob.
	RedriveRerun = "rerun"
)

// Straggler is a job whose row is not terminal while no workflow will ever move it: its run's
// workflow has closed (or is gone), or it was never launched and its order's workflow has closed.
type Straggler struct {
	JobID          string    `json:"job_id"`
	OrderID        string    `json:"order_id"`
	AccountID      string    `json:"account_id"`
	InstallationID *string   `json:"installation_id"`
	Status         string    `json:"status"`
	Run            int       `json:"run"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Why says which workflow is closed, e.g. "job workflow job/… is Failed".
	Why           string `json:"why"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
	Livemode      bool   `json:"livemode"` // false for a test key's job
}

// StragglerList is the answer of Support.FindStragglers.
type StragglerList struct {
	Jobs    []Straggler `json:"jobs"`
	Count   int         `json:"count"`
	Checked int         `json:"checked"` // non-terminal jobs looked at
	Limit   int         `json:"limit"`
	// Next, when set, is where the jobs not looked at yet begin: FindStragglersAfter (and
	// `shotflow admin jobs stragglers --after`) goes on from there. Unset when this page reached
	// the most recently updated job that is old enough.
	Next *StragglerCursor `json:"next,omitempty"`
}

// StragglerCursor is a position in the order the stragglers are looked for in: that of the last
// job a page looked at, by (updated_at, id). In JSON it is its text form (String).
type StragglerCursor struct {
	UpdatedAt time.Time
	JobID     string
}

// MarshalText is the cursor's String.
func (c StragglerCursor) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads the cursor's String.
func (c *StragglerCursor) UnmarshalText(b []byte) error {
	parsed, err := ParseStragglerCursor(string(b))
	if err != nil {
		return err
	}
	*c = *parsed
	return nil
}

// String is the cursor as `shotflow admin jobs stragglers --after` takes it: its time (RFC 3339,
// in nanoseconds), a slash and the job's ID.
func (c StragglerCursor) String() string {
	return c.UpdatedAt.UTC().Format(time.RFC3339Nano) + "/" + c.JobID
}

// ParseStragglerCursor reads a cursor written by StragglerCursor.String.
func ParseStragglerCursor(s string) (*StragglerCursor, error) {
	at, id, ok := strings.Cut(s, "/")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("%w: cursor %q is not TIME/JOB_ID (RFC 3339 time)", ErrInvalidFilter, s)
	}
	return &StragglerCursor{UpdatedAt: t.UTC(), JobID: id}, nil
}

// FindStragglers looks at up to limit non-terminal jobs not updated for olderThan, oldest first,
// and returns those no workflow will move any more; see FindStragglersAfter.
func (e *Support) FindStragglers(ctx context.Context, olderThan time.Duration, limit int) (StragglerList, error) {
	return e.FindStragglersAfter(ctx, olderThan, nil, limit)
}

// FindStragglersAfter looks at up to limit non-terminal jobs not updated for olderThan, behind
// after (nil: from the oldest), least recently updated first, and returns those no workflow will
// move any more, with the cursor of the next page. A backlog of healthy open jobs (a big order's
// queued jobs) can be far longer than a page: a caller that goes on from Next until it is unset
// looks at every open job, and each page costs the same however deep it starts. Jobs whose order
// or re-run start is still owed to the outbox are skipped: the worker's sweeper starts them.
func (e *Support) FindStragglersAfter(ctx context.Context, olderThan time.Duration, after *StragglerCursor, limit int) (StragglerList, error) {
	return e.FindStragglersIn(ctx, ModeAll, olderThan, after, limit)
}

// FindStragglersIn is FindStragglersAfter over the jobs of one mode: live, test (those of test
// keys) or all; the cursor of its next page is that of the same mode.
func (e *Support) FindStragglersIn(ctx context.Context, mode Mode, olderThan time.Duration, after *StragglerCursor, limit int) (StragglerList, error) {
	if !mode.valid() {
		return StragglerList{}, fmt.Errorf("%w: mode %q is not one of %v", ErrInvalidFilter, mode, Modes)
	}
	if limit <= 0 {
		limit = DefaultSupportListLimit
	}
	if limit > MaxSupportListLimit {
		return StragglerList{}, fmt.Errorf("%w: limit %d is not between 1 and %d", ErrInvalidFilter, limit, MaxSupportListLimit)
	}
	var from *models.UpdatedJobCursor
	if after != nil {
		from = &models.UpdatedJobCursor{UpdatedAt: after.UpdatedAt, ID: after.JobID}
	}
	jobs, err := e.store.StaleOpenJobs(ctx, time.Now().UTC().Add(-olderThan), from, mode.testMode(), limit)
	if err != nil {
		return StragglerList{}, err
	}
	out := StragglerList{Jobs: []Straggler{}, Checked: len(jobs), Limit: limit}
	if len(jobs) == limit {
		last := jobs[len(jobs)-1]
		out.Next = &StragglerCursor{UpdatedAt: last.UpdatedAt.UTC(), JobID: last.ID}
	}
	for i := range jobs {
		why, err := e.strandedBecause(ctx, &jobs[i])
		if err != nil {
			return out, err
		}
		if why == "" {
			continue
		}
		j := &jobs[i]
		wf := workflows.JobWorkflowID(j.ID, j.Run)
		out.Jobs = append(out.Jobs, Straggler{
			JobID: j.ID, OrderID: j.OrderID, AccountID: j.AccountID, InstallationID: j.InstallationID, Status: j.Status,
			Run: j.Run, UpdatedAt: j.UpdatedAt.UTC(), Why: why, WorkflowID: wf, TemporalUIURL: e.workflowURL(wf),
			Livemode: !j.TestMode,
		})
	}
	out.Count = len(out.Jobs)
	return out, nil
}

// strandedBecause says why no workflow will move the non-terminal job j, or "" when one will (or
// when j, as read before Temporal was asked, has ended or moved to another run since).
func (e *Support) strandedBecause(ctx context.Context, j *models.Job) (string, error) {
	why, err := e.closedWorkflowOf(ctx, j)
	if why == "" || err != nil {
		return "", err
	}
	// A workflow that closed after ending its job (the job completed between the read of j and
	// the question to Temporal: a page of open jobs is described one by one) left it terminal.
	now, err := e.store.GetJob(ctx, j.ID)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	case now.Run != j.Run || status.IsTerminalJob(now.Status):
		return "", nil
	}
	return why, nil
}

// closedWorkflowOf says which workflow that would move the non-terminal job j has closed or is
// gone, or "" when one runs (or is about to start).
func (e *Support) closedWorkflowOf(ctx context.Context, j *models.Job) (string, error) {
	if j.Run > 1 && j.RunStartedAt == nil && j.Status == status.JobPending {
		// The re-run's start is owed to the outbox, whose run sweeper starts pending runs. One
		// that has moved was started although its start was never recorded (Temporal took a start
		// the command or the sweeper saw fail): its workflow says whether it is stranded.
		return "", nil
	}
	jobWF := workflows.JobWorkflowID(j.ID, j.Run)
	wfStatus, found, err := e.workflowStatus(ctx, jobWF)
	if err != nil || (found && wfStatus == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING) {
		return "", err
	}
	if found {
		return fmt.Sprintf("job workflow %s is %s", jobWF, wfStatus), nil
	}
	if j.Run > 1 {
		return fmt.Sprintf("job workflow %s does not exist", jobWF), nil
	}
	// Never launched: fine while its order runs it, or while the order's start is owed.
	startedAt, err := e.store.OrderWorkflowStartedAt(ctx, j.OrderID)
	if err != nil {
		return "", err
	}
	if startedAt == nil {
		return "", nil
	}
	orderWF := workflows.OrderWorkflowID(j.OrderID)
	wfStatus, found, err = e.workflowStatus(ctx, orderWF)
	switch {
	case err != nil || (found && wfStatus == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING):
		return "", err
	case found:
		return fmt.Sprintf("never launched, and order workflow %s is %s", orderWF, wfStatus), nil
	}
	return fmt.Sprintf("never launched, and order workflow %s does not exist", orderWF), nil
}

// workflowStatus is the status of the latest run of a workflow; found is false when Temporal has no
// such workflow (never started, or removed after the namespace's retention).
func (e *Support) workflowStatus(ctx context.Context, workflowID string) (enumspb.WorkflowExecutionStatus, bool, error) {
	resp, err := e.cfg.Temporal.DescribeWorkflowExecution(ctx, workflowID, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("describe workflow %s: %w", workflowID, err)
	}
	return resp.GetWorkflowExecutionInfo().GetStatus(), true, nil
}

// RedriveRequest asks to re-drive a stranded job.
type RedriveRequest struct {
	JobID  string
	Action string // RedriveSettle or RedriveRerun
	Actor  string // who asked; recorded in the audit row
	Reason string // why; recorded in the audit row
}

// RedriveResult is what Support.RedriveJob did.
type RedriveResult struct {
	JobID   string `json:"job_id"`
	OrderID string `json:"order_id"`
	Action  string `json:"action"`
	// Why is why the job was stranded.
	Why string `json:"why"`
	// SettledRun is the run that was ended failed, with its credits released.
	SettledRun int    `json:"settled_run"`
	AuditID    string `json:"audit_id"`
	// WebhookDeliveryID is the settled run's job.failed delivery (settle, when the installation
	// has a callback URL); NotifyError says what went wrong telling the order or the receiver.
	WebhookDeliveryID string `json:"webhook_delivery_id,omitempty"`
	NotifyError       string `json:"notify_error,omitempty"`
	// Rerun is the new run (rerun).
	Rerun *RetryResult `json:"rerun,omitempty"`
}

// RedriveJob re-drives a stranded job (see FindStragglers), refusing any other with
// ErrNotStraggler and an unknown one as KindNotFound. Both actions first end the stranded run
// failed with INTERNAL_BUG in one transaction with its audit row (action settle): its reservation
// is released and its order's counters move. Settle then tells the order's workflow, if it still
// waits, and sends the job.failed webhook, recorded as a job's workflow records it
// (webhooks.RecordJobDelivery). Rerun instead runs the job again with RetryJob, which adds its own
// audit row (action retry) and reserves the credits of the new run; when RetryJob refuses it (a
// short balance, a spend limit, the test quota), the settled run is told as settle tells it and
// the error says so.
func (e *Support) RedriveJob(ctx context.Context, req RedriveRequest) (RedriveResult, error) {
	actor := strings.TrimSpace(req.Actor)
	if actor == "" {
		return RedriveResult{}, errors.New("redrive: an actor is required for the audit trail")
	}
	if req.Action != RedriveSettle && req.Action != RedriveRerun {
		return RedriveResult{}, fmt.Errorf("redrive: action %q is not %s or %s", req.Action, RedriveSettle, RedriveRerun)
	}
	j, err := e.store.GetJob(ctx, req.JobID)
	if errors.Is(err, models.ErrNotFound) {
		return RedriveResult{}, missing("job", req.JobID)
	}
	if err != nil {
		return RedriveResult{}, err
	}
	if status.IsTerminalJob(j.Status) {
		return RedriveResult{}, fmt.Errorf("%w: job %s is %s", ErrNotStraggler, j.ID, j.Status)
	}
	why, err := e.strandedBecause(ctx, j)
	if err != nil {
		return RedriveResult{}, err
	}
	if why == "" {
		return RedriveResult{}, fmt.Errorf("%w: a workflow still runs job %s (%s); it needs no re-drive", ErrNotStraggler, j.ID, j.Status)
	}
	res := RedriveResult{JobID: j.ID, OrderID: j.OrderID, Action: req.Action, Why: why, SettledRun: j.Run}
	audit := models.JobRetry{
		ID: models.NewID(), JobID: j.ID, OrderID: j.OrderID, AccountID: j.AccountID, FromRun: j.Run, ToRun: j.Run,
		Action: models.JobRetryActionSettle, Actor: actor, Reason: strings.TrimSpace(req.Reason), CreatedAt: time.Now().UTC(),
	}
	c := errorcat.InternalBug
	detail := fmt.Sprintf("settled by %s (shotflow admin jobs redrive --action %s): %s", actor, req.Action, why)
	err = e.store.Tx(ctx, func(tx *models.Store) error {
		_, ended, err := tx.EndJob(ctx, j.ID, j.Run, status.JobFailed, string(c), c.Hint(), detail)
		if err != nil {
			return err
		}
		if !ended {
			return fmt.Errorf("%w: job %s changed while it was being re-driven; look at it again", ErrNotStraggler, j.ID)
		}
		return tx.CreateJobRetry(ctx, &audit)
	})
	if err != nil {
		return RedriveResult{}, err
	}
	res.AuditID = audit.ID
	// The settlement is committed: from here on the caller going away must not stop the rest.
	ctx = context.WithoutCancel(ctx)
	if req.Action == RedriveRerun {
		rerun, err := e.RetryJob(ctx, RetryRequest{JobID: j.ID, Actor: actor, Reason: strings.TrimSpace(req.Reason + " (re-drive)")})
		if err == nil {
			res.Rerun = &rerun
			return res, nil
		}
		// No new run follows the settled one, which the job and its order now show failed: its
		// end is told as a settle tells it.
		e.notifySettled(ctx, j, &res)
		told := "its order and the client are told as by --action settle"
		if res.NotifyError != "" {
			told = "telling its order and the client failed: " + res.NotifyError
		}
		return res, fmt.Errorf("run %d of job %s is settled failed (%s), but the new run was not created: %w (shotflow admin jobs retry runs it again)",
			j.Run, j.ID, told, err)
	}
	e.notifySettled(ctx, j, &res)
	return res, nil
}

// notifySettled tells the end of the stranded run j that RedriveJob settled: the order's workflow,
// if it still waits, and the job.failed webhook. res takes the delivery and what went wrong.
func (e *Support) notifySettled(ctx context.Context, j *models.Job, res *RedriveResult) {
	var problems []string
	if err := e.signalOrder(ctx, j); err != nil {
		problems = append(problems, err.Error())
	}
	deliveryID, err := e.sendJobWebhook(ctx, j.ID, j.Run)
	if err != nil {
		problems = append(problems, err.Error())
	}
	res.WebhookDeliveryID, res.NotifyError = deliveryID, strings.Join(problems, "; ")
}

// signalOrder tells the job's order workflow, if it still runs, that the job has ended failed.
func (e *Support) signalOrder(ctx context.Context, j *models.Job) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := e.cfg.Temporal.SignalWorkflow(ctx, workflows.OrderWorkflowID(j.OrderID), "", workflows.SignalJobFinished,
		workflows.JobFinished{JobID: j.ID, Run: j.Run, Status: status.JobFailed})
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("signal order workflow: %w", err)
	}
	return nil
}

// sendJobWebhook records the events of a job run that ended outside its workflow and starts their
// deliveries, as a job's workflow does; it returns the ID of the job event's first delivery, or ""
// when no endpoint subscribed to it.
func (e *Support) sendJobWebhook(ctx context.Context, jobID string, run int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	owed, err := e.recorder().RecordJobEndByID(ctx, e.store, jobID, run)
	if err != nil {
		return "", fmt.Errorf("record webhook: %w", err)
	}
	// Their starts are owed: one lost here is made by the outbox sweep.
	e.app.Outbox.StartOwedDeliveries(ctx, owed)
	for _, d := range owed {
		if d.Job() == jobID {
			return d.ID, nil
		}
	}
	return "", nil
}

// ReportStragglers logs a warning for every stranded job FindStragglersAfter finds, every interval
// until ctx ends: workers run it so that operators learn of jobs that need `shotflow admin jobs
// redrive`. Each sweep looks at one page of MaxSupportListLimit open jobs, the page after the
// previous sweep's, and starts again from the oldest after the last page: however long a backlog of
// healthy jobs is, every stranded job is reported within one pass over it.
func (e *Support) ReportStragglers(ctx context.Context, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var after *StragglerCursor
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		after = e.reportStragglers(ctx, olderThan, after)
	}
}

// reportStragglers is one sweep of ReportStragglers: it logs the stranded jobs of the page behind
// after and returns where the next sweep starts (after again when the page failed).
func (e *Support) reportStragglers(ctx context.Context, olderThan time.Duration, after *StragglerCursor) *StragglerCursor {
	list, err := e.FindStragglersAfter(ctx, olderThan, after, MaxSupportListLimit)
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.Log.Warn("straggler sweep", zap.Error(err))
		}
		return after
	}
	for _, s := range list.Jobs {
		e.cfg.Log.Warn("stranded job: its workflow will not move it; re-drive it with `shotflow admin jobs redrive JOB_ID --action settle|rerun`",
			zap.String("job_id", s.JobID), zap.String("order_id", s.OrderID), zap.String("status", s.Status),
			zap.Int("run", s.Run), zap.String("why", s.Why), zap.String("temporal_ui_url", s.TemporalUIURL))
	}
	return list.Next
}
