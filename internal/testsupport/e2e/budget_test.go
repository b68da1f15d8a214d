package e2e_test

import (
	"context"
	"fmt"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/platform/historycost"
)

// JobWorkflowEventBudget is the most history events the JobWorkflow of a successful one-attempt
// job may write (issue 15; docs/benchmarks.md lists them one by one). A change that adds events
// to every job fails TestPluginPhotoSessionEndToEnd: lower the count it writes, or raise this with
// a reason recorded in docs/benchmarks.md.
const JobWorkflowEventBudget = 14

// JobWorkflowActionBudget is the most billable Temporal actions the JobWorkflow of a successful
// one-attempt job may take beyond a bare child's own, counted by historycost as loadgen counts
// them (issue 15, docs/benchmarks.md).
const JobWorkflowActionBudget = 3

// bareChildActions is what a bare child's own history costs: its one activity; its start's two
// actions are taken by its parent and are not in its history.
const bareChildActions = 1

// assertJobEventBudget fails when the closed JobWorkflow workflowID wrote more history events than
// JobWorkflowEventBudget, or took more actions than JobWorkflowActionBudget, listing its events.
func assertJobEventBudget(t *testing.T, c temporalclient.Client, workflowID string) {
	t.Helper()
	events, err := historycost.Read(context.Background(), c, workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[len(events)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Fatalf("%s: history does not end with its completion (%d events)", workflowID, len(events))
	}
	cost := historycost.Of(events)
	actions := cost.Actions - bareChildActions
	if cost.Events <= JobWorkflowEventBudget && actions <= JobWorkflowActionBudget {
		return
	}
	t.Errorf("%s wrote %d history events (budget %d) and took %d actions beyond a bare child's (budget %d):",
		workflowID, cost.Events, JobWorkflowEventBudget, actions, JobWorkflowActionBudget)
	for _, e := range events {
		t.Errorf("  %3d %s", e.GetEventId(), e.GetEventType())
	}
}

// assertOrderIsLean fails unless the closed OrderWorkflow workflowID, whose jobs all fit its
// concurrency window and of which none was cancelled, initiated all of its jobs children in its
// first workflow task (one launch per workflow task cost every job three more events and a
// workflow task) and wrote no version marker nor search attribute upsert (OrderInput.Version
// spares them), listing its events otherwise (issue 15).
func assertOrderIsLean(t *testing.T, c temporalclient.Client, workflowID string, jobs int) {
	t.Helper()
	events, err := historycost.Read(context.Background(), c, workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	tasks, initiated := 0, 0
	var problem string
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			tasks++
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			initiated++
			if tasks != 1 && problem == "" {
				problem = fmt.Sprintf("initiated a job in workflow task %d, want every launch in the first", tasks)
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			if problem == "" {
				problem = fmt.Sprintf("wrote event %d, %s", e.GetEventId(), e.GetEventType())
			}
		}
	}
	if problem == "" && initiated != jobs {
		problem = fmt.Sprintf("initiated %d jobs, want %d", initiated, jobs)
	}
	if problem == "" {
		return
	}
	t.Errorf("%s %s:", workflowID, problem)
	for _, e := range events {
		t.Errorf("  %3d %s", e.GetEventId(), e.GetEventType())
	}
}
