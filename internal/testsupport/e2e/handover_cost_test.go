package e2e_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/historycost"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// TestHandOverHistoryCost measures the history of every run of a 500-job order whose first job
// runs long (docs/benchmarks.md, issue 23 items 9 and 10), at OrderInput.Version 3 (each run waits
// for its jobs) and 4 (runs hand their running jobs over). The jobs are stand-ins that end at once
// (the long one when the test says) and WatchJobs a stand-in that reads their ends from memory:
// only the order's history is measured. Set SHOTFLOW_MEASURE_HANDOVER=1 to run it.
func TestHandOverHistoryCost(t *testing.T) {
	if os.Getenv("SHOTFLOW_MEASURE_HANDOVER") != "1" {
		t.Skip("a measurement; SHOTFLOW_MEASURE_HANDOVER=1 runs it")
	}
	for _, version := range []int{3, workflows.OrderVersion} {
		t.Run(fmt.Sprintf("version %d", version), func(t *testing.T) {
			measureHandOver(t, version)
		})
	}
}

func measureHandOver(t *testing.T, version int) {
	c := temporalServer.Client()
	prefix := fmt.Sprintf("handover-v%d-%d", version, time.Now().UnixNano())
	long := prefix + "-long"
	var mu sync.Mutex
	ended := map[string]bool{}
	job := func(ctx workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
		if in.JobID == long {
			workflow.GetSignalChannel(ctx, "end").Receive(ctx, nil)
		}
		mu.Lock()
		ended[in.JobID] = true
		mu.Unlock()
		return workflows.JobResult{Status: status.JobCompleted, Attempts: 1}, nil
	}
	endedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ended)
	}
	watch := func(ctx context.Context, in contract.WatchJobsInput) ([]contract.JobRunEnd, error) {
		for {
			mu.Lock()
			var out []contract.JobRunEnd
			for _, r := range in.Jobs {
				if ended[r.JobID] {
					out = append(out, contract.JobRunEnd{JobID: r.JobID, Run: r.Run, Status: status.JobCompleted})
				}
			}
			mu.Unlock()
			if len(out) > 0 {
				return out, nil
			}
			activity.RecordHeartbeat(ctx)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	w := worker.New(c, prefix, worker.Options{})
	w.RegisterWorkflow(workflows.OrderWorkflow)
	w.RegisterWorkflowWithOptions(job, workflow.RegisterOptions{Name: "JobWorkflow"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ww := worker.New(c, workflows.WatchTaskQueue(prefix), worker.Options{DisableWorkflowWorker: true})
	ww.RegisterActivityWithOptions(watch, activity.RegisterOptions{Name: contract.WatchJobs})
	if err := ww.Start(); err != nil {
		t.Fatal(err)
	}
	defer ww.Stop()

	jobs := []workflows.JobRef{{JobID: long, Run: 1}}
	for i := 1; i < 500; i++ {
		jobs = append(jobs, workflows.JobRef{JobID: fmt.Sprintf("%s-%03d", prefix, i), Run: 1})
	}
	in := workflows.OrderInput{OrderID: prefix, AccountID: "acc", JobType: "photo_shoot", Jobs: jobs, Version: version}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	orderWF := workflows.OrderWorkflowID(prefix)
	run, err := c.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{
		ID: orderWF, TaskQueue: prefix, TypedSearchAttributes: workflows.OrderSearchAttributes(in),
	}, workflows.OrderWorkflow, in)
	if err != nil {
		t.Fatal(err)
	}
	// Version 3 holds its first run until the long job ends: 249 others end meanwhile. Version 4
	// runs all 499 others meanwhile.
	others := 499
	if version < 4 {
		others = 249
	}
	testenv.Eventually(t, 5*time.Minute, "the other jobs to end", func() bool { return endedCount() >= others })
	time.Sleep(2 * time.Second) // nothing more ends while the long job runs
	if n := endedCount(); n != others {
		t.Fatalf("%d jobs ended while the long job ran, want %d", n, others)
	}
	if err := c.SignalWorkflow(ctx, workflows.JobWorkflowID(long, 1), "", "end", nil); err != nil {
		t.Fatal(err)
	}
	var res workflows.OrderResult
	if err := c.GetWorkflow(ctx, orderWF, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res != (workflows.OrderResult{Completed: 500}) {
		t.Fatalf("order result %+v", res)
	}
	runID := run.GetRunID()
	for i := 1; runID != ""; i++ {
		events, err := historycost.Read(ctx, c, orderWF, runID)
		if err != nil {
			t.Fatal(err)
		}
		cost, watches := historycost.Of(events), 0
		runID = ""
		for _, e := range events {
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == contract.WatchJobs {
				watches++
			}
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
				runID = e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			}
		}
		t.Logf("version %d, run %d: %d events, %d actions, %d WatchJobs executions", version, i, cost.Events, cost.Actions, watches)
	}
}
