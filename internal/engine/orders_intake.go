// Intake: the engine accepts orders for both APIs: it creates the order and its jobs and reserves their
// credits in one database transaction, then starts the order's workflow.
//
// The pattern is a transactional outbox. An order row whose workflow_started_at is NULL is an
// order that still has to be started. The API starts the workflow right after the commit (the
// fast path) and records the start; if the process dies in between, or Temporal is unreachable,
// the Sweeper running in every worker starts it later. Workflow IDs are the order IDs and reuse
// is rejected, so a double start is harmless and never charges twice. Credits are therefore never
// reserved for an order that nothing will run, and no workflow exists for an order that was not
// committed.
//
// A job that support staff run again (Support.RetryJob) follows the same pattern: the new run and
// its reservation are committed with run_started_at NULL, StartJobRun starts its workflow, and the
// Sweeper starts any run whose start was lost.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Submit creates the order and its jobs, reserves their credits, and starts the workflow. It
// returns models.ErrInsufficientCredits (and creates nothing) when the balance is short. A failed
// workflow start is not an error for the caller: the order is committed and the Sweeper starts it.
func (e *Orders) Submit(ctx context.Context, order *models.Order, jobs []models.Job) error {
	return e.SubmitWith(ctx, order, jobs, nil)
}

// SubmitWith is Submit that also runs inTx, when not nil, inside the order's transaction after the
// reservation (order.CreditsReserved is set): an error from it rolls the order, its jobs and the
// reservation back and is returned, and nothing is started. The API records an Idempotency-Key's
// answer this way, atomically with the order it names.
func (e *Orders) SubmitWith(ctx context.Context, order *models.Order, jobs []models.Job, inTx func(tx *models.Store) error) error {
	if err := e.Commit(ctx, order, jobs, inTx); err != nil {
		return err
	}
	e.StartCommitted(ctx, order, jobs)
	return nil
}

// Commit is the transaction of SubmitWith alone (models.Store.PlaceOrder: one statement in autocommit
// when there is no inTx and the database allows it): the order, its jobs and their reservation
// (and inTx) are committed but the workflow is not started. Call StartCommitted next; should the caller
// die first, the Sweeper starts it. POST /jobs/batch commits all its sessions this way before
// starting their workflows together.
func (e *Orders) Commit(ctx context.Context, order *models.Order, jobs []models.Job, inTx func(tx *models.Store) error) error {
	now := time.Now().UTC()
	order.CreatedAt, order.UpdatedAt = now, now
	order.Status = status.OrderInProgress
	order.JobsTotal = len(jobs)
	for i := range jobs {
		jobs[i].OrderID = order.ID
		jobs[i].CreatedAt, jobs[i].UpdatedAt = now, now
		if jobs[i].Run == 0 {
			jobs[i].Run = 1
		}
	}
	if err := e.place(ctx, order, jobs, inTx); err != nil {
		need := order.CreditsReserved
		order.CreditsReserved = 0 // nothing was reserved
		var sl *models.SpendLimitError
		if errors.As(err, &sl) {
			e.app.Alerts.limitReached(ctx, sl, need)
			return spendLimitRefusal(sl, need, err)
		}
		return err
	}
	e.cfg.Metrics.OrderAccepted(order.API, order.JobType, order.TestMode, len(jobs), order.CreditsReserved)
	if order.AlertsPending > 0 {
		e.app.Alerts.Flush(ctx, order.AccountID)
	}
	return nil
}

// place commits the order: a live one as it is (models.Store.PlaceOrder), a test one with its test
// twin's day refilled and its jobs counted against the day's quota in the same transaction
// (models.Store.PlaceTestOrder), refused with ReasonTestQuotaExceeded when they do not fit, with
// RetryAfter until the quota resets by the database's clock, which bounds the test day (a
// process's own clock may be off).
func (e *Orders) place(ctx context.Context, order *models.Order, jobs []models.Job, inTx func(tx *models.Store) error) error {
	if !order.TestMode {
		return e.store.PlaceOrder(ctx, order, jobs, inTx)
	}
	err := e.store.PlaceTestOrder(ctx, order, jobs, e.now(), inTx)
	var quota *models.TestQuotaError
	if errors.As(err, &quota) {
		r := refuse(KindRateLimited, ReasonTestQuotaExceeded, "",
			"Test mode runs at most %d jobs per UTC day and this request's %d would go past it; nothing was created. The quota resets at midnight UTC.",
			models.TestDailyJobs, len(jobs))
		r.RetryAfter, r.Cause = quota.RetryAfter(), err
		return r
	}
	return err
}

// spendLimitRefusal is the refusal of a request that needs credits by the spend limit sl.
func spendLimitRefusal(sl *models.SpendLimitError, need int64, cause error) *Error {
	whose := "account's"
	if sl.InstallationID != "" {
		whose = "installation's"
	}
	r := refuse(KindInsufficientCredits, ReasonSpendLimitExceeded, "",
		"This request needs %d credits and would take the %s monthly spend limit of %d past it (%d used this month); nothing was created. The limit resets at %s.",
		need, whose, sl.Limit, sl.Used, sl.ResetsAt.Format(time.RFC3339))
	r.CreditsRequired, r.Cause = need, cause
	r.SpendLimit = &SpendLimitRefusal{Limit: sl.Limit, Used: sl.Used, ResetsAt: sl.ResetsAt, Installation: sl.InstallationID != ""}
	return r
}

// StartCommitted starts the workflow of an order that Commit committed (within StartTimeout, and
// not at all while the process has found Temporal unavailable: startGate). A failure is logged,
// not returned: the order is committed, so it only delays the start until the Sweeper makes it.
func (e *Orders) StartCommitted(ctx context.Context, order *models.Order, jobs []models.Job) {
	if e.cfg.AfterCommit != nil {
		e.cfg.AfterCommit()
	}
	startCtx, cancel := e.startContext(ctx)
	defer cancel()
	err := e.gatedStart(startCtx, orderStartLeft, zap.String("order_id", order.ID),
		func(ctx context.Context) error { return e.startWorkflow(ctx, order, jobs) })
	if err == nil {
		e.app.Outbox.markStarted(order.ID)
	}
}

// orderStartLeft is the log line of an order whose workflow a request did not start.
const orderStartLeft = "order workflow not started yet; the sweeper will start it"

// Start starts the order's workflow (tolerating one that already exists) and records the start.
func (e *Orders) Start(ctx context.Context, order *models.Order, jobs []models.Job) error {
	if err := e.startWorkflow(ctx, order, jobs); err != nil {
		return err
	}
	return e.store.MarkOrdersStarted(ctx, time.Now(), order.ID)
}

// startWorkflow starts the order's workflow, tolerating one that already exists.
func (e *Orders) startWorkflow(ctx context.Context, order *models.Order, jobs []models.Job) error {
	in := workflows.OrderInput{
		OrderID: order.ID, AccountID: order.AccountID, JobType: order.JobType, TestMode: order.TestMode,
		MaxConcurrentJobs: e.cfg.MaxConcurrentJobs, JobOptions: e.jobOptions(order.TestMode), ContinueAsNewAfter: e.cfg.ContinueAsNewAfter,
		Version: workflows.OrderVersion,
	}
	if order.InstallationID != nil {
		in.InstallationID = *order.InstallationID
	}
	for _, j := range jobs {
		if status.IsTerminalJob(j.Status) {
			continue
		}
		ref := workflows.JobRef{JobID: j.ID, Run: j.Run, ProductRef: j.ProductRef, ProductLabel: j.ProductLabel, Provider: generateProvider(&j)}
		if e.cfg.JobStartDeadline > 0 {
			ref.ExpiresAt = j.CreatedAt.Add(e.cfg.JobStartDeadline)
		}
		in.Jobs = append(in.Jobs, ref)
	}
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.OrderWorkflowID(order.ID),
		TaskQueue: e.cfg.TaskQueue,
		// An order runs once. Rejecting reuse makes a second start (the sweeper racing the API, or
		// a retried start) fail instead of running the order twice.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    workflows.OrderSearchAttributes(in),
		Memo:                     orderMemo(order, len(jobs)),
	}, workflows.OrderWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start order workflow: %w", err)
	}
	return nil
}

// orderMemo is the memo of an order's workflow: the API that accepted it, its job count and the
// correlation ID of the request, which the API's log lines carry too.
func orderMemo(order *models.Order, jobs int) map[string]any {
	memo := map[string]any{"api": order.API, "jobs_total": jobs}
	if order.CorrelationID != "" {
		memo["correlation_id"] = order.CorrelationID
	}
	return memo
}
