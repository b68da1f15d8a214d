package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/shotflow/shotflow/activities/contract"
)

// dependencyCallTimeout bounds one database or blob store call of an activity, so a network
// partition (packets dropped, nothing refused) turns into an ErrTypeDependencyUnavailable
// failure instead of a hang until the activity's own timeout. It is shorter than the generate
// activity's heartbeat timeout.
const dependencyCallTimeout = 10 * time.Second

// unavailable wraps the failure of a call to dependency as ErrTypeDependencyUnavailable.
func unavailable(dependency string, err error) error {
	return temporal.NewNonRetryableApplicationError(dependency+" unavailable: "+err.Error(), contract.ErrTypeDependencyUnavailable, err, dependency)
}

// bounded is ctx limited to dependencyCallTimeout, for one call to the database or blob store.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, dependencyCallTimeout)
}

// keepAlive heartbeats every interval while an activity works, until the returned stop is
// called: the heartbeat timeout then tells a dead worker from a slow step (a long render, a
// dependency call waiting for its own timeout). Outside an activity it does nothing.
func keepAlive(ctx context.Context, interval time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, time.Now().UTC()) // when (contract.Generate)
			}
		}
	}()
	return func() { close(done) }
}
