package worker

import (
	"testing"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
)

// The worker of the WatchJobs queue runs WatchJobs alone, under its contract name, with room for
// many long waits and no workflows.
func TestWatchWorkerRunsOnlyWatchJobs(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	registerWatch(r, &activities.Activities{})
	if _, ok := r.activities[contract.WatchJobs]; !ok || len(r.activities) != 1 {
		t.Errorf("the watch worker registers %v; want only %q", r.names(), contract.WatchJobs)
	}
	if o := WatchWorkerOptions(); !o.DisableWorkflowWorker || o.MaxConcurrentActivityExecutionSize != MaxConcurrentWatches {
		t.Errorf("watch worker options %+v", o)
	}
}
