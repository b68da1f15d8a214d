// Package historycost counts what a Temporal workflow history costs: its events and its billable
// actions. cmd/loadgen reports it per job and the end-to-end budget test holds JobWorkflow to it
// (issue 15, docs/benchmarks.md), so both count the same way.
package historycost

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// Cost is what a history costs: its events and its Temporal actions.
type Cost struct{ Events, Actions int }

// Plus is the cost of both.
func (c Cost) Plus(d Cost) Cost { return Cost{c.Events + d.Events, c.Actions + d.Actions} }

// changeVersionAttribute is the search attribute the SDK's version markers upsert, which is free.
const changeVersionAttribute = "TemporalChangeVersion"

// Of counts the events and actions of a history, following Temporal Cloud's definition of actions
// (docs.temporal.io, "Temporal Cloud Actions") as docs/benchmarks.md applies it: a workflow
// started by a client 1 (a child's start is counted on its parent: 2 per
// StartChildWorkflowExecutionInitiated); each activity attempt 1; all local-activity markers of
// one workflow task 1 together; side-effect markers 1 each, version markers 0; each search
// attribute or memo upsert 1 unless it only sets TemporalChangeVersion; each signal sent to or
// cancel requested of another workflow 1; each timer 1. Signals received are counted on their
// sender. Workflow tasks are not actions.
func Of(events []*historypb.HistoryEvent) Cost {
	c := Cost{Events: len(events)}
	lastLocalActivityTask := int64(-1)
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			if e.GetWorkflowExecutionStartedEventAttributes().GetParentWorkflowExecution() == nil {
				c.Actions++
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			c.Actions += 2
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			c.Actions += int(max(1, e.GetActivityTaskStartedEventAttributes().GetAttempt()))
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			switch m.GetMarkerName() {
			case "LocalActivity":
				if task := m.GetWorkflowTaskCompletedEventId(); task != lastLocalActivityTask {
					lastLocalActivityTask = task
					c.Actions++
				}
			case "SideEffect", "MutableSideEffect":
				c.Actions++
			}
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, version := fields[changeVersionAttribute]; !version || len(fields) > 1 {
				c.Actions++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
			enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
			enumspb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
			enumspb.EVENT_TYPE_TIMER_STARTED:
			c.Actions++
		}
	}
	return c
}

// Read reads the whole history of one run of a workflow ("" for its latest run).
func Read(ctx context.Context, c client.Client, workflowID, runID string) ([]*historypb.HistoryEvent, error) {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// Bytes is the size of a history's events as Temporal stores them: the sum of their protobuf
// encodings (the server persists a history as batches of encoded events; its rows' overhead and
// any compression by the database come on top). docs/scaling.md sizes history storage with it.
func Bytes(events []*historypb.HistoryEvent) int {
	n := 0
	for _, e := range events {
		n += proto.Size(e)
	}
	return n
}
