package apitest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
)

// TemporalOptions tune the recording Temporal client.
type TemporalOptions struct {
	// OnlyPrefix, when set, accepts only the starts of workflows whose ID has this prefix: any
	// other start fails the test and returns an error.
	OnlyPrefix string
	// OnStart, when set, is called with each accepted start and its input, after it is recorded;
	// calls never overlap, so it may append to a slice without a lock of its own.
	OnStart func(opts client.StartWorkflowOptions, input any)
	// Down, when set, tells whether the generators are down, in place of SetGeneratorsDown: for
	// tests that keep that switch in their own environment.
	Down func() bool
}

// Start is one workflow start the client accepted.
type Start struct {
	Options client.StartWorkflowOptions
	Input   any // the workflow's first argument
}

// Temporal is a Temporal client that records the workflows started through it and the signals
// sent (a cancel tells the order), and answers DescribeTaskQueue with one poller, or with none
// while the generators are down. Client is the client.Client to hand to the engine; it knows no
// other call.
type Temporal struct {
	Client *mocks.Client

	t    testing.TB
	opts TemporalOptions

	hookMu         sync.Mutex // serializes OnStart
	mu             sync.Mutex
	starts         []Start
	signals        []string // "<workflow ID> <signal>" of each signal sent
	generatorsDown bool
}

// ErrUnexpectedStart is what the client answers a start that TemporalOptions.OnlyPrefix refuses.
var ErrUnexpectedStart = errors.New("apitest: unexpected workflow start")

// NewTemporal returns a recording Temporal client.
func NewTemporal(t testing.TB, opts TemporalOptions) *Temporal {
	r := &Temporal{Client: &mocks.Client{}, t: t, opts: opts}
	r.Client.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
			if !r.start(o, args) {
				return nil, ErrUnexpectedStart
			}
			return &mocks.WorkflowRun{}, nil
		})
	r.Client.On("SignalWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_ context.Context, workflowID, _, signal string, _ any) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.signals = append(r.signals, workflowID+" "+signal)
			return nil
		})
	r.Client.On("DescribeTaskQueue", mock.Anything, mock.Anything, mock.Anything).Return(
		func(context.Context, string, enumspb.TaskQueueType) *workflowservice.DescribeTaskQueueResponse {
			if r.GeneratorsDown() {
				return &workflowservice.DescribeTaskQueueResponse{}
			}
			return &workflowservice.DescribeTaskQueueResponse{Pollers: []*taskqueuepb.PollerInfo{{Identity: "worker@test"}}}
		}, nil)
	return r
}

func (r *Temporal) accepts(o client.StartWorkflowOptions) bool {
	return r.opts.OnlyPrefix == "" || strings.HasPrefix(o.ID, r.opts.OnlyPrefix)
}

// start records an accepted start and reports true, or fails the test for a refused one.
func (r *Temporal) start(o client.StartWorkflowOptions, args []any) bool {
	if !r.accepts(o) {
		r.t.Errorf("apitest: workflow %q started; this test's Temporal client accepts only %s…", o.ID, r.opts.OnlyPrefix)
		return false
	}
	var input any
	if len(args) > 0 {
		input = args[0]
	}
	r.mu.Lock()
	r.starts = append(r.starts, Start{Options: o, Input: input})
	r.mu.Unlock()
	if r.opts.OnStart != nil {
		r.hookMu.Lock()
		defer r.hookMu.Unlock()
		r.opts.OnStart(o, input)
	}
	return true
}

// Starts returns the accepted starts so far, in order.
func (r *Temporal) Starts() []Start {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Start(nil), r.starts...)
}

// Started returns the IDs of the workflows started so far whose ID has the prefix.
func (r *Temporal) Started(prefix string) []string {
	var out []string
	for _, s := range r.Starts() {
		if strings.HasPrefix(s.Options.ID, prefix) {
			out = append(out, s.Options.ID)
		}
	}
	return out
}

// SetGeneratorsDown makes DescribeTaskQueue answer without pollers (down) or with one.
func (r *Temporal) SetGeneratorsDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.generatorsDown = down
}

// GeneratorsDown reports whether DescribeTaskQueue answers without pollers.
func (r *Temporal) GeneratorsDown() bool {
	if r.opts.Down != nil {
		return r.opts.Down()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.generatorsDown
}

// Signals returns the signals sent so far, each as "<workflow ID> <signal name>".
func (r *Temporal) Signals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.signals...)
}
