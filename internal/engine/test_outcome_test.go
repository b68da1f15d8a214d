package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

func intp(v int) *int       { return &v }
func strp(v string) *string { return &v }

// A subject's test_outcome: refused from a live key naming it, refused naming the member for a
// value out of range, and kept on every job of the subject from a test key.
func TestPlanSessionTestOutcome(t *testing.T) {
	f := newSessionFixture(t, 1000)
	with := func(test bool, o *engine.TestOutcome) engine.SessionRequest {
		s := shoot("ok", 2)
		s.TestOutcome = o
		r := f.request("", s)
		r.Test = test
		return r
	}
	for _, tc := range []struct {
		name  string
		test  bool
		o     *engine.TestOutcome
		field string
	}{
		{"live key", false, &engine.TestOutcome{}, "subjects[0].test_outcome"},
		{"live key with a valid outcome", false, &engine.TestOutcome{FailWith: strp("CONTENT_POLICY")}, "subjects[0].test_outcome"},
		{"unknown category", true, &engine.TestOutcome{FailWith: strp("SOMETHING")}, "subjects[0].test_outcome.fail_with"},
		{"lower-case category", true, &engine.TestOutcome{FailWith: strp("content_policy")}, "subjects[0].test_outcome.fail_with"},
		{"empty category", true, &engine.TestOutcome{FailWith: strp("")}, "subjects[0].test_outcome.fail_with"},
		{"negative failures", true, &engine.TestOutcome{RetryableFailures: intp(-1)}, "subjects[0].test_outcome.retryable_failures"},
		{"too many failures", true, &engine.TestOutcome{RetryableFailures: intp(11)}, "subjects[0].test_outcome.retryable_failures"},
		{"negative delay", true, &engine.TestOutcome{DelayMS: intp(-1)}, "subjects[0].test_outcome.delay_ms"},
		{"delay too long", true, &engine.TestOutcome{DelayMS: intp(120001)}, "subjects[0].test_outcome.delay_ms"},
	} {
		order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), with(tc.test, tc.o))
		e, ok := engine.As(err)
		require.True(t, ok, "%s: %v", tc.name, err)
		require.Equal(t, engine.KindInvalid, e.Kind, tc.name)
		require.Equal(t, tc.field, e.Field, tc.name)
		require.Nil(t, order, tc.name)
		require.Nil(t, jobs, tc.name)
	}

	order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), with(true, &engine.TestOutcome{
		FailWith: strp("PROVIDER_CAPACITY"), RetryableFailures: intp(10), DelayMS: intp(120000)}))
	require.NoError(t, err)
	require.True(t, order.TestMode)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.True(t, j.TestMode)
		require.NotNil(t, j.TestOutcome)
		require.JSONEq(t, `{"fail_with":"PROVIDER_CAPACITY","retryable_failures":10,"delay_ms":120000}`, *j.TestOutcome)
	}
	// A test key without an outcome, and a live key: no outcome on the jobs.
	for _, test := range []bool{true, false} {
		_, jobs, err := f.eng.Sessions.PlanSession(t.Context(), with(test, nil))
		require.NoError(t, err)
		require.Nil(t, jobs[0].TestOutcome)
		require.Equal(t, test, jobs[0].TestMode)
	}
	// An empty outcome is the default: it completes.
	_, jobs, err = f.eng.Sessions.PlanSession(t.Context(), with(true, &engine.TestOutcome{}))
	require.NoError(t, err)
	require.JSONEq(t, `{}`, *jobs[0].TestOutcome)
}

// startCapture is a Temporal client that records the workflow inputs it is asked to start.
type startCapture struct {
	mu     sync.Mutex
	orders []workflows.OrderInput
	jobs   []workflows.JobInput
}

func newStartCapture() (*startCapture, *mocks.Client) {
	sc := &startCapture{}
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		for _, a := range args[3:] {
			switch in := a.(type) {
			case workflows.OrderInput:
				sc.orders = append(sc.orders, in)
			case workflows.JobInput:
				sc.jobs = append(sc.jobs, in)
			}
		}
	}).Return(&mocks.WorkflowRun{}, nil)
	c.On("DescribeTaskQueue", mock.Anything, mock.Anything, mock.Anything).Return(
		func(context.Context, string, enumspb.TaskQueueType) *workflowservice.DescribeTaskQueueResponse {
			return &workflowservice.DescribeTaskQueueResponse{Pollers: []*taskqueuepb.PollerInfo{{Identity: "worker@test"}}}
		}, nil)
	return sc, c
}

// A test key's generation request: refused from a live key with nothing created; from a test
// key its order starts with test mode's retry schedule and its jobs' attempts on the local
// studio's queue, whatever their model's provider. A live order keeps the configured options and
// its model's provider.
func TestGenerationTestOutcomeAndStart(t *testing.T) {
	testdb.Dialects(t, testGenerationTestOutcomeAndStart)
}

func testGenerationTestOutcomeAndStart(t *testing.T, db *gorm.DB) {
	sc, c := newStartCapture()
	reg := newRegistry(&catalog.Catalog{AIModels: []catalog.AIModel{{ID: "paid/idea", Provider: "paid", BaseCreditCost: 2,
		JobTypes: []string{jobtype.SceneryIdea}}}})
	live := workflows.JobOptions{InputWait: 7}
	eng := engine.New(engine.Config{Store: models.NewStore(db), Temporal: c, TaskQueue: "shotflow", Log: zap.NewNop(), Models: reg,
		JobOptions: live})
	acc, err := models.CreateAccount(db, "Team", 100)
	require.NoError(t, err)
	// A test twin's account, as test keys have (its quota counts the test requests).
	require.NoError(t, db.Model(&models.Account{}).Where("id = ?", acc.ID).Update("test_mode", true).Error)
	r := engine.Requester{AccountID: acc.ID, API: models.APIExternal, CorrelationID: "c", AspectRatio: "1:1",
		TestOutcome: &engine.TestOutcome{FailWith: strp("CONTENT_POLICY")}}
	in := engine.IdeasInput{JobType: jobtype.SceneryIdea, Kind: engine.Sceneries, Preferences: "beach", Count: 2}

	_, err = eng.Generation.RegisterIdeas(t.Context(), r, in)
	e, ok := engine.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, engine.KindInvalid, e.Kind)
	require.Equal(t, "test_outcome", e.Field)
	var orders int64
	require.NoError(t, db.Model(&models.Order{}).Count(&orders).Error)
	require.Zero(t, orders, "a refused request created an order")

	r.TestOutcome.FailWith = strp("NOPE")
	r.Test = true
	_, err = eng.Generation.RegisterIdeas(t.Context(), r, in)
	e, _ = engine.As(err)
	require.NotNil(t, e)
	require.Equal(t, "test_outcome.fail_with", e.Field)

	r.TestOutcome.FailWith = strp("CONTENT_POLICY")
	s, err := eng.Generation.RegisterIdeas(t.Context(), r, in)
	require.NoError(t, err)
	var jobs []models.Job
	require.NoError(t, db.Where("order_id = ?", s.OrderID).Find(&jobs).Error)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.True(t, j.TestMode)
		require.JSONEq(t, `{"fail_with":"CONTENT_POLICY"}`, *j.TestOutcome)
	}

	r.Test, r.TestOutcome = false, nil
	_, err = eng.Generation.RegisterIdeas(t.Context(), r, in)
	require.NoError(t, err)

	sc.mu.Lock()
	require.Len(t, sc.orders, 2)
	test, liveOrder := sc.orders[0], sc.orders[1]
	sc.mu.Unlock()
	require.Equal(t, workflows.TestRetrySchedule, test.JobOptions.Retry)
	require.Equal(t, live.InputWait, test.JobOptions.InputWait)
	require.Equal(t, live, liveOrder.JobOptions)
	for _, j := range test.Jobs {
		require.Equal(t, local.Name, j.Provider, "a test job's attempts run on the local studio's queue")
	}
	for _, j := range liveOrder.Jobs {
		require.Equal(t, "paid", j.Provider, "a live job's attempts run on its model's provider's queue")
	}

	// A re-run of a test job starts the same way.
	jobs[0].Run = 2
	require.NoError(t, eng.Outbox.StartJobRun(t.Context(), &jobs[0]))
	sc.mu.Lock()
	require.Len(t, sc.jobs, 1)
	rerun := sc.jobs[0]
	sc.mu.Unlock()
	require.Equal(t, local.Name, rerun.Provider)
	require.Equal(t, workflows.TestRetrySchedule, rerun.Options.Retry)
}

// A clone without a subjects list keeps its source's subjects' test_outcome; a subject of a list
// has its own.
func TestCloneSessionTestOutcome(t *testing.T) {
	f := newSessionFixture(t, 1000)
	// A test twin's account, as test keys have (its quota counts the test requests).
	require.NoError(t, f.db.Model(&models.Account{}).Where("id = ?", f.inst.AccountID).Update("test_mode", true).Error)
	s := shoot("ok", 1)
	s.TestOutcome = &engine.TestOutcome{FailWith: strp("RATE_LIMIT"), DelayMS: intp(5)}
	r := f.request("", s)
	r.Test = true
	committed, err := f.eng.Sessions.CommitSession(t.Context(), r, nil)
	require.NoError(t, err)

	req, err := f.eng.Sessions.CloneSession(t.Context(), f.inst.ID, committed.OrderID, nil)
	require.NoError(t, err)
	require.Len(t, req.Subjects, 1)
	got := req.Subjects[0].TestOutcome
	require.NotNil(t, got)
	require.Equal(t, "RATE_LIMIT", *got.FailWith)
	require.Equal(t, 5, *got.DelayMS)

	req, err = f.eng.Sessions.CloneSession(t.Context(), f.inst.ID, committed.OrderID, []engine.CloneSubject{{ProductRef: "ok", ImagesCount: 1}})
	require.NoError(t, err)
	require.Nil(t, req.Subjects[0].TestOutcome)
	own := &engine.TestOutcome{RetryableFailures: intp(1)}
	req, err = f.eng.Sessions.CloneSession(t.Context(), f.inst.ID, committed.OrderID, []engine.CloneSubject{{ProductRef: "ok", ImagesCount: 1, TestOutcome: own}})
	require.NoError(t, err)
	require.Same(t, own, req.Subjects[0].TestOutcome)
}
