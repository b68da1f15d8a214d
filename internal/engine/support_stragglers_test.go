package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// signal is one signal a describingTemporal received.
type signal struct {
	workflowID, name string
	arg              any
}

// describingTemporal is a recordingTemporal that also describes workflows, with the statuses of
// closed (or running) workflows it was given (any other is not found), and records signals.
type describingTemporal struct {
	*recordingTemporal
	statuses map[string]enumspb.WorkflowExecutionStatus
	mu       sync.Mutex
	signals  []signal
}

func (f *describingTemporal) DescribeWorkflowExecution(_ context.Context, workflowID, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	st, ok := f.statuses[workflowID]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: st}}, nil
}

func (f *describingTemporal) SignalWorkflow(_ context.Context, workflowID, _, name string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signals = append(f.signals, signal{workflowID: workflowID, name: name, arg: arg})
	return nil
}

// TestSupportFindsAndRedrivesStrandedJobs: of three running jobs, one whose workflow closed and one
// never launched by an order workflow that closed are stragglers, while one whose workflow runs is
// not. A settle ends the run failed, tells the order, records the job.failed webhook (as a job's
// workflow records it) and starts its delivery; a rerun settles the run and runs the job again.
func TestSupportFindsAndRedrivesStrandedJobs(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tn := newSupportTenant(t, db, 10)
		tc := &describingTemporal{recordingTemporal: &recordingTemporal{}}
		s := engine.New(engine.Config{Store: models.NewStore(db), Temporal: tc, TaskQueue: "support-test", Log: zap.NewNop(), JobOptions: supportJobOptions,
			TemporalUI: supportUI, Signer: urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://api.example"), DownloadTTL: time.Hour})
		o, jobs := submitOrder(t, s, tn, 2, "closed", "running", "queued")
		closed, running, queued := jobs[0].ID, jobs[1].ID, jobs[2].ID
		for _, id := range []string{closed, running} {
			if err := models.BeginAttempt(db, id, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		tc.statuses = map[string]enumspb.WorkflowExecutionStatus{
			workflows.JobWorkflowID(closed, 1):  enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			workflows.JobWorkflowID(running, 1): enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
			workflows.OrderWorkflowID(o.ID):     enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		}

		list, err := s.Support.FindStragglers(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		why := map[string]string{}
		for _, j := range list.Jobs {
			why[j.JobID] = j.Why
		}
		if list.Count != 2 || list.Checked != 3 || list.Limit != 10 || len(why) != 2 ||
			why[closed] != "job workflow job/"+closed+" is Terminated" ||
			why[queued] != "never launched, and order workflow order/"+o.ID+" is Terminated" {
			t.Fatalf("stragglers = %+v", list)
		}
		if j := list.Jobs[0]; j.TemporalUIURL != supportUI.WorkflowURL(j.WorkflowID) || j.WorkflowID != workflows.JobWorkflowID(j.JobID, 1) {
			t.Fatalf("straggler link = %+v", j)
		}
		if _, err := s.Support.FindStragglers(ctx, 0, engine.MaxSupportListLimit+1); !errors.Is(err, engine.ErrInvalidFilter) {
			t.Fatalf("limit over the maximum: %v", err)
		}

		// By mode: the queued job is made a test key's for a moment.
		testdb.MustExec(t, db, "UPDATE jobs SET test_mode = ? WHERE id = ?", true, queued)
		for mode, want := range map[engine.Mode][]string{engine.ModeLive: {closed}, engine.ModeTest: {queued}, engine.ModeAll: {closed, queued}} {
			l, err := s.Support.FindStragglersIn(ctx, mode, 0, nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range l.Jobs {
				got = append(got, j.JobID)
				if j.Livemode != (j.JobID != queued) {
					t.Errorf("%s: livemode %v", j.JobID, j.Livemode)
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				t.Errorf("mode %s: stragglers %v, want %v", mode, got, want)
			}
		}
		if _, err := s.Support.FindStragglersIn(ctx, "sandbox", 0, nil, 10); !errors.Is(err, engine.ErrInvalidFilter) {
			t.Fatalf("unknown mode: %v", err)
		}
		testdb.MustExec(t, db, "UPDATE jobs SET test_mode = ? WHERE id = ?", false, queued)

		// Refusals change nothing.
		for name, c := range map[string]struct {
			req  engine.RedriveRequest
			want error
		}{
			"running job": {engine.RedriveRequest{JobID: running, Action: engine.RedriveSettle, Actor: "a"}, engine.ErrNotStraggler},
			"unknown job": {engine.RedriveRequest{JobID: models.NewID(), Action: engine.RedriveSettle, Actor: "a"}, models.ErrNotFound},
			"no actor":    {engine.RedriveRequest{JobID: closed, Action: engine.RedriveSettle, Actor: " "}, nil},
			"bad action":  {engine.RedriveRequest{JobID: closed, Action: "retry", Actor: "a"}, nil},
		} {
			before := accountSnapshot(t, db, tn.accountID)
			if _, err := s.Support.RedriveJob(ctx, c.req); err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", name, err, c.want)
			}
			if after := accountSnapshot(t, db, tn.accountID); after != before {
				t.Errorf("%s changed the database", name)
			}
		}

		// Settle: the run ends failed, the order hears of it, the webhook is recorded and sent.
		res, err := s.Support.RedriveJob(ctx, engine.RedriveRequest{JobID: closed, Action: engine.RedriveSettle, Actor: "alice", Reason: "outage"})
		if err != nil {
			t.Fatal(err)
		}
		eventID := models.WebhookDeliveryID(closed, 1, webhooks.EventJobFailed)
		var d models.WebhookDelivery
		if err := db.Where("event_id = ?", eventID).Take(&d).Error; err != nil {
			t.Fatal(err)
		}
		deliveryID := d.ID
		if res.SettledRun != 1 || res.AuditID == "" || res.WebhookDeliveryID != deliveryID || res.NotifyError != "" || res.Rerun != nil ||
			res.Why != why[closed] {
			t.Fatalf("settle = %+v", res)
		}
		j := loadJob(t, db, closed)
		if j.Status != status.JobFailed || j.ErrorCategory == nil || *j.ErrorCategory != string(errorcat.InternalBug) ||
			!strings.Contains(j.ErrorDetail, "settled by alice") {
			t.Fatalf("settled job = %+v", j)
		}
		if len(tc.signals) != 1 || tc.signals[0].workflowID != workflows.OrderWorkflowID(o.ID) || tc.signals[0].name != workflows.SignalJobFinished ||
			tc.signals[0].arg != (workflows.JobFinished{JobID: closed, Run: 1, Status: status.JobFailed}) {
			t.Fatalf("signals = %+v", tc.signals)
		}
		var ev models.WebhookEvent
		if err := db.Where("id = ?", eventID).Take(&ev).Error; err != nil {
			t.Fatal(err)
		}
		var p webhooks.Payload
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if d.Event != webhooks.EventJobFailed || d.CallbackURL != "https://shop.example/hooks" || p.ID != closed || p.Status != status.JobFailed ||
			p.DeliveryID != eventID {
			t.Fatalf("delivery = %+v, payload %s", d, ev.Payload)
		}
		if starts := tc.startsOf(workflows.WebhookWorkflowID(deliveryID)); len(starts) != 1 ||
			starts[0].args[0] != (workflows.WebhookDeliveryInput{DeliveryID: deliveryID}) {
			t.Fatalf("delivery starts = %+v", starts)
		}
		// Settled, it is no straggler any more.
		if _, err := s.Support.RedriveJob(ctx, engine.RedriveRequest{JobID: closed, Action: engine.RedriveSettle, Actor: "alice"}); !errors.Is(err, engine.ErrNotStraggler) {
			t.Fatalf("second settle: %v", err)
		}

		// Rerun: the never launched job is settled and runs again as run 2, with no webhook.
		res, err = s.Support.RedriveJob(ctx, engine.RedriveRequest{JobID: queued, Action: engine.RedriveRerun, Actor: "bob", Reason: "outage"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rerun == nil || res.Rerun.Run != 2 || !res.Rerun.WorkflowStarted || res.WebhookDeliveryID != "" ||
			res.Rerun.TemporalUIURL != supportUI.WorkflowURL(workflows.JobWorkflowID(queued, 2)) {
			t.Fatalf("rerun = %+v", res)
		}
		if j := loadJob(t, db, queued); j.Run != 2 || j.Status != status.JobPending {
			t.Fatalf("re-run job = %+v", j)
		}
		var audit []models.JobRetry
		if err := db.Where("order_id = ?", o.ID).Order("created_at, action DESC").Find(&audit).Error; err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, a := range audit {
			actions = append(actions, map[string]string{closed: "closed", queued: "queued"}[a.JobID]+"/"+a.Action+"/"+a.Actor)
		}
		if strings.Join(actions, ",") != "closed/settle/alice,queued/settle/bob,queued/retry/bob" {
			t.Fatalf("audit trail = %v", actions)
		}
		// Both settled runs released their credits; run 2 reserved its own.
		assertAccountCredits(t, db, tn.accountID, 6, 4)
		var deliveries int64
		db.Model(&models.WebhookDelivery{}).Where("order_id = ?", o.ID).Count(&deliveries)
		if deliveries != 1 {
			t.Fatalf("%d deliveries, want the settled run's only", deliveries)
		}
	})
}

// TestReRunStartedButNotRecordedIsAStraggler: a re-run whose workflow start Temporal took while
// the command heard only a failure (a timeout) is never marked started, and the run sweeper, which
// starts pending runs alone, does not mark it once the workflow has moved the job. When that
// workflow is then terminated, the job is stranded: it is listed and can be re-driven, rather
// than read as a start still owed to the outbox.
func TestReRunStartedButNotRecordedIsAStraggler(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tn := newSupportTenant(t, db, 10)
		_, jobs := submitOrder(t, newSupportEngine(db, &recordingTemporal{}), tn, 1, "x")
		x := jobs[0].ID
		failRun(t, db, x, 1, errorcat.ProviderAccount)
		lost := &recordingTemporal{err: errors.New("context deadline exceeded")}
		res, err := newSupportEngine(db, lost).Support.RetryJob(ctx, engine.RetryRequest{JobID: x, Actor: "a"})
		if err != nil || res.WorkflowStarted {
			t.Fatalf("retry = %+v, %v", res, err)
		}
		// The start did reach Temporal: run 2's workflow began the attempt, then was terminated.
		if err := models.BeginAttempt(db, x, 2, 1); err != nil {
			t.Fatal(err)
		}
		if j := loadJob(t, db, x); j.Status != status.JobInProgress || j.RunStartedAt != nil {
			t.Fatalf("job = %+v", j)
		}
		tc := &describingTemporal{recordingTemporal: &recordingTemporal{}, statuses: map[string]enumspb.WorkflowExecutionStatus{
			workflows.JobWorkflowID(x, 2): enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		}}
		s := newSupportEngine(db, tc)
		if n, err := s.Outbox.StartPendingRuns(ctx, 0, 10); err != nil || n != 0 {
			t.Fatalf("run sweep started %d, %v; a run in progress is not its to start", n, err)
		}
		list, err := s.Support.FindStragglers(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if list.Count != 1 || list.Jobs[0].JobID != x || list.Jobs[0].Why != "job workflow job/"+x+"/run-2 is Terminated" {
			t.Fatalf("stragglers = %+v", list)
		}
		red, err := s.Support.RedriveJob(ctx, engine.RedriveRequest{JobID: x, Action: engine.RedriveSettle, Actor: "a"})
		if err != nil || red.SettledRun != 2 {
			t.Fatalf("redrive = %+v, %v", red, err)
		}
		if j := loadJob(t, db, x); j.Status != status.JobFailed || j.Run != 2 {
			t.Fatalf("settled job = %+v", j)
		}
		assertAccountCredits(t, db, tn.accountID, 10, 0)
	})
}

// TestRedriveRerunThatCannotRunAgainStillTellsTheSettledRun: a rerun whose new run is refused (here
// a test job past its twin's quota of the day) has settled the stranded run failed all the same.
// That run's end is told as a settle tells it, the order's workflow signalled and job.failed
// recorded and sent, rather than left unknown to the client whose job and order show it failed.
func TestRedriveRerunThatCannotRunAgainStillTellsTheSettledRun(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tn := newTestSupportTenant(t, db, models.TestDailyCredits)
		tc := &describingTemporal{recordingTemporal: &recordingTemporal{}}
		s := engine.New(engine.Config{Store: models.NewStore(db), Temporal: tc, TaskQueue: "support-test", Log: zap.NewNop(), JobOptions: supportJobOptions,
			TemporalUI: supportUI, Signer: urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://api.example"), DownloadTTL: time.Hour})
		o, jobs := submitOrder(t, s, tn, 2, "stranded")
		x := jobs[0].ID
		if err := models.BeginAttempt(db, x, 1, 1); err != nil {
			t.Fatal(err)
		}
		tc.statuses = map[string]enumspb.WorkflowExecutionStatus{
			workflows.JobWorkflowID(x, 1):   enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			workflows.OrderWorkflowID(o.ID): enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		}
		testdb.MustExec(t, db, "UPDATE accounts SET test_jobs_today = ? WHERE id = ?", models.TestDailyJobs, tn.accountID)

		_, err := s.Support.RedriveJob(ctx, engine.RedriveRequest{JobID: x, Action: engine.RedriveRerun, Actor: "bob"})
		if !errors.Is(err, models.ErrTestQuotaExceeded) || !strings.Contains(err.Error(), "settled failed") {
			t.Fatalf("rerun past the test quota: %v", err)
		}
		if j := loadJob(t, db, x); j.Status != status.JobFailed || j.Run != 1 {
			t.Fatalf("job = %+v", j)
		}
		if o := loadOrder(t, db, o.ID); o.Status != status.OrderFailed || o.JobsFailed != 1 {
			t.Fatalf("order = %+v", o)
		}
		if len(tc.signals) != 1 || tc.signals[0].workflowID != workflows.OrderWorkflowID(o.ID) ||
			tc.signals[0].arg != (workflows.JobFinished{JobID: x, Run: 1, Status: status.JobFailed}) {
			t.Fatalf("signals = %+v; want the order told of the settled run", tc.signals)
		}
		var d models.WebhookDelivery
		if err := db.Where("event_id = ?", models.WebhookDeliveryID(x, 1, webhooks.EventJobFailed)).Take(&d).Error; err != nil {
			t.Fatalf("the settled run's job.failed: %v", err)
		}
		if starts := tc.startsOf(workflows.WebhookWorkflowID(d.ID)); len(starts) != 1 {
			t.Fatalf("delivery starts = %+v", starts)
		}
		assertAccountCredits(t, db, tn.accountID, models.TestDailyCredits, 0)
	})
}

// endingTemporal is a describingTemporal whose description of one workflow first runs a hook: the
// job that workflow runs ends between the straggler search's read of the jobs and its question to
// Temporal.
type endingTemporal struct {
	*describingTemporal
	workflowID string
	hook       func()
}

func (f *endingTemporal) DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if workflowID == f.workflowID && f.hook != nil {
		f.hook()
		f.hook = nil
	}
	return f.describingTemporal.DescribeWorkflowExecution(ctx, workflowID, runID)
}

// TestAJobThatEndsDuringTheStragglerSearchIsNoStraggler: a job whose workflow completes it after
// the search read the open jobs, and closes before Temporal is asked, is not reported stranded
// (nor logged by the workers' sweep as one to re-drive): its row says it ended.
func TestAJobThatEndsDuringTheStragglerSearchIsNoStraggler(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tn := newSupportTenant(t, db, 10)
		o, jobs := submitOrder(t, newSupportEngine(db, &recordingTemporal{}), tn, 1, "long", "stranded")
		long, stranded := jobs[0].ID, jobs[1].ID
		for _, id := range []string{long, stranded} {
			if err := models.BeginAttempt(db, id, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		tc := &endingTemporal{describingTemporal: &describingTemporal{recordingTemporal: &recordingTemporal{}, statuses: map[string]enumspb.WorkflowExecutionStatus{
			workflows.JobWorkflowID(long, 1):     enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
			workflows.JobWorkflowID(stranded, 1): enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			workflows.OrderWorkflowID(o.ID):      enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		}}, workflowID: workflows.JobWorkflowID(long, 1), hook: func() { completeRun(t, db, long, 1) }}
		list, err := newSupportEngine(db, tc).Support.FindStragglers(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if list.Checked != 2 || list.Count != 1 || list.Jobs[0].JobID != stranded {
			t.Fatalf("stragglers = %+v; want the terminated job's alone", list)
		}
	})
}
