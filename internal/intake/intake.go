// Package intake accepts orders for both APIs: it creates the order and its jobs and reserves their
// credits in one database transaction, then starts the order's workflow.
//
// The pattern is a transactional outbox. An order row whose workflow_started_at is NULL is an
// order that still has to be started. The API starts the workflow right after the commit (the
// fast path) and records the start; if the process dies in between, or Temporal is unreachable,
// the Sweeper running in every worker starts it later. Workflow IDs are the order IDs and reuse
// is rejected, so a double start is harmless and never charges twice. Credits are therefore never
// reserved for an order that nothing will run, and no workflow exists for an order that was not
// committed.
package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Starter starts order workflows.
type Starter struct {
	DB        *gorm.DB
	Temporal  client.Client
	TaskQueue string
	Log       *zap.Logger
	// JobStartDeadline, when set, expires jobs that have not started that long after acceptance.
	JobStartDeadline time.Duration
	// MaxConcurrentJobs caps the running jobs of one order (0: the workflow's default).
	MaxConcurrentJobs int
	// JobOptions tune the orders' JobWorkflows.
	JobOptions workflows.JobOptions
	// AfterCommit, when set, runs between the order's commit and its workflow start. It exists for
	// crash tests, which kill the process there (SHOTFLOW_TEST_CRASH_AFTER_COMMIT in cmd/shotflow).
	AfterCommit func()
}

// Submit creates the order and its jobs, reserves their credits, and starts the workflow. It
// returns models.ErrInsufficientCredits (and creates nothing) when the balance is short. A failed
// workflow start is not an error for the caller: the order is committed and the Sweeper starts it.
func (s *Starter) Submit(ctx context.Context, order *models.Order, jobs []models.Job) error {
	now := time.Now().UTC()
	order.CreatedAt, order.UpdatedAt = now, now
	order.Status = models.OrderInProgress
	order.JobsTotal = len(jobs)
	for i := range jobs {
		jobs[i].OrderID = order.ID
		jobs[i].CreatedAt, jobs[i].UpdatedAt = now, now
		if jobs[i].Run == 0 {
			jobs[i].Run = 1
		}
	}
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(order).Error; err != nil {
			return err
		}
		if err := tx.CreateInBatches(jobs, 200).Error; err != nil {
			return err
		}
		total, err := models.ReserveForJobs(tx, order.AccountID, order.ID, jobs)
		if err != nil {
			return err
		}
		order.CreditsReserved = total
		return tx.Model(order).Update("credits_reserved", total).Error
	})
	if err != nil {
		return err
	}
	if s.AfterCommit != nil {
		s.AfterCommit()
	}
	// The order is committed: from here on a failure only delays the start. A client that hangs up
	// must not cancel the start either.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.Start(startCtx, order, jobs); err != nil {
		s.Log.Warn("order workflow not started yet; the sweeper will start it",
			zap.String("order_id", order.ID), zap.Error(err))
	}
	return nil
}

// Start starts the order's workflow (tolerating one that already exists) and records the start.
func (s *Starter) Start(ctx context.Context, order *models.Order, jobs []models.Job) error {
	in := workflows.OrderInput{
		OrderID: order.ID, AccountID: order.AccountID, JobType: order.JobType,
		MaxConcurrentJobs: s.MaxConcurrentJobs, JobOptions: s.JobOptions,
	}
	if order.InstallationID != nil {
		in.InstallationID = *order.InstallationID
	}
	for _, j := range jobs {
		if models.IsTerminalJobStatus(j.Status) {
			continue
		}
		ref := workflows.JobRef{JobID: j.ID, Run: j.Run, ProductRef: j.ProductRef, ProductLabel: j.ProductLabel}
		if s.JobStartDeadline > 0 {
			ref.ExpiresAt = j.CreatedAt.Add(s.JobStartDeadline)
		}
		in.Jobs = append(in.Jobs, ref)
	}
	_, err := s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflows.OrderWorkflowID(order.ID),
		TaskQueue: s.TaskQueue,
		// An order runs once. Rejecting reuse makes a second start (the sweeper racing the API, or
		// a retried start) fail instead of running the order twice.
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes:    workflows.OrderSearchAttributes(in),
		Memo:                     map[string]any{"api": order.API, "jobs_total": len(jobs)},
	}, workflows.OrderWorkflow, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start order workflow: %w", err)
	}
	return s.DB.WithContext(ctx).Model(&models.Order{}).
		Where("id = ? AND workflow_started_at IS NULL", order.ID).
		Update("workflow_started_at", time.Now().UTC()).Error
}

// StartPending starts the workflows of orders committed more than olderThan ago whose start was
// never recorded, and returns how many it started.
func (s *Starter) StartPending(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	var orders []models.Order
	cutoff := time.Now().UTC().Add(-olderThan)
	if err := s.DB.WithContext(ctx).Where("workflow_started_at IS NULL AND created_at <= ?", cutoff).
		Order("created_at").Limit(limit).Find(&orders).Error; err != nil {
		return 0, err
	}
	started := 0
	for i := range orders {
		var jobs []models.Job
		if err := s.DB.WithContext(ctx).Where("order_id = ?", orders[i].ID).Order("position").Find(&jobs).Error; err != nil {
			return started, err
		}
		if err := s.Start(ctx, &orders[i], jobs); err != nil {
			return started, err
		}
		s.Log.Info("started order workflow left pending", zap.String("order_id", orders[i].ID))
		started++
	}
	return started, nil
}

// Sweep calls StartPending every interval until ctx ends.
func (s *Starter) Sweep(ctx context.Context, interval, olderThan time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.StartPending(ctx, olderThan, 100); err != nil && ctx.Err() == nil {
			s.Log.Warn("order sweep", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
