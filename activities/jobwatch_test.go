package activities_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// WatchJobs answers only once a watched run has ended, with the runs that have: until then it
// keeps looking, and gives up only when its context ends.
func TestWatchJobsAnswersTheRunsThatEnded(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, "")
		job := f.runningJob(t)
		in := contract.WatchJobsInput{OrderID: job.OrderID, Jobs: []contract.JobRunRef{{JobID: job.ID, Run: 1}}}

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if ended, err := f.acts.WatchJobs(ctx, in); !errors.Is(err, context.Canceled) || ended != nil {
			t.Fatalf("WatchJobs of a running job, cancelled: %v, %v", ended, err)
		}

		f.finish(t, contract.FinishJobInput{End: &contract.EndInput{JobID: job.ID, Run: 1, Status: status.JobFailed}})
		ended, err := f.acts.WatchJobs(context.Background(), in)
		if err != nil || !slices.Equal(ended, []contract.JobRunEnd{{JobID: job.ID, Run: 1, Status: status.JobFailed}}) {
			t.Fatalf("WatchJobs of an ended job: %v, %v", ended, err)
		}
	})
}
