// Package worker builds the Temporal worker that runs shotflow's workflows and activities.
package worker

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/workflows"
)

// Options tunes a worker.
type Options struct {
	TaskQueue             string
	MaxConcurrentActivity int
	// StopTimeout is how long Stop lets running activities finish.
	StopTimeout time.Duration
}

// New returns a worker on the task queue with every shotflow workflow and activity registered.
func New(c client.Client, acts *activities.Activities, opts Options) worker.Worker {
	w := worker.New(c, opts.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:      opts.MaxConcurrentActivity,
		MaxConcurrentLocalActivityExecutionSize: opts.MaxConcurrentActivity,
		WorkerStopTimeout:                       opts.StopTimeout,
	})
	Register(w, acts)
	return w
}

// Register adds shotflow's workflows and activities to a worker (also used by replay tests).
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflow(workflows.OrderWorkflow)
	r.RegisterWorkflow(workflows.JobWorkflow)
	r.RegisterWorkflow(workflows.WebhookDeliveryWorkflow)
	r.RegisterActivity(acts)
}
