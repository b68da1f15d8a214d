package main

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// cost is what a workflow history costs: its events and its Temporal actions.
type cost struct{ events, actions int }

func (c cost) plus(d cost) cost { return cost{c.events + d.events, c.actions + d.actions} }

// changeVersionAttribute is the search attribute the SDK's version markers upsert, which is free.
const changeVersionAttribute = "TemporalChangeVersion"

// historyCost counts the events and actions of a history, following Temporal Cloud's definition
// of actions (docs.temporal.io, "Temporal Cloud Actions") as docs/benchmarks.md applies it: a
// workflow started by a client 1 (a child's start is counted on its parent: 2 per
// StartChildWorkflowExecutionInitiated); each activity attempt 1; all local-activity markers of
// one workflow task 1 together; side-effect markers 1 each, version markers 0; each search
// attribute or memo upsert 1 unless it only sets TemporalChangeVersion; each signal sent to or
// cancel requested of another workflow 1; each timer 1. Signals received are counted on their
// sender. Workflow tasks are not actions.
func historyCost(events []*historypb.HistoryEvent) cost {
	c := cost{events: len(events)}
	lastLocalActivityTask := int64(-1)
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			if e.GetWorkflowExecutionStartedEventAttributes().GetParentWorkflowExecution() == nil {
				c.actions++
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			c.actions += 2
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			c.actions += int(max(1, e.GetActivityTaskStartedEventAttributes().GetAttempt()))
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			switch m.GetMarkerName() {
			case "LocalActivity":
				if task := m.GetWorkflowTaskCompletedEventId(); task != lastLocalActivityTask {
					lastLocalActivityTask = task
					c.actions++
				}
			case "SideEffect", "MutableSideEffect":
				c.actions++
			}
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, version := fields[changeVersionAttribute]; !version || len(fields) > 1 {
				c.actions++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
			enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
			enumspb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
			enumspb.EVENT_TYPE_TIMER_STARTED:
			c.actions++
		}
	}
	return c
}

// historyOf reads the whole history of a workflow's latest run.
func historyOf(ctx context.Context, c client.Client, workflowID string) ([]*historypb.HistoryEvent, error) {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// historySample is the mean cost of the workflows of one kind, over a sample of them.
type historySample struct {
	workflows int     // how many histories were read
	events    float64 // mean events per workflow
	actions   float64 // mean actions per workflow
}

// maxSample bounds how many histories of one kind loadgen reads.
const maxSample = 50

// sampleHistories reads up to maxSample histories of ids and averages their cost.
func sampleHistories(ctx context.Context, c client.Client, ids []string) (historySample, error) {
	ids = ids[:min(len(ids), maxSample)]
	var total cost
	for _, id := range ids {
		events, err := historyOf(ctx, c, id)
		if err != nil {
			return historySample{}, err
		}
		total = total.plus(historyCost(events))
	}
	return meanCost(total, len(ids)), nil
}

// meanCost divides a total cost over n workflows.
func meanCost(total cost, n int) historySample {
	if n == 0 {
		return historySample{}
	}
	return historySample{workflows: n, events: float64(total.events) / float64(n), actions: float64(total.actions) / float64(n)}
}
