package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models"
)

// Polling of WatchJobs: the first look comes at once, the next after watchFirstPoll, each wait
// doubling up to watchMaxPoll. Every look heartbeats.
const (
	watchFirstPoll = time.Second
	watchMaxPoll   = 10 * time.Second
)

// WatchJobs waits until at least one of the order's named job runs has ended and returns every one
// that has (models.Store.EndedJobRuns). An order workflow run awaits with it the jobs an earlier
// run launched, whose child workflow results do not reach it. It reads the read model, never
// Temporal: a database outage only delays the next look, and only the activity's cancellation (the
// order run closed, or it asks about another set of jobs) ends it without an answer.
func (a *Activities) WatchJobs(ctx context.Context, in contract.WatchJobsInput) ([]contract.JobRunEnd, error) {
	runs := make([]models.JobRun, len(in.Jobs))
	for i, j := range in.Jobs {
		runs[i] = models.JobRun{JobID: j.JobID, Run: j.Run}
	}
	wait := watchFirstPoll
	for {
		cctx, cancel := bounded(ctx)
		ended, err := a.Store.EndedJobRuns(cctx, in.OrderID, runs)
		cancel()
		switch {
		case err == nil && len(ended) > 0:
			out := make([]contract.JobRunEnd, len(ended))
			for i, e := range ended {
				out[i] = contract.JobRunEnd{JobID: e.JobID, Run: e.Run, Status: e.Status}
			}
			return out, nil
		case err != nil && ctx.Err() == nil && a.Log != nil:
			a.Log.Warn("watching an order's jobs: database unavailable; looking again", zap.String("order_id", in.OrderID), zap.Error(err))
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, watchMaxPoll)
	}
}
