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
const JobWorkflowEventBudget = 14

// JobWorkflowActionBudget is the most billable Temporal actions the JobWorkflow of a successful
// one-attempt job may take beyond a bare child's own (its start and one activity), counted as
// jobActions does (issue 15, docs/benchmarks.md).
const JobWorkflowActionBudget = 3

// historyEvents reads every event of one run of a workflow ("" for the latest).
func historyEvents(t *testing.T, c temporalclient.Client, workflowID, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
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
	events := historyEvents(t, c, workflowID, "")
	if len(events) == 0 || events[len(events)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Fatalf("%s: history does not end with its completion (%d events)", workflowID, len(events))
	}
	actions := jobActions(events) - bareChildActivities
	if len(events) <= JobWorkflowEventBudget && actions <= JobWorkflowActionBudget {
		return
	}
	t.Errorf("%s wrote %d history events (budget %d) and took %d actions beyond a bare child's (budget %d):",
		workflowID, len(events), JobWorkflowEventBudget, actions, JobWorkflowActionBudget)
	for _, e := range events {
		t.Errorf("  %3d %s", e.GetEventId(), e.GetEventType())
	}
}

// bareChildActivities is what a bare child's one activity costs in jobActions; its start's two
// actions are taken by its parent and are not in its history.
const bareChildActivities = 1

// jobActions counts the billable Temporal Cloud actions a workflow's own history shows: an
// activity, timer or signal sent is 1, a child workflow start 2, a search-attribute upsert 1
// (unless it only sets TemporalChangeVersion, which workflow.GetVersion writes for free), and
// all local-activity markers of one workflow task 1 together.
func jobActions(events []*historypb.HistoryEvent) int {
	n := 0
	markerTasks := map[int64]bool{}
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, enumspb.EVENT_TYPE_TIMER_STARTED,
			enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
			n++
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			n += 2
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, version := fields["TemporalChangeVersion"]; !version || len(fields) > 1 {
				n++
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if a := e.GetMarkerRecordedEventAttributes(); a.GetMarkerName() == "LocalActivity" {
				markerTasks[a.GetWorkflowTaskCompletedEventId()] = true
			}
		}
	}
	return n + len(markerTasks)
}
