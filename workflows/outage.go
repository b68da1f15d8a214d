package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
)

// SAWaitingOn names the dependency a workflow is waiting for while it cannot reach it
// (contract.DependencyDatabase or contract.DependencyBlobStore; contract.DependencyTemporal for
// the moment it runs again an attempt an outage of Temporal cut short); it is unset again once the
// dependency answers. Operators find every stalled workflow with ShotflowWaitingOn IS NOT NULL.
var SAWaitingOn = temporal.NewSearchAttributeKeyKeyword("ShotflowWaitingOn")

// projectionOptions run the short database writes of every workflow (read-model projections,
// credit settlement, webhook records) as local activities. One execution is a burst of retries
// within ScheduleToCloseTimeout; project runs bursts until one succeeds, however long the
// database is away. StartToCloseTimeout bounds one try when the network drops packets.
var projectionOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    10 * time.Second,
	ScheduleToCloseTimeout: 30 * time.Second,
	RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second},
}

// outageBackoff is the wait after the n-th failed burst (1-based): 2 s doubling up to a minute.
func outageBackoff(n int) time.Duration {
	d := 2 * time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// outage is a workflow's wait for a dependency it cannot reach: the search attribute SAWaitingOn
// while it lasts, one warning per failed burst, a capped backoff between bursts.
type outage struct {
	bursts int
	shown  string // the dependency SAWaitingOn names, "" when unset
}

// wait records a failed burst against dependency and sleeps the backoff. It returns an error only
// when the workflow is cancelled.
func (o *outage) wait(ctx workflow.Context, dependency string, cause error) error {
	o.bursts++
	backoff := outageBackoff(o.bursts)
	workflow.GetLogger(ctx).Warn("dependency unavailable; waiting for it", "dependency", dependency,
		"failed_bursts", o.bursts, "retry_in", backoff, "error", cause)
	if o.shown != dependency {
		if err := workflow.UpsertTypedSearchAttributes(ctx, SAWaitingOn.ValueSet(dependency)); err != nil {
			workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
		}
		o.shown = dependency
	}
	return workflow.Sleep(ctx, backoff)
}

// over ends the wait: SAWaitingOn is unset if it was set.
func (o *outage) over(ctx workflow.Context) {
	if o.bursts > 0 {
		workflow.GetLogger(ctx).Info("dependency available again", "dependency", o.shown, "failed_bursts", o.bursts)
	}
	if o.shown != "" {
		if err := workflow.UpsertTypedSearchAttributes(ctx, SAWaitingOn.ValueUnset()); err != nil {
			workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
		}
		o.shown = ""
	}
	o.bursts = 0
}

// untilAvailable runs step until it does not fail for an unavailable dependency. step returns the
// dependency it could not reach, or "" with its result. The error returned is step's own, or the
// workflow's cancellation.
func untilAvailable(ctx workflow.Context, step func() (string, error)) error {
	var o outage
	clock, _ := ctx.Value(outageClockKey{}).(*outageClock)
	for {
		began := workflow.Now(ctx)
		dependency, err := step()
		if dependency == "" {
			o.over(ctx)
			return err
		}
		werr := o.wait(ctx, dependency, err)
		if clock != nil { // the failed step and the wait after it
			clock.waited += workflow.Now(ctx).Sub(began)
		}
		if werr != nil {
			return werr
		}
	}
}

// outageClock adds up the time a workflow spent on dependencies it could not reach: the steps that
// found one away and the waits after them. A workflow that keeps one in its context (withOutageClock)
// can leave that time out of its own clocks (JobWorkflow's retry window: an outage is no attempt).
type outageClock struct{ waited time.Duration }

type outageClockKey struct{}

// withOutageClock is ctx with a clock that every untilAvailable under it adds its outages to.
func withOutageClock(ctx workflow.Context) (workflow.Context, *outageClock) {
	clock := &outageClock{}
	return workflow.WithValue(ctx, outageClockKey{}, clock), clock
}

// runActivity executes the activity named activity (a contract name) with actx's options, storing
// its result in out (nil for none), and waits out every outage it reports as
// contract.ErrTypeDependencyUnavailable, running it again after each, and every run that an outage
// of Temporal cut short (lateTimeout); other errors are returned.
func runActivity(ctx, actx workflow.Context, activity string, out any, args ...any) error {
	return untilAvailable(ctx, func() (string, error) {
		err := workflow.ExecuteActivity(actx, activity, args...).Get(ctx, out)
		if dependency := unavailableDependency(err); dependency != "" {
			return dependency, err
		}
		// Runs from before this change counted such a timeout as the activity's failure (their
		// histories decided on it): the marker, written only by runs that meet one, tells them apart.
		if lateTimeout(ctx, actx, err) && workflow.GetVersion(ctx, lateTimeoutChange, workflow.DefaultVersion, 1) >= 1 {
			return contract.DependencyTemporal, err
		}
		return "", err
	})
}

// lateTimeoutChange is the version marker of the runs that take a late timeout (lateTimeout) for
// an outage of Temporal rather than the activity's failure.
const lateTimeoutChange = "late-timeout-is-temporal-outage"

// lateTimeoutSlack is how late past its due time a heartbeat timeout may arrive and still be the
// activity's own: the SDK sends a heartbeat up to 0.8 of the heartbeat timeout after it was
// recorded, and the workflow task that reads the timeout starts a moment after it fired.
const lateTimeoutSlack = 2 * time.Minute

// lateTimeout reports whether err is a timeout of an activity run with actx's options that arrived
// long after Temporal should have fired it: more than the heartbeat timeout and lateTimeoutSlack
// after the last heartbeat it recorded (whose first detail is the time it was recorded,
// contract.Generate). A running Temporal fires a heartbeat timeout within the heartbeat timeout of
// the last heartbeat it received; one fired that late was held back by Temporal itself being down
// (or no workflow worker running), while the attempt may well have finished: no failure of the
// activity's. A timeout without such a heartbeat (an attempt too short to have sent one) stays the
// activity's.
func lateTimeout(ctx, actx workflow.Context, err error) bool {
	var timeout *temporal.TimeoutError
	if !errors.As(err, &timeout) || !timeout.HasLastHeartbeatDetails() {
		return false
	}
	heartbeat := workflow.GetActivityOptions(actx).HeartbeatTimeout
	var at time.Time
	if heartbeat <= 0 || timeout.LastHeartbeatDetails(&at) != nil || at.IsZero() {
		return false
	}
	return workflow.Now(ctx).Sub(at) > heartbeat+lateTimeoutSlack
}

// project runs a database projection, the local activity named activity (a contract name), until
// it succeeds, storing its result in out (nil for none). Only a non-retryable ApplicationError (a
// result such as contract.ErrTypeJobNotRunnable) or the workflow's cancellation ends it otherwise:
// any other failure is the database being away, and the workflow waits for it rather than fail.
func project(ctx workflow.Context, activity string, out any, args ...any) error {
	lctx := workflow.WithLocalActivityOptions(ctx, projectionOptions)
	return untilAvailable(ctx, func() (string, error) {
		err := workflow.ExecuteLocalActivity(lctx, activity, args...).Get(ctx, out)
		if err == nil || isFinal(err) {
			return "", err
		}
		return contract.DependencyDatabase, err
	})
}

// unavailableDependency is the dependency a contract.ErrTypeDependencyUnavailable failure
// names, or "" for any other outcome.
func unavailableDependency(err error) string {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != contract.ErrTypeDependencyUnavailable {
		return ""
	}
	dependency := contract.DependencyDatabase
	if appErr.HasDetails() {
		_ = appErr.Details(&dependency)
	}
	return dependency
}

// isFinal reports whether a failed local activity must not run again: a non-retryable
// ApplicationError is an answer, and a cancellation ends the workflow's interest.
func isFinal(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		return true
	}
	var canceled *temporal.CanceledError
	return errors.As(err, &canceled)
}
