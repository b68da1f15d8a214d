package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

var a *activities.Activities

func categoryError(c errorcat.Category, retryAfter time.Duration) error {
	return temporal.NewNonRetryableApplicationError("provider said no", string(c), nil, retryAfter.Seconds())
}

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	checkActivityCalls(t, env)
	env.RegisterWorkflow(workflows.JobWorkflow)
	env.RegisterWorkflow(workflows.OrderWorkflow)
	env.RegisterActivity(a)
	env.RegisterWorkflow(workflows.WebhookDeliveryWorkflow)
	// Jobs of these tests belong to no installation with a callback URL: nothing to deliver.
	env.OnActivity(a.RecordJobWebhook, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Maybe()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// newJobEnv is newEnv for a JobWorkflow run on its own: its signal to the order is mocked.
func newJobEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := newEnv(t)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", workflows.SignalJobFinished, mock.Anything).Return(nil)
	return env
}

var okResult = contract.GenerateResult{Outputs: []contract.OutputFile{{AssetID: "out-1", BlobKey: "k", ContentType: "image/png"}}}

func TestJobWorkflowCompletes(t *testing.T) {
	t.Parallel()
	env := newJobEnv(t)
	env.OnActivity(a.BeginAttempt, mock.Anything, contract.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.CompleteJob, mock.Anything, contract.CompleteInput{JobID: "j1", Run: 1, Outputs: okResult.Outputs}).Return(nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobCompleted || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
}

func TestJobWorkflowRetriesRateLimitHonouringRetryAfter(t *testing.T) {
	t.Parallel()
	env := newJobEnv(t)
	var starts []time.Time
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.AttemptInput) error {
		starts = append(starts, env.Now())
		return nil
	}).Times(3)
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.RateLimit, 90*time.Second)).Twice()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(okResult, nil).Once()
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.MatchedBy(func(in contract.RetryPendingInput) bool {
		return in.Category == errorcat.RateLimit
	})).Return(nil).Twice()
	env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(nil).Once()

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobCompleted || res.Attempts != 3 {
		t.Fatalf("result = %+v", res)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 90*time.Second {
			t.Errorf("attempt %d started %v after the previous one; Retry-After asked for 90s", i+1, gap)
		}
	}
}

func TestJobWorkflowFailsAtOnceOnNonRetryableCategories(t *testing.T) {
	t.Parallel()
	for _, c := range []errorcat.Category{errorcat.ContentPolicy, errorcat.InputMissing, errorcat.ProviderAccount, errorcat.InternalBug} {
		t.Run(string(c), func(t *testing.T) {
			env := newJobEnv(t)
			env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
			env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(c, 0)).Once()
			env.OnActivity(a.EndJob, mock.Anything, mock.MatchedBy(func(in contract.EndInput) bool {
				return in.Status == status.JobFailed && in.Category == c
			})).Return(nil).Once()
			env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1})
			var res workflows.JobResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if res.Status != status.JobFailed || res.Category != c || res.Attempts != 1 {
				t.Fatalf("result = %+v", res)
			}
		})
	}
}

func TestJobWorkflowGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	env := newJobEnv(t)
	schedule := workflows.RetrySchedule{Delays: []time.Duration{time.Second}, MaxAttempts: 3, MaxTotal: time.Hour}
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Times(3)
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).Return(contract.GenerateResult{}, categoryError(errorcat.TransientInfra, 0)).Times(3)
	env.OnActivity(a.MarkRetryPending, mock.Anything, mock.Anything).Return(nil).Twice()
	var detail string
	env.OnActivity(a.EndJob, mock.Anything, mock.MatchedBy(func(in contract.EndInput) bool {
		return in.Category == errorcat.TransientInfra
	})).Return(func(_ context.Context, in contract.EndInput) error { detail = in.Detail; return nil }).Once()
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, Options: workflows.JobOptions{Retry: schedule}})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobFailed || res.Attempts != 3 {
		t.Fatalf("result = %+v", res)
	}
	// Support's detail names the category, and not the activity's own (absent) retries, which
	// read as if the job were not retried.
	if detail != "provider said no [TRANSIENT_INFRA]" {
		t.Fatalf("error detail = %q", detail)
	}
}

func TestJobWorkflowStopsForATerminalJob(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).
		Return(temporal.NewNonRetryableApplicationError("terminal", contract.ErrTypeJobNotRunnable, errors.New("x"))).Once()
	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 0 {
		t.Fatalf("result = %+v", res)
	}
}

func TestWorkflowIDs(t *testing.T) {
	t.Parallel()
	if got := workflows.OrderWorkflowID("x"); got != "order/x" {
		t.Errorf("OrderWorkflowID = %q", got)
	}
	if got := workflows.JobWorkflowID("x", 2); got != "job/x/run-2" {
		t.Errorf("JobWorkflowID = %q", got)
	}
}

func converterFor() converter.DataConverter { return converter.GetDefaultDataConverter() }

// messages records the messages a logger is given.
type messages struct {
	mu   sync.Mutex
	list []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = append(m.list, r.Message)
	return nil
}
func (m *messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *messages) WithGroup(string) slog.Handler      { return m }

// An input-ready signal that reaches a job which is not waiting for it (its input was ready when
// it looked, so the preparation's signal comes during the attempt) is consumed before the run
// closes: the SDK has no unhandled signal to warn about.
func TestJobWorkflowConsumesAnInputReadyNobodyWaitsFor(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	logged := &messages{}
	s.SetLogger(log.NewStructuredLogger(slog.New(logged)))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.JobWorkflow)
	env.RegisterActivity(a)
	env.OnActivity(a.RecordJobWebhook, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Maybe()
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", workflows.SignalJobFinished, mock.Anything).Return(nil)
	env.OnActivity(a.BeginAttempt, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(a.Generate, mock.Anything, mock.Anything).After(time.Minute).Return(okResult, nil).Once()
	env.OnActivity(a.CompleteJob, mock.Anything, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.SignalInputReady, nil) }, 10*time.Second)

	env.ExecuteWorkflow(workflows.JobWorkflow, workflows.JobInput{JobID: "j1", Run: 1, OrderID: "o1"})
	var res workflows.JobResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != status.JobCompleted {
		t.Fatalf("result = %+v", res)
	}
	logged.mu.Lock()
	defer logged.mu.Unlock()
	for _, m := range logged.list {
		if strings.Contains(m, "unhandled signals") {
			t.Errorf("the SDK logged %q", m)
		}
	}
}
