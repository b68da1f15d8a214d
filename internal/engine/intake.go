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
// A job that support staff run again (internal/support) follows the same pattern: the new run and
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
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Engine runs the use cases both APIs share over the database and Temporal: accepting orders
// (this file), cancelling, rating and refreshing jobs, and generator liveness.
type Engine struct {
	DB        *gorm.DB
	Temporal  client.Client
	TaskQueue string
	Log       *zap.Logger
	// Models are the configured generation models: what sessions and generations are planned
	// with, and the catalog (models, aspect ratios, prices) the APIs show. It may be nil only in an
	// engine that plans nothing (the admin tools' job runs).
	Models ModelRegistry
	// JobStartDeadline, when set, expires jobs that have not started that long after acceptance.
	JobStartDeadline time.Duration
	// MaxConcurrentJobs caps the running jobs of one order (0: the workflow's default).
	MaxConcurrentJobs int
	// JobOptions tune the orders' JobWorkflows.
	JobOptions workflows.JobOptions
	// ContinueAsNewAfter is how many jobs an order workflow run launches before it continues as
	// new (0: the workflow's default); tests lower it.
	ContinueAsNewAfter int
	// AfterCommit, when set, runs between the order's commit and its workflow start. It exists for
	// crash tests, which kill the process there (SHOTFLOW_TEST_CRASH_AFTER_COMMIT in cmd/shotflow).
	AfterCommit func()
	// Metrics counts accepted orders and the workflows the Sweeper starts; nil counts nothing.
	Metrics *metrics.Metrics

	live  liveness   // providers recently seen with an active generator
	marks startMarks // workflow starts of accepted orders, recorded in batches
}

// Submit creates the order and its jobs, reserves their credits, and starts the workflow. It
// returns models.ErrInsufficientCredits (and creates nothing) when the balance is short. A failed
// workflow start is not an error for the caller: the order is committed and the Sweeper starts it.
func (e *Engine) Submit(ctx context.Context, order *models.Order, jobs []models.Job) error {
	return e.SubmitWith(ctx, order, jobs, nil)
}

// SubmitWith is Submit that also runs inTx, when not nil, inside the order's transaction after the
// reservation (order.CreditsReserved is set): an error from it rolls the order, its jobs and the
// reservation back and is returned, and nothing is started. The API records an Idempotency-Key's
// answer this way, atomically with the order it names.
func (e *Engine) SubmitWith(ctx context.Context, order *models.Order, jobs []models.Job, inTx func(tx *gorm.DB) error) error {
	if err := e.Commit(ctx, order, jobs, inTx); err != nil {
		return err
	}
	e.StartCommitted(ctx, order, jobs)
	return nil
}

// Commit is the transaction of SubmitWith alone (models.PlaceOrder: one statement in autocommit
// when there is no inTx and the database allows it): the order, its jobs and their reservation
// (and inTx) are committed but the workflow is not started. Call StartCommitted next; should the caller
// die first, the Sweeper starts it. POST /jobs/batch commits all its sessions this way before
// starting their workflows together.
func (e *Engine) Commit(ctx context.Context, order *models.Order, jobs []models.Job, inTx func(tx *gorm.DB) error) error {
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
	if err := models.PlaceOrder(e.DB.WithContext(ctx), order, jobs, inTx); err != nil {
		order.CreditsReserved = 0 // nothing was reserved
		return err
	}
	e.Metrics.OrderAccepted(order.API, order.JobType, len(jobs), order.CreditsReserved)
	return nil
}

// StartCommitted starts the workflow of an order that Commit committed. A failure is logged, not
// returned: the order is committed, so it only delays the start until the Sweeper makes it.
func (e *Engine) StartCommitted(ctx context.Context, order *models.Order, jobs []models.Job) {
	if e.AfterCommit != nil {
		e.AfterCommit()
	}
	// The order is committed: from here on a failure only delays the start. A client that hangs up
	// must not cancel the start either.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.startWorkflow(startCtx, order, jobs); err != nil {
		e.Log.Warn("order workflow not started yet; the sweeper will start it",
			zap.String("order_id", order.ID), zap.Error(err))
		return
	}
	e.markStarted(order.ID)
}

// Start starts the order's workflow (tolerating one that already exists) and records the start.
func (e *Engine) Start(ctx context.Context, order *models.Order, jobs []models.Job) error {
	if err := e.startWorkflow(ctx, order, jobs); err != nil {
		return err
	}
	return models.MarkOrdersStarted(e.DB.WithContext(ctx), time.Now(), order.ID)
}

// startWorkflow starts the order's workflow, tolerating one that already exists.
func (e *Engine) startWorkflow(ctx context.Context, order *models.Order, jobs []models.Job) error {
	in := workflows.OrderInput{
		OrderID: order.ID, AccountID: order.AccountID, JobType: order.JobType,
		MaxConcurrentJobs: e.MaxConcurrentJobs, JobOptions: e.JobOptions, ContinueAsNewAfter: e.ContinueAsNewAfter,
		Version: workflows.OrderVersion,
	}
	if order.InstallationID != nil {
		in.InstallationID = *order.InstallationID
	}
	for _, j := range jobs {
		if status.IsTerminalJob(j.Status) {
			continue
		}
		ref := workflows.JobRef{JobID: j.ID, Run: j.Run, ProductRef: j.ProductRef, ProductLabel: j.ProductLabel, Provider: j.Provider()}
		if e.JobStartDeadline > 0 {
			ref.ExpiresAt = j.CreatedAt.Add(e.JobStartDeadline)
		}
		in.Jobs = append(in.Jobs, ref)
	}
	_, err := e.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.OrderWorkflowID(order.ID),
		TaskQueue: e.TaskQueue,
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

// StartPending starts the workflows of orders committed more than olderThan ago whose start was
// never recorded, and returns how many it started.
func (e *Engine) StartPending(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	var orders []models.Order
	cutoff := time.Now().UTC().Add(-olderThan)
	if err := e.DB.WithContext(ctx).Where("workflow_started_at IS NULL AND created_at <= ?", cutoff).
		Order("created_at").Limit(limit).Find(&orders).Error; err != nil {
		return 0, err
	}
	started := 0
	for i := range orders {
		jobs, err := models.OrderJobs(e.DB.WithContext(ctx), orders[i].ID)
		if err != nil {
			return started, err
		}
		if err := e.Start(ctx, &orders[i], jobs); err != nil {
			return started, err
		}
		e.Log.Info("started order workflow left pending", zap.String("order_id", orders[i].ID))
		started++
	}
	return started, nil
}

// StartJobRun starts the JobWorkflow of a job's current run when that run is not the first (an
// operator re-ran the job, see internal/support), tolerating one that already exists, and records
// the start in run_started_at. The run's workflow ID carries the run number and reuse is
// rejected, so a run executes once however often it is started.
func (e *Engine) StartJobRun(ctx context.Context, j *models.Job) error {
	attrs := []temporal.SearchAttributeUpdate{
		workflows.SAAccountID.ValueSet(j.AccountID), workflows.SAOrderID.ValueSet(j.OrderID),
		workflows.SAJobType.ValueSet(j.JobType), workflows.SAJobStatus.ValueSet(status.JobPending),
	}
	if j.InstallationID != nil {
		attrs = append(attrs, workflows.SAInstallationID.ValueSet(*j.InstallationID))
	}
	_, err := e.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.JobWorkflowID(j.ID, j.Run),
		TaskQueue:                e.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		Memo:                     map[string]any{"product_ref": j.ProductRef, "product_label": j.ProductLabel},
	}, workflows.JobWorkflow, workflows.JobInput{
		JobID: j.ID, Run: j.Run, OrderID: j.OrderID, Options: e.JobOptions, Provider: j.Provider(),
		// A re-run reports to no one: its order has counted the job already (see JobShapeQuiet).
		Shape: workflows.JobShapeQuiet,
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start job workflow: %w", err)
	}
	return e.DB.WithContext(ctx).Model(&models.Job{}).
		Where("id = ? AND run = ? AND run_started_at IS NULL", j.ID, j.Run).
		Update("run_started_at", time.Now().UTC()).Error
}

// StartPendingRuns starts the workflows of job re-runs (run > 1, still pending) committed more than
// olderThan ago whose start was never recorded, and returns how many it started.
func (e *Engine) StartPendingRuns(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	var jobs []models.Job
	cutoff := time.Now().UTC().Add(-olderThan)
	if err := e.DB.WithContext(ctx).
		Where("run > 1 AND run_started_at IS NULL AND status = ? AND updated_at <= ?", status.JobPending, cutoff).
		Order("updated_at").Limit(limit).Find(&jobs).Error; err != nil {
		return 0, err
	}
	for i := range jobs {
		if err := e.StartJobRun(ctx, &jobs[i]); err != nil {
			return i, err
		}
		e.Log.Info("started job run left pending", zap.String("job_id", jobs[i].ID), zap.Int("run", jobs[i].Run))
	}
	return len(jobs), nil
}

// StartPrepare starts the PrepareInputWorkflow of an upload whose bytes are stored (status
// processing), joining one that is already running. A finished preparation may run again: it
// changes nothing unless the asset is back in processing.
func (e *Engine) StartPrepare(ctx context.Context, asset *models.Asset) error {
	_, err := e.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.PrepareInputWorkflowID(asset.ID),
		TaskQueue:                e.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAAccountID.ValueSet(asset.AccountID)),
	}, workflows.PrepareInputWorkflow, workflows.PrepareInput{AssetID: asset.ID, AccountID: asset.AccountID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start input preparation: %w", err)
	}
	return nil
}

// StartPendingPreparations starts the preparation of uploads left in processing for more than
// olderThan (the API died between storing the bytes and starting the workflow, or Temporal was
// unreachable), and returns how many it started.
func (e *Engine) StartPendingPreparations(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	var assets []models.Asset
	cutoff := time.Now().UTC().Add(-olderThan)
	if err := e.DB.WithContext(ctx).Select("id", "account_id").
		Where("status = ? AND updated_at <= ?", status.AssetProcessing, cutoff).
		Order("updated_at").Limit(limit).Find(&assets).Error; err != nil {
		return 0, err
	}
	for i := range assets {
		if err := e.StartPrepare(ctx, &assets[i]); err != nil {
			return i, err
		}
	}
	return len(assets), nil
}

// Sweep calls StartPending, StartPendingRuns and StartPendingPreparations every interval until ctx
// ends, and counts what they started in Metrics.
func (e *Engine) Sweep(ctx context.Context, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := e.StartPending(ctx, olderThan, 100)
		e.Metrics.OutboxSwept(metrics.OutboxOrder, n)
		if err != nil && ctx.Err() == nil {
			e.Log.Warn("order sweep", zap.Error(err))
		}
		n, err = e.StartPendingRuns(ctx, olderThan, 100)
		e.Metrics.OutboxSwept(metrics.OutboxJobRun, n)
		if err != nil && ctx.Err() == nil {
			e.Log.Warn("job run sweep", zap.Error(err))
		}
		n, err = e.StartPendingPreparations(ctx, olderThan, 100)
		e.Metrics.OutboxSwept(metrics.OutboxPreparation, n)
		if err != nil && ctx.Err() == nil {
			e.Log.Warn("input preparation sweep", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
