package main

import (
	"os"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixtures are copies of workflows/testdata's lean histories of a two-job order (recorded by
// TestPluginPhotoSessionEndToEnd), whose events and actions docs/benchmarks.md lists one by one.
func loadHistory(t *testing.T, name string) []*historypb.HistoryEvent {
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h.GetEvents()
}

func TestHistoryCostOfALeanJob(t *testing.T) {
	// Two local-activity markers in two workflow tasks, one activity, one upsert, one signal; the
	// child's start is counted on its order.
	got := historyCost(loadHistory(t, "job_workflow_completed.json"))
	assert.Equal(t, cost{events: 19, actions: 5}, got)
}

func TestHistoryCostOfAnOrder(t *testing.T) {
	// The client's start, two child starts at 2 each; the version marker and its
	// TemporalChangeVersion upsert are free, received signals are counted on their senders.
	got := historyCost(loadHistory(t, "order_workflow_completed.json"))
	assert.Equal(t, cost{events: 29, actions: 5}, got)
}

func event(typ enumspb.EventType, attrs func(*historypb.HistoryEvent)) *historypb.HistoryEvent {
	e := &historypb.HistoryEvent{EventType: typ}
	if attrs != nil {
		attrs(e)
	}
	return e
}

func localActivity(task int64) *historypb.HistoryEvent {
	return event(enumspb.EVENT_TYPE_MARKER_RECORDED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity", WorkflowTaskCompletedEventId: task,
		}}
	})
}

func TestHistoryCostCountsLocalActivitiesPerTaskAndRetries(t *testing.T) {
	started := func(attempt int32) *historypb.HistoryEvent {
		return event(enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Attempt: attempt}}
		})
	}
	events := []*historypb.HistoryEvent{
		event(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, nil), // started by a client: 1
		localActivity(4), localActivity(4), localActivity(4), // one task: 1
		localActivity(9), // another task: 1
		event(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil),
		started(3), // the third attempt: 3
		event(enumspb.EVENT_TYPE_TIMER_STARTED, nil), // 1
	}
	assert.Equal(t, cost{events: 8, actions: 7}, historyCost(events))
}

func TestPerJobCostAddsTheParentsShare(t *testing.T) {
	c := perJobCost{
		job:           historySample{workflows: 50, events: 8, actions: 1},
		parent:        historySample{workflows: 2, events: 400, actions: 101},
		jobsPerParent: 50,
	}
	assert.InDelta(t, 16, c.events(), 1e-9)
	assert.InDelta(t, 3.02, c.actions(), 1e-9)
	assert.Zero(t, perJobCost{}.events())
}
