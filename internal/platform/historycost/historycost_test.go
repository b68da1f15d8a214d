package historycost_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/platform/historycost"
)

// The fixtures are the workflows' recorded histories of a two-job order (recorded by
// TestPluginPhotoSessionEndToEnd), whose events and actions docs/benchmarks.md lists one by one.
func loadHistory(t *testing.T, name string) []*historypb.HistoryEvent {
	f, err := os.Open("../../../workflows/testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h.GetEvents()
}

func TestCostOfJobs(t *testing.T) {
	// Lean: two local-activity markers in two workflow tasks, one activity, one upsert, one
	// signal; the child's start is counted on its order.
	assert.Equal(t, historycost.Cost{Events: 19, Actions: 5}, historycost.Of(loadHistory(t, "job_workflow_completed_lean.json")))
	// Quiet (issue 15's shape): no signal, so one action a bare child (1) plus 3.
	assert.Equal(t, historycost.Cost{Events: 14, Actions: 4}, historycost.Of(loadHistory(t, "job_workflow_completed.json")))
}

func TestCostOfAnOrder(t *testing.T) {
	// The client's start, two child starts at 2 each; the version marker and its
	// TemporalChangeVersion upsert are free, received signals are counted on their senders.
	assert.Equal(t, historycost.Cost{Events: 29, Actions: 5}, historycost.Of(loadHistory(t, "order_workflow_completed_lean.json")))
}

// The recorded histories' sizes (docs/scaling.md): a quiet job 3,343 bytes, its two-job order
// 5,312, of which each job's start, start confirmation and completion take 1,008 + 174 + 239.
func TestBytesOfRecordedHistories(t *testing.T) {
	assert.Equal(t, 3343, historycost.Bytes(loadHistory(t, "job_workflow_completed.json")))
	order := loadHistory(t, "order_workflow_completed.json")
	assert.Equal(t, 5312, historycost.Bytes(order))
	perJob := 0
	for _, e := range order {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
			enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
			perJob += historycost.Bytes([]*historypb.HistoryEvent{e})
		}
	}
	assert.Equal(t, 2*(1008+174+239), perJob)
	// A history of one event is that event's encoding; no events, nothing.
	assert.Zero(t, historycost.Bytes(nil))
	e := event(enumspb.EVENT_TYPE_TIMER_STARTED, nil)
	e.EventId = 300
	assert.Equal(t, 5, historycost.Bytes([]*historypb.HistoryEvent{e}), "event_id 300 (tag and two-byte varint) and event_type 17 (tag and one byte)")
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

func TestCostCountsLocalActivitiesPerTaskAndRetries(t *testing.T) {
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
	assert.Equal(t, historycost.Cost{Events: 8, Actions: 7}, historycost.Of(events))
}
