package e2e_test

import (
	"context"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	temporalclient "go.temporal.io/sdk/client"
)

// JobWorkflowEventBudget is the most history events the JobWorkflow of a successful one-attempt
// job may write (issue 15; docs/benchmarks.md lists them one by one). A change that adds events
// to every job fails TestPluginPhotoSessionEndToEnd: lower the count it writes, or raise this with
// a reason recorded in docs/benchmarks.md.
const JobWorkflowEventBudget = 19

// historyEvents reads every event of a workflow's latest run.
func historyEvents(t *testing.T, c temporalclient.Client, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	return events
}

// assertJobEventBudget fails when the closed JobWorkflow workflowID wrote more history events than
// JobWorkflowEventBudget, listing them.
func assertJobEventBudget(t *testing.T, c temporalclient.Client, workflowID string) {
	t.Helper()
	events := historyEvents(t, c, workflowID)
	if len(events) == 0 || events[len(events)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Fatalf("%s: history does not end with its completion (%d events)", workflowID, len(events))
	}
	if len(events) <= JobWorkflowEventBudget {
		return
	}
	t.Errorf("%s wrote %d history events, over the budget of %d:", workflowID, len(events), JobWorkflowEventBudget)
	for _, e := range events {
		t.Errorf("  %3d %s", e.GetEventId(), e.GetEventType())
	}
}
