package workflows

import (
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
)

// UpdateCancelJob is the workflow Update that cancels a job that has not started. Its arguments
// are the job ID and CancelOptions, its result a CancelResult. An order workflow takes it for the
// jobs it has not launched and refuses launched jobs with ErrTypeJobLaunched; a JobWorkflow takes
// it until its first attempt begins (startGate). The engine no longer sends it (it decides a
// cancel in the database and tells the order with SignalCancelJob); its handlers stay for the
// histories that carry it.
const UpdateCancelJob = "cancel-job"

// ErrTypeJobNotCancelable is the error type the cancel-job validator rejects with: the job has
// already started or finished.
const ErrTypeJobNotCancelable = "JOB_NOT_CANCELABLE"

// ErrTypeJobLaunched is the error type an order workflow's cancel-job validator rejects a job it
// has launched with: the job's own workflow decides whether it can still be cancelled.
const ErrTypeJobLaunched = "JOB_LAUNCHED"

// ErrTypeCancelTooLate is the error type the cancel-job validator rejects a request with when it
// reaches the workflow after its CancelOptions.AcceptBy: the caller has stopped waiting for the
// answer, so the job stays as it is.
const ErrTypeCancelTooLate = "CANCEL_TOO_LATE"

// CancelOptions are the optional second argument of UpdateCancelJob.
type CancelOptions struct {
	// AcceptBy, when set, is the last moment (workflow time) the cancel may be accepted. A caller
	// that has not seen it accepted by then knows it never will be: the answer is certain either way.
	AcceptBy time.Time `json:",omitempty"`
}

// leanJobsChange is the workflow.GetVersion change ID that picks the shape of an order run's jobs
// and how it learns of their ends: JobShapeOriginal (DefaultVersion) and JobShapeLean (version 1)
// jobs send SignalJobFinished; JobShapeQuiet jobs (version 2 and later) do not, and the order
// reads their child workflows' results instead.
const leanJobsChange = "lean-jobs"

// batchLaunchVersion is the leanJobsChange version of order runs that launch JobShapeQuiet jobs
// in batches: every job a slot is free for is initiated in the same workflow task and their starts
// are awaited together, so Temporal reports them in one or two workflow tasks instead of one per
// job. Runs of earlier versions launch one job at a time, each after the previous one started.
const batchLaunchVersion = 3

// handOverVersion is the OrderInput.Version of order runs that continue as new without waiting for
// the jobs they launched: the next run takes the running ones over in OrderInput.Watching, keeps
// their concurrency slots, and learns of their ends from the read model with the WatchJobs
// activity (watchHandedOver), as it does of a job whose workflow an earlier run started (found
// after a workflow reset). Runs of earlier versions wait for every job they launched before they
// continue as new, and leave a job an earlier run started out of their counts. Orders reach it
// only through OrderInput.Version: workflow.GetVersion, for orders started without one, never
// answers it.
const handOverVersion = 4

// DefaultMaxConcurrentJobs is how many jobs of one order run at once. Jobs beyond it wait in the
// order workflow, where they can still be cancelled or expire.
const DefaultMaxConcurrentJobs = 10

// DefaultContinueAsNewAfter bounds how many jobs one run of OrderWorkflow launches before it
// continues as new, keeping every run's history small whatever the order's size.
const DefaultContinueAsNewAfter = 250

// OrderInput starts an OrderWorkflow, or continues one as new.
type OrderInput struct {
	OrderID        string
	AccountID      string
	InstallationID string
	JobType        string
	// TestMode marks a test key's order: its workflow and its jobs' carry ShotflowLivemode =
	// false. Orders started before test mode lack it: live.
	TestMode bool `json:",omitempty"`
	// Jobs are the jobs not launched yet, in launch order.
	Jobs []JobRef
	// Running are jobs launched by an earlier run that have not reported back yet; they report with
	// SignalJobFinished. A run of JobShapeQuiet jobs before handOverVersion waits for them all to
	// end before it continues as new, so it hands over only signalling jobs it was itself handed.
	Running []string
	// Watching are JobShapeQuiet job runs launched by an earlier run (handOverVersion) that have
	// not ended yet: the run counts them as running and reads their ends with WatchJobs.
	Watching []contract.JobRunRef `json:",omitempty"`
	// MaxConcurrentJobs caps running jobs; 0 means DefaultMaxConcurrentJobs.
	MaxConcurrentJobs int
	// JobOptions tune every JobWorkflow of the order.
	JobOptions JobOptions
	// ContinueAsNewAfter is how many jobs a run launches before it continues as new; 0 means
	// DefaultContinueAsNewAfter.
	ContinueAsNewAfter int `json:",omitempty"`
	// Result carries the counts of earlier runs.
	Result OrderResult
	// Version is the leanJobsChange version the order follows, set by whoever starts it
	// (OrderVersion) and carried over by continue-as-new. It spares each run the version marker
	// and the TemporalChangeVersion search attribute upsert that workflow.GetVersion writes. Zero
	// (orders started before it existed) reads the version with workflow.GetVersion.
	Version int `json:",omitempty"`
}

// OrderVersion is the OrderInput.Version of new orders: the latest leanJobsChange version.
const OrderVersion = handOverVersion

// JobRef identifies one job of an order, with the memo fields operators see in the UI.
type JobRef struct {
	JobID        string
	Run          int
	ProductRef   string
	ProductLabel string
	// ExpiresAt is when the job expires if it has not started; zero means never.
	ExpiresAt time.Time
	// Provider is the provider of the job's model (JobInput.Provider).
	Provider string `json:",omitempty"`
}

// OrderResult counts how the order's jobs ended.
type OrderResult struct {
	Completed int
	Failed    int
	Cancelled int
	Expired   int
}

// CancelResult answers an accepted cancel-job update.
type CancelResult struct {
	JobID  string
	Status string
}

type orderState struct {
	in            OrderInput
	shape         int  // of the jobs this run launches
	batchLaunches bool // launch every job a slot is free for at once (batchLaunchVersion)
	handsOver     bool // continue as new without waiting for running jobs (handOverVersion)
	launches      int  // jobs this run has launched
	queue         []JobRef
	running       []string        // launched jobs that have not reported back, in launch order
	watched       int             // jobs of running launched by this run whose results the order awaits
	launching     []launch        // jobs whose workflows are being started, not yet in running
	cancelling    map[string]bool // jobs whose accepted cancel is being recorded
	dropped       map[string]bool // jobs of an older shape cancelled while being launched (dropCancelled)
	result        OrderResult
	// With handsOver: the run of every JobShapeQuiet job of running, which a next run takes over
	// (OrderInput.Watching); of those, the ones whose ends WatchJobs reads (no future of this run
	// has their results), and how many were ever added to them.
	runs       map[string]int
	polled     []contract.JobRunRef
	polledAdds int
}

// quiet reports whether the run launches JobShapeQuiet jobs: it reads their results, and ends
// queued jobs with FinishJob.
func (s *orderState) quiet() bool { return s.shape == JobShapeQuiet }

func (s *orderState) indexOf(jobID string) int {
	return slices.IndexFunc(s.queue, func(j JobRef) bool { return j.JobID == jobID })
}

// launched reports whether the order has handed the job to its own workflow (or is doing so).
func (s *orderState) launched(jobID string) bool {
	return slices.ContainsFunc(s.launching, func(l launch) bool { return l.ref.JobID == jobID }) ||
		slices.Contains(s.running, jobID)
}

// notQueued is the refusal of a cancel for a job that is not in the queue: a launched job's own
// workflow decides, any other job has ended or is not the order's.
func (s *orderState) notQueued(jobID string) error {
	if s.launched(jobID) {
		return temporal.NewApplicationError("the order has launched the job; its own workflow decides", ErrTypeJobLaunched)
	}
	return notCancelable()
}

func (s *orderState) finished(m JobFinished) {
	i := slices.Index(s.running, m.JobID)
	if i < 0 {
		return
	}
	s.running = slices.Delete(s.running, i, i+1)
	delete(s.runs, m.JobID)
	s.polled = slices.DeleteFunc(s.polled, func(r contract.JobRunRef) bool { return r.JobID == m.JobID })
	switch m.Status {
	case status.JobCompleted:
		s.result.Completed++
	case status.JobCancelled:
		s.result.Cancelled++
	case statusNotRunnable:
		// Ended by someone else before its first attempt; that end was counted where it happened.
	default:
		s.result.Failed++
	}
}

// watch reads the result of a JobShapeQuiet job's child workflow in a coroutine of its own and
// records the job's end from it. A job workflow that failed, timed out or was terminated
// counts as failed.
func (s *orderState) watch(ctx workflow.Context, ref JobRef, f workflow.ChildWorkflowFuture) {
	s.watched++
	workflow.Go(ctx, func(ctx workflow.Context) {
		var res JobResult
		if err := f.Get(ctx, &res); err != nil {
			res.Status = status.JobFailed
		}
		s.watched--
		s.finished(JobFinished{JobID: ref.JobID, Run: ref.Run, Status: res.Status})
	})
}

// OrderWorkflow runs one order. It launches a JobWorkflow per job, at most MaxConcurrentJobs at a
// time, and learns of each job's end from its child workflow's result (jobs launched in older
// shapes report back with SignalJobFinished). A job that has not been launched can be cancelled
// (UpdateCancelJob) or expires at its deadline; a cancel of a launched job is refused with
// ErrTypeJobLaunched and goes to the job's own workflow, which takes it until its first attempt
// begins.
// A failed job does not fail the order: partial completion is normal, and the read model's order
// status is kept by the jobs' own settlement transactions.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (OrderResult, error) {
	// Order runs started before issue 15 keep launching jobs in their shape on replay, and runs
	// started without OrderInput.Version keep their version marker.
	if in.Version > OrderVersion {
		// As workflow.GetVersion does: fail the task until a worker that knows the version takes it.
		panic(fmt.Sprintf("order version %d is newer than this worker's %d", in.Version, OrderVersion))
	}
	version := workflow.Version(in.Version)
	if in.Version == 0 {
		version = workflow.GetVersion(ctx, leanJobsChange, workflow.DefaultVersion, batchLaunchVersion)
	}
	jobShape := min(int(version), JobShapeQuiet)
	s := &orderState{
		in: in, shape: jobShape, batchLaunches: version >= batchLaunchVersion, handsOver: version >= handOverVersion,
		queue: in.Jobs, running: slices.Clone(in.Running), cancelling: map[string]bool{}, result: in.Result,
		runs: map[string]int{},
	}
	for _, r := range in.Watching {
		s.poll(r)
	}
	if s.handsOver {
		s.watchHandedOver(ctx)
	}
	maxRunning := in.MaxConcurrentJobs
	if maxRunning <= 0 {
		maxRunning = DefaultMaxConcurrentJobs
	}
	continueAsNewAfter := in.ContinueAsNewAfter
	if continueAsNewAfter <= 0 {
		continueAsNewAfter = DefaultContinueAsNewAfter
	}

	// The engine cancels with SignalCancelJob; the Update stays for histories that carry it.
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancelJob, s.cancel,
		workflow.UpdateHandlerOptions{Validator: s.validateCancel})
	if err != nil {
		return s.result, err
	}
	s.listenForCancels(ctx)

	finishedCh := workflow.GetSignalChannel(ctx, SignalJobFinished)
	drain := func() {
		var m JobFinished
		for finishedCh.ReceiveAsync(&m) {
			s.finished(m)
		}
	}
	for {
		drain()
		if s.quiet() {
			// Every queued job whose deadline has passed, even while no slot is free.
			if err := s.expireDue(ctx); err != nil {
				return s.result, err
			}
		}
		if err := s.launchReady(ctx, maxRunning, continueAsNewAfter); err != nil {
			return s.result, err
		}
		if len(s.queue) == 0 && len(s.running) == 0 && workflow.AllHandlersFinished(ctx) {
			break
		}
		// Before handOverVersion, jobs launched by this run report only to it: it waits for them
		// before continuing as new. From it on, the next run takes them over (Watching), and only
		// when it has jobs left to launch: otherwise this run's history grows by no more than the
		// ends of the jobs running.
		if s.launches >= continueAsNewAfter && (s.handsOver && len(s.queue) > 0 || !s.handsOver && s.watched == 0) &&
			workflow.AllHandlersFinished(ctx) {
			drain()
			next := in
			next.Jobs, next.Result = s.queue, s.result
			next.Running, next.Watching = s.handOver()
			return s.result, workflow.NewContinueAsNewError(ctx, OrderWorkflow, next)
		}
		// Sleep until a job reports back, the queue changes, or the next queued job expires.
		queued, running := len(s.queue), len(s.running)
		wake := func() bool {
			return finishedCh.Len() > 0 || len(s.queue) != queued || len(s.running) != running ||
				queued == 0 && len(s.running) == 0 && workflow.AllHandlersFinished(ctx)
		}
		if d, ok := nextExpiry(ctx, s.queue); ok {
			if _, err := workflow.AwaitWithTimeout(ctx, d, wake); err != nil {
				return s.result, err
			}
		} else if err := workflow.Await(ctx, wake); err != nil {
			return s.result, err
		}
	}
	return s.result, nil
}

// cancel is the handler of an accepted UpdateCancelJob: it takes a queued job out of the queue and
// ends it cancelled.
func (s *orderState) cancel(ctx workflow.Context, jobID string, _ CancelOptions) (CancelResult, error) {
	done := CancelResult{JobID: jobID, Status: status.JobCancelled}
	if s.cancelling[jobID] {
		// A second request for a cancel already accepted: it answers when that one is recorded.
		return done, workflow.Await(ctx, func() bool { return !s.cancelling[jobID] })
	}
	i := s.indexOf(jobID)
	if i < 0 {
		return CancelResult{}, s.notQueued(jobID)
	}
	// Removed from the queue before anything can yield: it can never be launched now. The
	// cancel is decided; recording it waits out any database outage.
	ref := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	s.cancelling[jobID] = true
	defer delete(s.cancelling, jobID)
	if err := endQueued(ctx, ref, status.JobCancelled, s.quiet()); err != nil {
		return CancelResult{}, err
	}
	s.result.Cancelled++
	return done, nil
}

// validateCancel refuses a cancel past its AcceptBy, and one of a job that is not queued (nor
// being cancelled already).
func (s *orderState) validateCancel(ctx workflow.Context, jobID string, opts CancelOptions) error {
	if !opts.AcceptBy.IsZero() && workflow.Now(ctx).After(opts.AcceptBy) {
		return cancelTooLate()
	}
	if s.indexOf(jobID) < 0 && !s.cancelling[jobID] {
		return s.notQueued(jobID)
	}
	return nil
}

// launchReady launches queued jobs while a slot is free and the run may launch more, ending
// instead those whose deadline has passed. With batchLaunches it initiates every job a slot is
// free for before waiting for their starts; otherwise one job at a time.
func (s *orderState) launchReady(ctx workflow.Context, maxRunning, limit int) error {
	for len(s.running) < maxRunning && len(s.queue) > 0 && s.launches < limit {
		if err := s.initiate(ctx, maxRunning, limit); err != nil {
			return err
		}
		if err := s.awaitLaunching(ctx); err != nil {
			return err
		}
	}
	return nil
}

// initiate starts the workflows of the queued jobs a slot is free for (of the first one only
// without batchLaunches) and puts them in launching, ending instead those whose deadline has passed.
func (s *orderState) initiate(ctx workflow.Context, maxRunning, limit int) error {
	for len(s.running)+len(s.launching) < maxRunning && len(s.queue) > 0 && s.launches+len(s.launching) < limit &&
		(s.batchLaunches || len(s.launching) == 0) {
		ref := s.queue[0]
		s.queue = s.queue[1:]
		if expired(ctx, ref) {
			if err := endQueued(ctx, ref, status.JobExpired, s.quiet()); err != nil {
				return err
			}
			s.result.Expired++
			continue
		}
		s.launching = append(s.launching, launch{ref: ref, future: initiateJob(ctx, s.in, ref, s.shape)})
	}
	return nil
}

// awaitLaunching waits for the start of each job in launching, in launch order, and moves it to
// running.
func (s *orderState) awaitLaunching(ctx workflow.Context) error {
	for len(s.launching) > 0 {
		l := s.launching[0]
		started, err := awaitStart(ctx, l.future)
		s.launching = s.launching[1:]
		if err != nil {
			return err
		}
		switch {
		case s.quiet() && started:
			s.running = append(s.running, l.ref.JobID)
			if s.handsOver {
				s.runs[l.ref.JobID] = l.ref.Run
			}
			s.watch(ctx, l.ref, l.future)
		case s.quiet() && s.handsOver:
			// Started by an earlier run of the order (one a workflow reset undid): its result
			// reaches no future of this run, so the read model tells of its end.
			s.poll(contract.JobRunRef{JobID: l.ref.JobID, Run: l.ref.Run})
		case !s.quiet() && s.dropped[l.ref.JobID]:
			// Cancelled in the database while being launched: it ends not runnable and never signals.
			s.result.Cancelled++
		case !s.quiet():
			// A job of an older shape signals, even one an earlier run launched.
			s.running = append(s.running, l.ref.JobID)
		}
		s.launches++
	}
	return nil
}

// poll counts a running JobShapeQuiet job whose end the run learns of from the read model
// (watchHandedOver): one an earlier run launched.
func (s *orderState) poll(r contract.JobRunRef) {
	s.running = append(s.running, r.JobID)
	s.runs[r.JobID] = r.Run
	s.polled = append(s.polled, r)
	s.polledAdds++
}

// handOver splits running for the next run: jobs that signal their end stay in Running, the
// JobShapeQuiet ones go to Watching with their runs.
func (s *orderState) handOver() (running []string, watching []contract.JobRunRef) {
	if !s.handsOver {
		return slices.Clone(s.running), nil // as runs of earlier versions recorded it
	}
	for _, id := range s.running {
		if run, ok := s.runs[id]; ok {
			watching = append(watching, contract.JobRunRef{JobID: id, Run: run})
		} else {
			running = append(running, id)
		}
	}
	return running, watching
}

// WatchTaskQueue is the task queue of the WatchJobs activities of the order workflows on
// mainQueue: long waits that must not take the activity slots of the main queue.
func WatchTaskQueue(mainQueue string) string { return mainQueue + "-watch" }

// watchOptions run WatchJobs (on WatchTaskQueue): it lasts until a watched job ends, heartbeating at every look. A
// timed-out execution (a job waiting longer than StartToCloseTimeout, a worker gone) is retried by
// the server without a history event, so the run's history grows only when jobs end.
var watchOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Hour,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
}

// watchHandedOver learns, in a coroutine of its own, of the ends of the polled jobs: one WatchJobs
// execution at a time for all of them, which returns when at least one has ended. A job added
// while it runs cancels it, and the next execution asks about the new set. Its history cost is
// one activity (three events) and one workflow task per return, however long the jobs take.
func (s *orderState) watchHandedOver(ctx workflow.Context) {
	opts := watchOptions
	opts.TaskQueue = WatchTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			if err := workflow.Await(ctx, func() bool { return len(s.polled) > 0 }); err != nil {
				return
			}
			asked, adds := slices.Clone(s.polled), s.polledAdds
			actx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, opts))
			f := workflow.ExecuteActivity(actx, contract.WatchJobs, contract.WatchJobsInput{OrderID: s.in.OrderID, Jobs: asked})
			if err := workflow.Await(ctx, func() bool { return f.IsReady() || s.polledAdds != adds }); err != nil {
				cancel()
				return
			}
			if !f.IsReady() {
				cancel()
			}
			var ended []contract.JobRunEnd
			err := f.Get(ctx, &ended)
			cancel()
			if err != nil && !temporal.IsCanceledError(err) {
				// Only a workflow's own cancellation ends WatchJobs otherwise; wait before asking again.
				workflow.GetLogger(ctx).Warn("watching handed-over jobs", "error", err)
				if werr := workflow.Sleep(ctx, time.Minute); werr != nil {
					return
				}
			}
			for _, e := range ended {
				if slices.Contains(s.polled, contract.JobRunRef{JobID: e.JobID, Run: e.Run}) {
					s.finished(JobFinished{JobID: e.JobID, Run: e.Run, Status: e.Status})
				}
			}
		}
	})
}

// launch is a job whose child workflow the order has initiated.
type launch struct {
	ref    JobRef
	future workflow.ChildWorkflowFuture
}

// expireDue ends every queued job whose deadline has passed. Each is taken out of the queue
// before anything yields, so a cancel-job update running meanwhile never sees it.
func (s *orderState) expireDue(ctx workflow.Context) error {
	for {
		i := slices.IndexFunc(s.queue, func(j JobRef) bool { return expired(ctx, j) })
		if i < 0 {
			return nil
		}
		ref := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		if err := endQueued(ctx, ref, status.JobExpired, true); err != nil {
			return err
		}
		s.result.Expired++
	}
}

// expired reports whether a queued job's deadline has passed.
func expired(ctx workflow.Context, ref JobRef) bool {
	return !ref.ExpiresAt.IsZero() && !workflow.Now(ctx).Before(ref.ExpiresAt)
}

// endQueued ends a job the order never launched (cancelled or expired) and starts its webhook: in
// one FinishJob transaction when quiet, else with EndJob and then NotifyJobEnded (order runs
// started before the quiet shape, on replay).
func endQueued(ctx workflow.Context, ref JobRef, status string, quiet bool) error {
	end := contract.EndInput{JobID: ref.JobID, Run: ref.Run, Status: status}
	if !quiet {
		if err := project(ctx, contract.EndJob, nil, end); err != nil {
			return err
		}
		webhookNotStarted(ctx, ref.JobID, NotifyJobEnded(ctx, ref.JobID, ref.Run))
		return nil
	}
	var rec contract.RecordWebhookResult
	if err := project(ctx, contract.FinishJob, &rec, contract.FinishJobInput{End: &end}); err != nil {
		return err
	}
	webhookNotStarted(ctx, ref.JobID, startDelivery(ctx, rec))
	return nil
}

func notCancelable() error {
	return temporal.NewApplicationError("the job has already started or finished", ErrTypeJobNotCancelable)
}

// nextExpiry is the time until the earliest deadline of a queued job.
func nextExpiry(ctx workflow.Context, queue []JobRef) (time.Duration, bool) {
	var earliest time.Time
	for _, j := range queue {
		if !j.ExpiresAt.IsZero() && (earliest.IsZero() || j.ExpiresAt.Before(earliest)) {
			earliest = j.ExpiresAt
		}
	}
	if earliest.IsZero() {
		return 0, false
	}
	return max(earliest.Sub(workflow.Now(ctx)), time.Millisecond), true
}

// initiateJob asks Temporal to start the job's workflow; awaitStart waits for the answer.
func initiateJob(ctx workflow.Context, in OrderInput, ref JobRef, shape int) workflow.ChildWorkflowFuture {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: JobWorkflowID(ref.JobID, ref.Run),
		// ABANDON: a job owns its credit reservation and must settle it even if the order
		// workflow continues as new or an operator terminates it.
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// A job run executes once; a second start under the same ID would settle credits twice.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: jobSearchAttributes(in),
		Memo:                  map[string]any{"product_ref": ref.ProductRef, "product_label": ref.ProductLabel},
	})
	return workflow.ExecuteChildWorkflow(cctx, JobWorkflow, JobInput{
		JobID: ref.JobID, Run: ref.Run, OrderID: in.OrderID, Options: in.JobOptions, Provider: ref.Provider, Shape: shape,
	})
}

// awaitStart waits until Temporal has started an initiated job's workflow. It reports false when
// an earlier run of the order had already started it: then the future holds no result.
func awaitStart(ctx workflow.Context, f workflow.ChildWorkflowFuture) (bool, error) {
	err := f.GetChildWorkflowExecution().Get(ctx, nil)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return false, nil // launched by an earlier run of this order
	}
	return err == nil, err
}
