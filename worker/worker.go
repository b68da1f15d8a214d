// Package worker builds the Temporal workers that run shotflow's workflows and activities: one on
// the main task queue, and one per generation provider on that provider's own queue.
package worker

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/workflows"
)

// Options tunes the workers of one process.
type Options struct {
	TaskQueue             string
	MaxConcurrentActivity int
	// StopTimeout is how long Stop lets running activities finish.
	StopTimeout time.Duration
	// Providers lists the generation providers whose queues this process serves, with their limits.
	Providers []ProviderLimits
	// OnFatalError, when set, is told of an error that stopped a worker for good (for example the
	// namespace was deleted or the key lost its permission).
	OnFatalError func(error)
}

// ProviderLimits throttles one provider's generate activities.
type ProviderLimits struct {
	Provider string
	// RatePerSecond is enforced by the Temporal server across every worker of the provider's
	// queue (TaskQueueActivitiesPerSecond); 0 means no limit.
	RatePerSecond float64
	// Concurrency caps the generate activities one worker process runs at once for the provider.
	Concurrency int
}

// Group is the set of workers of one process.
type Group struct {
	workers []worker.Worker
}

// New returns the main worker, with every shotflow workflow and activity, and a worker per
// provider that runs only the Generate activity on workflows.GenerateTaskQueue(queue, provider),
// so each provider's calls are rate-limited and bounded on their own and a slow provider never
// takes the slots of another.
func New(c client.Client, acts *activities.Activities, opts Options) *Group {
	main := worker.New(c, opts.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:      opts.MaxConcurrentActivity,
		MaxConcurrentLocalActivityExecutionSize: opts.MaxConcurrentActivity,
		WorkerStopTimeout:                       opts.StopTimeout,
		OnFatalError:                            opts.OnFatalError,
	})
	Register(main, acts)
	watch := worker.New(c, workflows.WatchTaskQueue(opts.TaskQueue), WatchWorkerOptions())
	registerWatch(watch, acts)
	g := &Group{workers: []worker.Worker{main, watch}}
	for _, p := range opts.Providers {
		po := ProviderWorkerOptions(p, opts.StopTimeout)
		po.OnFatalError = opts.OnFatalError
		w := worker.New(c, workflows.GenerateTaskQueue(opts.TaskQueue, p.Provider), po)
		registerGenerate(w, acts)
		g.workers = append(g.workers, w)
	}
	return g
}

// ProviderWorkerOptions are the worker options of a provider's queue: no workflows, the
// provider's concurrency, and its rate limit enforced by the server.
func ProviderWorkerOptions(p ProviderLimits, stop time.Duration) worker.Options {
	return worker.Options{
		DisableWorkflowWorker:              true,
		MaxConcurrentActivityExecutionSize: max(p.Concurrency, 1),
		TaskQueueActivitiesPerSecond:       p.RatePerSecond,
		WorkerStopTimeout:                  stop,
	}
}

// MaxConcurrentWatches is how many WatchJobs executions one worker process runs at once. Each
// lasts as long as the jobs it watches and mostly sleeps between two reads of the jobs' rows, so
// they run on a queue of their own (workflows.WatchTaskQueue) rather than take the main queue's
// activity slots.
const MaxConcurrentWatches = 1000

// WatchWorkerOptions are the worker options of the WatchJobs queue: no workflows, room for many
// long waits, and none of them waited for when the worker stops (the server runs them again on
// another worker, without a history event).
func WatchWorkerOptions() worker.Options {
	return worker.Options{DisableWorkflowWorker: true, MaxConcurrentActivityExecutionSize: MaxConcurrentWatches}
}

// Start starts every worker; if one fails the started ones are stopped.
func (g *Group) Start() error {
	for i, w := range g.workers {
		if err := w.Start(); err != nil {
			for _, started := range slices.Backward(g.workers[:i]) {
				started.Stop()
			}
			return fmt.Errorf("start worker %d: %w", i, err)
		}
	}
	return nil
}

// Stop stops every worker, letting running activities finish within the stop timeout. The workers
// are told at once and drain side by side: stopped one after another, a provider's worker would
// go on taking new generate attempts while the main worker drains, and the whole stop would last
// one stop timeout per worker (SHUTDOWN_TIMEOUT bounds the drain of the process, within the
// supervisor's grace period).
func (g *Group) Stop() {
	var wg sync.WaitGroup
	for _, w := range g.workers {
		wg.Go(w.Stop)
	}
	wg.Wait()
}

// Register adds shotflow's workflows and activities to a worker (also used by replay tests).
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflow(workflows.OrderWorkflow)
	r.RegisterWorkflow(workflows.JobWorkflow)
	r.RegisterWorkflow(workflows.WebhookDeliveryWorkflow)
	r.RegisterWorkflow(workflows.PrepareInputWorkflow)
	r.RegisterActivity(acts)
}

// registerGenerate adds the Generate activity alone to a provider's worker, under the name it has
// on the main worker and in the workflows' calls (contract.Generate).
func registerGenerate(r worker.ActivityRegistry, acts *activities.Activities) {
	r.RegisterActivityWithOptions(acts.Generate, activity.RegisterOptions{Name: contract.Generate})
}

// registerWatch adds the WatchJobs activity alone to the worker of workflows.WatchTaskQueue.
func registerWatch(r worker.ActivityRegistry, acts *activities.Activities) {
	r.RegisterActivityWithOptions(acts.WatchJobs, activity.RegisterOptions{Name: contract.WatchJobs})
}
