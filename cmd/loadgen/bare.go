package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The bare baseline: what the same Temporal frontend does with the least a job can be, a child
// workflow that runs one no-op activity, so shotflow's rates can be read as a share of it.
const (
	bareParentName   = "LoadgenBareParent"
	bareChildName    = "LoadgenBareChild"
	bareActivityName = "LoadgenBareNoop"
	// bareShapedName is a bare job started with an order's shape (-bare-shape order): its input
	// is ignored.
	bareShapedName = "LoadgenBareShaped"
)

// Shapes of the bare starts (-bare-shape).
const (
	shapePlain = "plain" // no input, search attributes or memo: the least a start can be
	shapeOrder = "order" // the input, search attributes and memo of a 1-job plugin order's start
)

// orderShape is what -bare-shape order adds to a bare start: the five search attributes, the memo
// and an input of the fields shotflow's API gives the workflow of a session of one image
// (engine.Orders.startWorkflow; a command may not import workflows, so the input is a copy of
// workflows.OrderInput's fields with the values such a session has). Measured against plain starts
// it shows what the start's shape costs Temporal and PostgreSQL, apart from the API and
// shotflow's statements.
func orderShape(o *client.StartWorkflowOptions, i int) []any {
	id := func(prefix string) string { return fmt.Sprintf("%s_01KBXK%020d", prefix, i) }
	o.TypedSearchAttributes = temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword("ShotflowAccountID").ValueSet(id("acc")),
		temporal.NewSearchAttributeKeyKeyword("ShotflowOrderID").ValueSet(id("ord")),
		temporal.NewSearchAttributeKeyKeyword("ShotflowJobType").ValueSet("photo_shoot"),
		temporal.NewSearchAttributeKeyBool("ShotflowLivemode").ValueSet(true),
		temporal.NewSearchAttributeKeyKeyword("ShotflowInstallationID").ValueSet(id("ins")),
	)
	o.Memo = map[string]any{"api": "plugin", "jobs_total": 1, "correlation_id": id("req")}
	type jobRef struct {
		JobID        string
		Run          int
		ProductRef   string
		ProductLabel string
		ExpiresAt    time.Time
		Provider     string
	}
	type retrySchedule struct {
		Delays      []time.Duration
		MaxAttempts int
		MaxTotal    time.Duration
	}
	type result struct{ Completed, Failed, Cancelled, Expired int }
	input := struct {
		OrderID, AccountID, InstallationID, JobType string
		Jobs                                        []jobRef
		Running                                     []string
		MaxConcurrentJobs                           int
		JobOptions                                  struct {
			Retry     retrySchedule
			InputWait time.Duration
		}
		Result  result
		Version int
	}{OrderID: id("ord"), AccountID: id("acc"), InstallationID: id("ins"), JobType: "photo_shoot",
		Jobs:              []jobRef{{JobID: id("job"), Run: 1, ProductRef: "loadgen-1", ProductLabel: "Loadgen product 1", ExpiresAt: time.Now().Add(24 * time.Hour), Provider: "local"}},
		MaxConcurrentJobs: 50, Version: 4}
	input.JobOptions.Retry = retrySchedule{Delays: []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute},
		MaxAttempts: 6, MaxTotal: 30 * time.Minute}
	input.JobOptions.InputWait = 10 * time.Minute
	return []any{input}
}

// bareNoop is the activity of a bare job: it does nothing.
func bareNoop(context.Context) error { return nil }

// bareChild is a bare job: one activity.
func bareChild(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, bareActivityName).Get(ctx, nil)
}

// bareShaped is a bare job of a shaped start: its input is the order's shape, and ignored.
func bareShaped(ctx workflow.Context, _ any) error { return bareChild(ctx) }

// bareParent is a bare order: it starts n children at once and waits for them all.
func bareParent(ctx workflow.Context, n int) error {
	futures := make([]workflow.ChildWorkflowFuture, n)
	for i := range futures {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: fmt.Sprintf("%s/%d", workflow.GetInfo(ctx).WorkflowExecution.ID, i),
		})
		futures[i] = workflow.ExecuteChildWorkflow(cctx, bareChildName)
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// startBareWorker runs the bare workflows on their own task queue in this process.
func startBareWorker(c client.Client, taskQueue string) (worker.Worker, error) {
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(bareParent, workflow.RegisterOptions{Name: bareParentName})
	w.RegisterWorkflowWithOptions(bareChild, workflow.RegisterOptions{Name: bareChildName})
	w.RegisterWorkflowWithOptions(bareShaped, workflow.RegisterOptions{Name: bareShapedName})
	w.RegisterActivityWithOptions(bareNoop, activity.RegisterOptions{Name: bareActivityName})
	return w, w.Start()
}

// startAll starts n workflows, concurrency at a time, and returns their runs in start order
// with the latency of each start, sorted.
func startAll(ctx context.Context, n, concurrency int, start func(i int) (client.WorkflowRun, error)) ([]client.WorkflowRun, []time.Duration, error) {
	runs := make([]client.WorkflowRun, n)
	latency := make([]time.Duration, n)
	errs := make([]error, n)
	sem := make(chan struct{}, max(concurrency, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t0 := time.Now()
			runs[i], errs[i] = start(i)
			latency[i] = time.Since(t0)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(latency)
	return runs, latency, nil
}

// waitAll waits until every run has completed, failing on the first that failed.
func waitAll(ctx context.Context, runs []client.WorkflowRun) error {
	for _, r := range runs {
		if err := r.Get(ctx, nil); err != nil {
			return fmt.Errorf("workflow %s: %w", r.GetID(), err)
		}
	}
	return nil
}

// bareStarts is the start-only baseline: n plain StartWorkflowExecution calls of a one-activity
// workflow, concurrency at a time, measured until the last start returns. It returns the runs for
// the caller to wait for (waitAll) outside the measurement, so they do not load the next phase.
func bareStarts(ctx context.Context, c client.Client, taskQueue, prefix, shape string, n, concurrency int) (phase, []client.WorkflowRun, error) {
	t0 := time.Now()
	runs, latency, err := startAll(ctx, n, concurrency, func(i int) (client.WorkflowRun, error) {
		o := client.StartWorkflowOptions{ID: fmt.Sprintf("%s-start-%d", prefix, i), TaskQueue: taskQueue}
		if shape == shapeOrder {
			return c.ExecuteWorkflow(ctx, o, bareShapedName, orderShape(&o, i)...)
		}
		return c.ExecuteWorkflow(ctx, o, bareChildName)
	})
	if err != nil {
		return phase{}, nil, fmt.Errorf("bare start: %w", err)
	}
	return phase{count: n, secs: time.Since(t0).Seconds(), latency: latency}, runs, nil
}

// bareOrders is the 50-child baseline: parents workflows of children bare jobs each,, started
// concurrency at a time and measured until the last one completes.
func bareOrders(ctx context.Context, c client.Client, taskQueue, prefix string, parents, children, concurrency int) (phase, []string, error) {
	t0 := time.Now()
	runs, latency, err := startAll(ctx, parents, concurrency, func(i int) (client.WorkflowRun, error) {
		return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-order-%d", prefix, i), TaskQueue: taskQueue}, bareParentName, children)
	})
	if err != nil {
		return phase{}, nil, fmt.Errorf("bare order start: %w", err)
	}
	if err := waitAll(ctx, runs); err != nil {
		return phase{}, nil, err
	}
	return phase{count: parents * children, secs: time.Since(t0).Seconds(), latency: latency}, workflowIDs(runs), nil
}

func workflowIDs(runs []client.WorkflowRun) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.GetID()
	}
	return ids
}
