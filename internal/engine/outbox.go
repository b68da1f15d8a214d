// The outbox: an order, a job re-run, an upload preparation or the webhook of a job the API
// cancelled is committed before its workflow starts (orders_intake.go, jobs_cancel.go). When the
// start after the commit is lost, the Sweeper running in every worker starts it later.
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

	"github.com/shotflow/shotflow/internal/platform/metrics"
	outage "github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// StartPending starts the workflows of orders committed more than olderThan ago whose start was
// never recorded, and returns how many it started.
func (e *Outbox) StartPending(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	orders, err := e.store.OrdersAwaitingStart(ctx, time.Now().UTC().Add(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	started := 0
	for i := range orders {
		jobs, err := e.store.OrderJobs(ctx, orders[i].ID)
		if err != nil {
			return started, err
		}
		if err := e.app.Orders.Start(ctx, &orders[i], jobs); err != nil {
			if e.stopSweep(ctx, "order workflow", orders[i].ID, err) {
				return started, err
			}
			continue
		}
		e.cfg.Log.Info("started order workflow left pending", zap.String("order_id", orders[i].ID))
		started++
	}
	return started, nil
}

// stopSweep decides what a sweep does after the start of one item (what, id) failed: an outage
// (Temporal or the database away, or the sweep's context ended) stops it, since the items after it
// would fail alike; any other failure is the item's own (a start Temporal refuses), logged, and the
// sweep goes on, so that an item that always fails holds up none behind it.
func (e *Outbox) stopSweep(ctx context.Context, what, id string, err error) bool {
	if ctx.Err() != nil || outage.Is(err) {
		return true
	}
	e.logger().Error("outbox: a start failed for a reason of its own; the sweep goes on and tries it again next time",
		zap.String("what", what), zap.String("id", id), zap.Error(err))
	return false
}

// StartJobRun starts the JobWorkflow of a job's current run when that run is not the first (an
// operator re-ran the job, see Support.RetryJob), tolerating one that already exists, and records
// the start in run_started_at. The run's workflow ID carries the run number and reuse is
// rejected, so a run executes once however often it is started.
func (e *Outbox) StartJobRun(ctx context.Context, j *models.Job) error {
	attrs := []temporal.SearchAttributeUpdate{
		workflows.SAAccountID.ValueSet(j.AccountID), workflows.SAOrderID.ValueSet(j.OrderID),
		workflows.SAJobType.ValueSet(j.JobType), workflows.SAJobStatus.ValueSet(status.JobPending),
		workflows.SALivemode.ValueSet(!j.TestMode),
	}
	if j.InstallationID != nil {
		attrs = append(attrs, workflows.SAInstallationID.ValueSet(*j.InstallationID))
	}
	_, err := e.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.JobWorkflowID(j.ID, j.Run),
		TaskQueue:                e.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		Memo:                     map[string]any{"product_ref": j.ProductRef, "product_label": j.ProductLabel},
	}, workflows.JobWorkflow, workflows.JobInput{
		JobID: j.ID, Run: j.Run, OrderID: j.OrderID, Options: e.jobOptions(j.TestMode), Provider: generateProvider(j),
		// A re-run reports to no one: its order has counted the job already (see JobShapeQuiet).
		Shape: workflows.JobShapeQuiet,
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start job workflow: %w", err)
	}
	return e.store.MarkRunStarted(ctx, j.ID, j.Run, time.Now())
}

// StartPendingRuns starts the workflows of job re-runs (run > 1, still pending) committed more than
// olderThan ago whose start was never recorded, and returns how many it started.
func (e *Outbox) StartPendingRuns(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	jobs, err := e.store.RunsAwaitingStart(ctx, time.Now().UTC().Add(-olderThan), limit)
	if err != nil {
		return 0, err
	}
	started := 0
	for i := range jobs {
		if err := e.StartJobRun(ctx, &jobs[i]); err != nil {
			if e.stopSweep(ctx, "job run", jobs[i].ID, err) {
				return started, err
			}
			continue
		}
		e.cfg.Log.Info("started job run left pending", zap.String("job_id", jobs[i].ID), zap.Int("run", jobs[i].Run))
		started++
	}
	return started, nil
}

// Sweep calls StartPending, StartPendingRuns, StartPendingPreparations, CollectAwaitedUploads and
// StartPendingDeliveries every interval until ctx ends, and counts what they started in Metrics.
func (e *Outbox) Sweep(ctx context.Context, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := e.StartPending(ctx, olderThan, 100)
		e.cfg.Metrics.OutboxSwept(metrics.OutboxOrder, n)
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("order sweep", zap.Error(err))
		}
		n, err = e.StartPendingRuns(ctx, olderThan, 100)
		e.cfg.Metrics.OutboxSwept(metrics.OutboxJobRun, n)
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("job run sweep", zap.Error(err))
		}
		n, err = e.app.Uploads.StartPendingPreparations(ctx, olderThan, 100)
		e.cfg.Metrics.OutboxSwept(metrics.OutboxPreparation, n)
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("input preparation sweep", zap.Error(err))
		}
		// Alerts a reservation queued and no API turned into events (it died in between).
		if _, err := e.app.Alerts.flush(ctx, ""); err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("alert sweep", zap.Error(err))
		}
		// Direct uploads to the store that open jobs wait for and nobody has used yet.
		n, err = e.app.Uploads.CollectAwaitedUploads(ctx, 100)
		e.cfg.Metrics.OutboxSwept(metrics.OutboxUploadCollection, n)
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("awaited upload sweep", zap.Error(err))
		}
		n, err = e.StartPendingDeliveries(ctx, olderThan, 100)
		e.cfg.Metrics.OutboxSwept(metrics.OutboxWebhookDelivery, n)
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Warn("webhook delivery sweep", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
