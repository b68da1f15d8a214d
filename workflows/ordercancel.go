package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// SignalCancelJob tells an order workflow that one of its jobs was cancelled before its first
// attempt began (engine.Jobs.CancelJob): the cancel is already decided and recorded in the
// database, so the order only drops the job from its queue instead of launching it. The payload
// is a JobCancelled. A signal that never arrives costs nothing but a launch: the job's workflow
// finds the job cancelled when it tries to begin its first attempt and ends not runnable.
const SignalCancelJob = "job-cancelled"

// JobCancelled is the payload of SignalCancelJob.
type JobCancelled struct {
	JobID string
	Run   int
}

// cancelSignalChange is the workflow.GetVersion change ID under which an order run acts on
// SignalCancelJob. An order run that received the signal on a worker that did not know it went on
// launching the job; replaying that history, GetVersion answers workflow.DefaultVersion and the
// signal is ignored again, so the replay takes the same path. The marker is written once per order
// run, when its first cancel arrives.
const cancelSignalChange = "cancel-signal"

// listenForCancels acts on every SignalCancelJob the order receives, in a coroutine of its own.
func (s *orderState) listenForCancels(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalCancelJob)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var m JobCancelled
			ch.Receive(ctx, &m)
			if workflow.GetVersion(ctx, cancelSignalChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				continue
			}
			s.dropCancelled(m.JobID)
		}
	})
}

// dropCancelled forgets a job cancelled in the database. It runs without yielding, like the
// cancel-job Update handler did, so a job taken out of the queue here is never launched. A job
// already launched is left to its own workflow, which ends not runnable: a JobShapeQuiet job's
// result says so and the order does not count it; a job of an older shape never signals that
// end, so the order stops waiting for it here (or, while its start is being awaited, once it
// has started: awaitLaunching).
func (s *orderState) dropCancelled(jobID string) {
	if i := s.indexOf(jobID); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.result.Cancelled++
		return
	}
	if s.quiet() {
		return
	}
	if i := slices.Index(s.running, jobID); i >= 0 {
		s.running = slices.Delete(s.running, i, i+1)
		s.result.Cancelled++
		return
	}
	if s.launched(jobID) {
		if s.dropped == nil {
			s.dropped = map[string]bool{}
		}
		s.dropped[jobID] = true
	}
}
