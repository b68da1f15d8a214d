package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/workflows"
)

var wa *activities.Activities

func newWebhookEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	checkActivityCalls(t, env)
	env.RegisterWorkflow(workflows.WebhookDeliveryWorkflow)
	env.RegisterActivity(wa)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func TestWebhookDelayIsJitteredDeterministically(t *testing.T) {
	t.Parallel()
	base := []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	if len(workflows.WebhookSchedule) != len(base) {
		t.Fatalf("schedule has %d attempts, want 8", len(workflows.WebhookSchedule))
	}
	for i, d := range base {
		if workflows.WebhookSchedule[i] != d {
			t.Fatalf("schedule[%d] = %v, want %v", i, workflows.WebhookSchedule[i], d)
		}
	}
	if workflows.WebhookDelay("any", 1) != 0 || workflows.WebhookDelay("any", 9) != 0 || workflows.WebhookDelay("any", 0) != 0 {
		t.Fatal("the first attempt is not immediate, or attempts outside the schedule wait")
	}
	for attempt := 2; attempt <= 8; attempt++ {
		b := base[attempt-1]
		seen := map[time.Duration]bool{}
		var lo, hi time.Duration = b * 2, 0
		for i := range 200 {
			id := "delivery-" + string(rune('a'+i%26)) + time.Duration(i).String()
			d := workflows.WebhookDelay(id, attempt)
			if d != workflows.WebhookDelay(id, attempt) {
				t.Fatalf("WebhookDelay(%s, %d) is not deterministic", id, attempt)
			}
			if d < b*8/10 || d > b*12/10 {
				t.Fatalf("WebhookDelay(%s, %d) = %v, outside %v ± 20%%", id, attempt, d, b)
			}
			seen[d] = true
			lo, hi = min(lo, d), max(hi, d)
		}
		// The jitter spreads deliveries over most of the ±20 % band.
		if len(seen) < 150 || lo > b*85/100 || hi < b*115/100 {
			t.Errorf("attempt %d: %d distinct delays in [%v, %v] for base %v: not spread", attempt, len(seen), lo, hi, b)
		}
	}
}

// attemptLog records when each DeliverWebhook attempt ran and with what input.
type attemptLog struct {
	env    *testsuite.TestWorkflowEnvironment
	start  time.Time
	at     []time.Duration // since the workflow started
	inputs []contract.DeliverInput
}

func (l *attemptLog) record(in contract.DeliverInput) {
	l.at = append(l.at, l.env.Now().Sub(l.start))
	l.inputs = append(l.inputs, in)
}

func TestWebhookDeliveryWorkflowFollowsTheScheduleThenGivesUp(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	const id = "7d3c1a52-0000-4000-8000-000000000001"
	l := &attemptLog{env: env, start: env.Now()}
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
		l.record(in)
		return contract.DeliverResult{StatusCode: 500}, nil
	}).Times(8)
	env.OnActivity(wa.MarkWebhookFailed, mock.Anything, id).Return(nil).Once()

	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: id})
	var res workflows.WebhookDeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Delivered || res.Attempts != 8 || res.StatusCode != 500 {
		t.Fatalf("result = %+v", res)
	}
	var want time.Duration
	for i, got := range l.at {
		attempt := i + 1
		want += workflows.WebhookDelay(id, attempt)
		if got != want {
			t.Errorf("attempt %d at %v, want %v", attempt, got, want)
		}
		in := l.inputs[i]
		if in.DeliveryID != id || in.Attempt != attempt || in.Replay || in.NextDelay != workflows.WebhookDelay(id, attempt+1) {
			t.Errorf("attempt %d input = %+v", attempt, in)
		}
	}
	if l.at[0] != 0 {
		t.Errorf("first attempt after %v, want at once", l.at[0])
	}
	// Eight attempts over about 28 hours (27 h 35 min ± 20 %).
	if last := l.at[7]; last < 22*time.Hour || last > 34*time.Hour {
		t.Errorf("last attempt after %v", last)
	}
	if l.inputs[7].NextDelay != 0 {
		t.Errorf("the last attempt schedules another one in %v", l.inputs[7].NextDelay)
	}
}

func TestWebhookDeliveryWorkflowHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	const id = "7d3c1a52-0000-4000-8000-000000000002"
	l := &attemptLog{env: env, start: env.Now()}
	results := []contract.DeliverResult{
		{StatusCode: 429, RetryAfter: 10 * time.Minute}, // longer than the 5 s step: it wins
		{StatusCode: 503, RetryAfter: time.Second},      // shorter than the 5 min step: the schedule wins
		{Delivered: true, StatusCode: 200},
	}
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
		l.record(in)
		return results[len(l.at)-1], nil
	}).Times(3)

	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: id, Replay: true})
	var res workflows.WebhookDeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !res.Delivered || res.Attempts != 3 || res.StatusCode != 200 {
		t.Fatalf("result = %+v", res)
	}
	if gap := l.at[1] - l.at[0]; gap != 10*time.Minute {
		t.Errorf("after a Retry-After of 10 min the next attempt came %v later", gap)
	}
	if gap := l.at[2] - l.at[1]; gap != workflows.WebhookDelay(id, 3) {
		t.Errorf("after a Retry-After of 1 s the next attempt came %v later, want the scheduled %v", gap, workflows.WebhookDelay(id, 3))
	}
	for _, in := range l.inputs {
		if !in.Replay {
			t.Errorf("a replay run's attempt is not marked replay: %+v", in)
		}
	}
}

func TestWebhookDeliveryWorkflowStopsForAnUnknownDelivery(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).
		Return(contract.DeliverResult{}, temporal.NewNonRetryableApplicationError("gone", contract.ErrTypeWebhookDeliveryNotFound, nil)).Once()
	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: "nope"})
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != contract.ErrTypeWebhookDeliveryNotFound {
		t.Fatalf("workflow error = %v", err)
	}
}

// An attempt that finds its endpoint disabled (or deleted) makes no request and stops the run: no
// further attempt and no failed mark (the activity held or failed the delivery itself).
func TestWebhookDeliveryWorkflowEndsWhenItsEndpointStopsIt(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).
		Return(contract.DeliverResult{}, nil).Once() // attempt 1 fails (a 5xx, say)
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).
		Return(contract.DeliverResult{Stopped: true}, nil).Once() // the endpoint was disabled meanwhile
	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: "held"})
	var res workflows.WebhookDeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Delivered || res.Attempts != 2 {
		t.Fatalf("result = %+v, want two attempts, not delivered", res)
	}
}

// A run cancelled while it waits for its next attempt (its endpoint was deleted: engine
// Webhooks.DeleteEndpoint) ends canceled at once: no further attempt, and no failed mark (the
// deletion failed the delivery itself).
func TestWebhookDeliveryWorkflowEndsCanceledWhileItWaits(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).
		Return(contract.DeliverResult{StatusCode: 500, RetryAfter: 10 * time.Minute}, nil).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: "deleted"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the cancelled run did not end")
	}
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("the cancelled run ended with %v, want canceled", err)
	}
}

func TestWebhookDeliveryWorkflowCountsAFailedActivityAsAFailedAttempt(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	const id = "7d3c1a52-0000-4000-8000-000000000003"
	calls := 0
	env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.Anything).Return(func(_ context.Context, in contract.DeliverInput) (contract.DeliverResult, error) {
		calls++
		if in.Attempt == 1 {
			return contract.DeliverResult{}, errors.New("database is down")
		}
		return contract.DeliverResult{Delivered: true, StatusCode: 200}, nil
	})
	env.ExecuteWorkflow(workflows.WebhookDeliveryWorkflow, workflows.WebhookDeliveryInput{DeliveryID: id})
	var res workflows.WebhookDeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	// Attempt 1 is retried by the activity policy (5 executions), then attempt 2 succeeds.
	if !res.Delivered || res.Attempts != 2 || calls != 6 {
		t.Fatalf("result = %+v after %d executions", res, calls)
	}
}

// notifyTwice notifies the same job run twice, gap apart, as a job workflow whose end is
// replayed would; it returns when (workflow time) it finished.
func notifyTwice(ctx workflow.Context, jobID string, gap time.Duration) (time.Time, error) {
	if err := workflows.NotifyJobEnded(ctx, jobID, 1); err != nil {
		return time.Time{}, err
	}
	if gap > 0 {
		if err := workflow.Sleep(ctx, gap); err != nil {
			return time.Time{}, err
		}
	}
	if err := workflows.NotifyJobEnded(ctx, jobID, 1); err != nil {
		return time.Time{}, err
	}
	return workflow.Now(ctx), nil
}

func TestNotifyJobEndedStartsOneAbandonedDeliveryWorkflow(t *testing.T) {
	t.Parallel()
	// The second notification comes while the delivery runs, and after it has finished.
	for _, gap := range []time.Duration{0, 25 * time.Hour} {
		t.Run(gap.String(), func(t *testing.T) {
			env := newWebhookEnv(t)
			env.RegisterWorkflow(notifyTwice)
			rec := contract.RecordWebhookResult{DeliveryID: "d-42", Deliver: true, AccountID: "acc", InstallationID: "inst", OrderID: "ord"}
			env.OnActivity(wa.RecordJobWebhook, mock.Anything, contract.RecordWebhookInput{JobID: "j1", Run: 1}).Return(rec, nil).Twice()
			// The receiver takes an hour to answer; the job must not wait for it.
			env.OnActivity(wa.DeliverWebhook, mock.Anything, mock.MatchedBy(func(in contract.DeliverInput) bool {
				return in.DeliveryID == "d-42" && !in.Replay
			})).After(time.Hour).Return(contract.DeliverResult{Delivered: true, StatusCode: 200}, nil).Once()
			var started []string
			env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, ctx workflow.Context, _ converter.EncodedValues) {
				started = append(started, info.WorkflowExecution.ID)
				sa := workflow.GetTypedSearchAttributes(ctx)
				for key, want := range map[temporal.SearchAttributeKeyKeyword]string{
					workflows.SAAccountID: "acc", workflows.SAInstallationID: "inst", workflows.SAOrderID: "ord",
				} {
					if got, ok := sa.GetKeyword(key); !ok || got != want {
						t.Errorf("search attribute %s = %q, want %q", key.GetName(), got, want)
					}
				}
				if live, ok := sa.GetBool(workflows.SALivemode); !ok || !live {
					t.Errorf("ShotflowLivemode = %v (set %v), want true", live, ok)
				}
			})
			var childErr error
			childDone := false
			env.SetOnChildWorkflowCompletedListener(func(_ *workflow.Info, _ converter.EncodedValue, err error) {
				childDone, childErr = true, err
			})
			begin := env.Now()
			env.ExecuteWorkflow(notifyTwice, "j1", gap)
			var finished time.Time
			if err := env.GetWorkflowResult(&finished); err != nil {
				t.Fatalf("NotifyJobEnded: %v", err)
			}
			if len(started) != 1 || started[0] != "webhook/d-42" {
				t.Fatalf("delivery workflows started: %q, want one webhook/d-42", started)
			}
			if took := finished.Sub(begin); took != gap {
				t.Errorf("the job took %v; it waited for its webhook", took)
			}
			// ABANDON: the delivery outlives the job and completes on its own. (The test
			// environment keeps running until abandoned children finish.)
			if gap == 0 && env.Now().Sub(begin) < time.Hour {
				t.Errorf("the delivery ended with its parent, after %v; want it abandoned, running its hour", env.Now().Sub(begin))
			}
			if gap > 0 && (!childDone || childErr != nil) {
				t.Errorf("delivery workflow done=%v err=%v; want it to finish on its own", childDone, childErr)
			}
		})
	}
}

func TestNotifyJobEndedWithoutCallbackStartsNothing(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.RegisterWorkflow(notifyTwice)
	env.OnActivity(wa.RecordJobWebhook, mock.Anything, mock.Anything).Return(contract.RecordWebhookResult{}, nil).Twice()
	env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) {
		t.Error("a delivery workflow was started for a job without a callback URL")
	})
	env.ExecuteWorkflow(notifyTwice, "j1", time.Duration(0))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}

func TestNotifyJobEndedReportsAJobThatHasNotEnded(t *testing.T) {
	t.Parallel()
	env := newWebhookEnv(t)
	env.RegisterWorkflow(notifyTwice)
	env.OnActivity(wa.RecordJobWebhook, mock.Anything, mock.Anything).
		Return(contract.RecordWebhookResult{}, temporal.NewNonRetryableApplicationError("not terminal", contract.ErrTypeWebhookJobNotTerminal, nil)).Once()
	env.ExecuteWorkflow(notifyTwice, "j1", time.Duration(0))
	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != contract.ErrTypeWebhookJobNotTerminal {
		t.Fatalf("error = %v", err)
	}
}

func TestWebhookWorkflowID(t *testing.T) {
	t.Parallel()
	if got := workflows.WebhookWorkflowID("abc"); got != "webhook/abc" {
		t.Fatalf("WebhookWorkflowID = %q", got)
	}
}
