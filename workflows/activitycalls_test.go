package workflows_test

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
)

// checkActivityCalls fails the test when one of its workflows runs an activity or a local
// activity whose name is no method of *activities.Activities, or passes it arguments that method
// does not take. The workflows call activities by their contract names, which the SDK cannot
// check against a function; this is the check it made when they passed method values.
func checkActivityCalls(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	c := &callCheck{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{c}})
	// Reported by the test's goroutine, not from workflow code.
	t.Cleanup(func() {
		for _, err := range c.failures() {
			t.Error(err)
		}
	})
}

// callCheck puts a callCheckOutbound under every workflow of a test environment and collects
// what they find.
type callCheck struct {
	interceptor.WorkerInterceptorBase
	mu   sync.Mutex
	errs []error
}

func (c *callCheck) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &callCheckInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, check: c}
}

// check records what is wrong with a call, if anything.
func (c *callCheck) check(name string, args []any) {
	if err := callError(name, args); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.errs = append(c.errs, err)
	}
}

func (c *callCheck) failures() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

type callCheckInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	check *callCheck
}

func (i *callCheckInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&callCheckOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, check: i.check})
}

// callCheckOutbound checks each activity call of a workflow before it goes on.
type callCheckOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	check *callCheck
}

func (o *callCheckOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.check.check(activityType, args)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *callCheckOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.check.check(activityType, args)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

// callError is what is wrong with a call of the activity name with args, or nil: it checks what
// the SDK checks of a call by function value, as many arguments as the method has parameters
// after its context, each assignable to its parameter (nil passes).
func callError(name string, args []any) error {
	m, ok := reflect.TypeFor[*activities.Activities]().MethodByName(name)
	if !ok {
		return fmt.Errorf("a workflow runs activity %q: *activities.Activities has no method of that name", name)
	}
	const skip = 2 // the receiver and the context
	if got, want := len(args), m.Type.NumIn()-skip; got != want {
		return fmt.Errorf("a workflow runs activity %s with %d arguments; the method takes %d", name, got, want)
	}
	for i, arg := range args {
		want := m.Type.In(i + skip)
		if got := reflect.TypeOf(arg); got != nil && !got.AssignableTo(want) {
			return fmt.Errorf("a workflow runs activity %s with argument %d of type %s; the method takes %s", name, i+1, got, want)
		}
	}
	return nil
}

// TestCallErrorRefusesWhatTheMethodsDoNotTake: callError, which every workflow test relies on,
// reports unknown names, wrong counts and wrong types, and lets the calls the workflows make pass.
func TestCallErrorRefusesWhatTheMethodsDoNotTake(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []any
		ok   bool
	}{
		{contract.BeginAttempt, []any{contract.AttemptInput{JobID: "j1", Run: 1, Attempt: 1}}, true},
		{contract.InvalidateAsset, []any{"a1", "unusable"}, true},
		{contract.MarkWebhookFailed, []any{nil}, true},
		{"NoSuchActivity", []any{"a1"}, false},
		{contract.InvalidateAsset, []any{"a1"}, false},
		{contract.BeginAttempt, []any{contract.RetryPendingInput{JobID: "j1", Run: 1}}, false},
	} {
		if err := callError(c.name, c.args); (err == nil) != c.ok {
			t.Errorf("callError(%s, %v) = %v, want ok %v", c.name, c.args, err, c.ok)
		}
	}
}
