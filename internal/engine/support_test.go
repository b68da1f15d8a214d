package engine_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

func TestTemporalUIWorkflowURL(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		ui   engine.TemporalUI
		id   string
		want string
	}{
		"job run":     {supportUI, "job/abc/run-2", "http://localhost:8233/namespaces/default/workflows/job%2Fabc%2Frun-2"},
		"namespace":   {engine.TemporalUI{BaseURL: "https://ui.example", Namespace: "prod eu"}, "order/x", "https://ui.example/namespaces/prod%20eu/workflows/order%2Fx"},
		"no UI":       {engine.TemporalUI{}, "order/x", ""},
		"default ns":  {engine.TemporalUI{BaseURL: "http://ui"}, "webhook/d", "http://ui/namespaces/default/workflows/webhook%2Fd"},
		"escaped ids": {supportUI, "job/a b?c", "http://localhost:8233/namespaces/default/workflows/job%2Fa%20b%3Fc"},
	}
	for name, c := range cases {
		if got := c.ui.WorkflowURL(c.id); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

func TestSupportListJobsFilters(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		a, b := newSupportTenant(t, db, 100), newSupportTenant(t, db, 100)
		_, jobsA := submitOrder(t, s, a, 1, "a-policy", "a-rate", "a-ok")
		_, jobsB := submitOrder(t, s, b, 1, "b-policy", "b-waiting")
		failRun(t, db, jobsA[0].ID, 1, errorcat.ContentPolicy)
		failRun(t, db, jobsA[1].ID, 1, errorcat.RateLimit)
		completeRun(t, db, jobsA[2].ID, 1)
		failRun(t, db, jobsB[0].ID, 1, errorcat.ContentPolicy)
		// Distinct update times, oldest first: a-policy, a-rate, a-ok, b-policy, b-waiting.
		base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		for i, id := range []string{jobsA[0].ID, jobsA[1].ID, jobsA[2].ID, jobsB[0].ID, jobsB[1].ID} {
			testdb.MustExec(t, db, "UPDATE jobs SET updated_at = ? WHERE id = ?", base.Add(time.Duration(i)*time.Minute), id)
		}
		// b's jobs are a test key's: every item says which world it is of.
		testdb.MustExec(t, db, "UPDATE jobs SET test_mode = ? WHERE account_id = ?", true, b.accountID)
		refs := func(l engine.SupportJobList) []string {
			out := []string{}
			for _, j := range l.Jobs {
				out = append(out, j.ProductRef)
				if j.Livemode != strings.HasPrefix(j.ProductRef, "a-") {
					t.Errorf("%s: livemode %v", j.ProductRef, j.Livemode)
				}
			}
			return out
		}
		cases := []struct {
			name string
			f    engine.SupportJobFilter
			want []string
		}{
			{"failed, newest first", engine.SupportJobFilter{Status: "failed"}, []string{"b-policy", "a-rate", "a-policy"}},
			{"by category", engine.SupportJobFilter{Status: "failed", Category: "CONTENT_POLICY"}, []string{"b-policy", "a-policy"}},
			{"by installation", engine.SupportJobFilter{Status: "failed", InstallationID: a.installationID}, []string{"a-rate", "a-policy"}},
			{"category and installation", engine.SupportJobFilter{Status: "failed", Category: "RATE_LIMIT", InstallationID: b.installationID}, []string{}},
			{"since", engine.SupportJobFilter{Status: "failed", Since: base.Add(time.Minute)}, []string{"b-policy", "a-rate"}},
			{"since in another zone", engine.SupportJobFilter{Status: "failed", Since: base.Add(3 * time.Minute).In(time.FixedZone("CEST", 2*3600))}, []string{"b-policy"}},
			{"limit", engine.SupportJobFilter{Status: "failed", Limit: 2}, []string{"b-policy", "a-rate"}},
			{"other status", engine.SupportJobFilter{Status: "pending"}, []string{"b-waiting"}},
			{"completed", engine.SupportJobFilter{Status: "completed"}, []string{"a-ok"}},
			{"live", engine.SupportJobFilter{Status: "failed", Mode: engine.ModeLive}, []string{"a-rate", "a-policy"}},
			{"test", engine.SupportJobFilter{Status: "failed", Mode: engine.ModeTest}, []string{"b-policy"}},
			{"all", engine.SupportJobFilter{Status: "failed", Mode: engine.ModeAll}, []string{"b-policy", "a-rate", "a-policy"}},
			{"test and category", engine.SupportJobFilter{Status: "failed", Category: "RATE_LIMIT", Mode: engine.ModeTest}, []string{}},
			{"live pending", engine.SupportJobFilter{Status: "pending", Mode: engine.ModeLive}, []string{}},
		}
		for _, c := range cases {
			got, err := s.Support.ListJobs(ctx, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !slices.Equal(refs(got), c.want) || got.Count != len(c.want) {
				t.Errorf("%s: %v (count %d), want %v", c.name, refs(got), got.Count, c.want)
			}
		}

		// Every field of an item, and the limit that applied.
		got, err := s.Support.ListJobs(ctx, engine.SupportJobFilter{Status: "failed", Category: "RATE_LIMIT"})
		if err != nil || len(got.Jobs) != 1 || got.Limit != engine.DefaultSupportListLimit {
			t.Fatalf("list = %+v, %v", got, err)
		}
		it := got.Jobs[0]
		want := engine.SupportJobItem{
			JobID: jobsA[1].ID, OrderID: jobsA[1].OrderID, AccountID: a.accountID, InstallationID: &a.installationID,
			Status: "failed", Run: 1, AttemptCount: 1, ProductRef: "a-rate", AIModel: "sim/content-policy",
			UpdatedAt: base.Add(time.Minute), WorkflowID: "job/" + jobsA[1].ID,
			TemporalUIURL: "http://localhost:8233/namespaces/default/workflows/job%2F" + jobsA[1].ID, Livemode: true,
		}
		if it.ErrorCategory == nil || *it.ErrorCategory != "RATE_LIMIT" || it.ErrorHint == nil || *it.ErrorHint != errorcat.RateLimit.Hint() {
			t.Fatalf("item category/hint = %v/%v", it.ErrorCategory, it.ErrorHint)
		}
		it.ErrorCategory, it.ErrorHint = nil, nil
		if !it.UpdatedAt.Equal(want.UpdatedAt) {
			t.Fatalf("updated_at = %v, want %v", it.UpdatedAt, want.UpdatedAt)
		}
		it.UpdatedAt = want.UpdatedAt
		if !reflect.DeepEqual(it, want) {
			t.Fatalf("item = %+v\nwant %+v", it, want)
		}

		for _, bad := range []engine.SupportJobFilter{
			{Status: ""}, {Status: "broken"}, {Status: "failed", Category: "NOT_A_CATEGORY"},
			{Status: "failed", Limit: engine.MaxSupportListLimit + 1}, {Status: "failed", Limit: -1},
			{Status: "failed", Mode: "sandbox"}, {Status: "failed", Mode: "LIVE"},
		} {
			if _, err := s.Support.ListJobs(ctx, bad); !errors.Is(err, engine.ErrInvalidFilter) {
				t.Errorf("filter %+v: %v, want ErrInvalidFilter", bad, err)
			}
		}

		// An installation that does not exist is not found, not an empty list that reads as
		// "none of its jobs failed".
		for _, id := range []string{models.NewID(), "not-an-id"} {
			got, err := s.Support.ListJobs(ctx, engine.SupportJobFilter{Status: "failed", InstallationID: id})
			if ee, ok := engine.As(err); !ok || ee.Kind != engine.KindNotFound || !strings.Contains(ee.Message, "installation "+id+" does not exist") {
				t.Errorf("installation %s: %+v, %v; want not found", id, got, err)
			}
		}
	})
}

func TestRetryJobRunsItAgainInsideItsOrder(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		s := newSupportEngine(db, tc)
		tn := newSupportTenant(t, db, 10)
		o, jobs := submitOrder(t, s, tn, 2, "policy", "late", "fine")
		a, b, c := jobs[0].ID, jobs[1].ID, jobs[2].ID
		failRun(t, db, a, 1, errorcat.ContentPolicy)
		expireRun(t, db, b)
		completeRun(t, db, c, 1)
		if got := loadOrder(t, db, o.ID); got.Status != status.OrderCompleted || got.JobsFailed != 1 || got.JobsExpired != 1 || got.CompletedAt == nil {
			t.Fatalf("order before the retry = %+v", got)
		}
		assertAccountCredits(t, db, tn.accountID, 8, 0)

		// Retry the failed job: run 2, a new reservation, the order back in progress, an audit row.
		res, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: a, Actor: " alice ", Reason: "prompt fixed"})
		if err != nil {
			t.Fatal(err)
		}
		want := engine.RetryResult{
			JobID: a, OrderID: o.ID, PreviousStatus: status.JobFailed, Run: 2, WorkflowID: "job/" + a + "/run-2",
			TemporalUIURL:   "http://localhost:8233/namespaces/default/workflows/job%2F" + a + "%2Frun-2",
			CreditsReserved: 2, AuditID: res.AuditID, WorkflowStarted: true,
		}
		if res != want || res.AuditID == "" {
			t.Fatalf("result = %+v\nwant %+v", res, want)
		}
		j := loadJob(t, db, a)
		if j.Run != 2 || j.Status != status.JobPending || j.AttemptCount != 0 || j.ErrorCategory != nil || j.ErrorHint != nil ||
			j.ErrorDetail != "" || j.StartedAt != nil || j.CompletedAt != nil || j.RunStartedAt == nil {
			t.Fatalf("job after the retry = %+v", j)
		}
		if got := jobLedger(t, db, a); !slices.Equal(got, []string{"reserve/1/-2/2", "release/1/2/-2", "reserve/2/-2/2"}) {
			t.Fatalf("ledger of the job = %v", got)
		}
		assertAccountCredits(t, db, tn.accountID, 6, 2)
		got := loadOrder(t, db, o.ID)
		if got.Status != status.OrderInProgress || got.CompletedAt != nil || got.JobsFailed != 0 || got.JobsExpired != 1 ||
			got.JobsCompleted != 1 || got.CreditsReserved != 8 || got.CreditsConsumed != 2 || got.CreditsReleased != 4 {
			t.Fatalf("order after the retry = %+v", got)
		}
		var audit []models.JobRetry
		db.Where("job_id = ?", a).Find(&audit)
		if len(audit) != 1 || audit[0].ID != res.AuditID || audit[0].OrderID != o.ID || audit[0].AccountID != tn.accountID ||
			audit[0].FromRun != 1 || audit[0].ToRun != 2 || audit[0].Actor != "alice" || audit[0].Reason != "prompt fixed" {
			t.Fatalf("audit = %+v", audit)
		}

		// The run's workflow: its own ID, the order's task queue, never run twice, findable in the UI.
		starts := tc.startsOf("job/" + a + "/run-2")
		if len(starts) != 1 {
			t.Fatalf("starts of run 2 = %d", len(starts))
		}
		st := starts[0]
		if st.opts.TaskQueue != "support-test" || st.opts.WorkflowIDReusePolicy != enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
			reflect.ValueOf(st.workflow).Pointer() != reflect.ValueOf(workflows.JobWorkflow).Pointer() {
			t.Fatalf("start options = %+v", st.opts)
		}
		if len(st.args) != 1 || !reflect.DeepEqual(st.args[0], workflows.JobInput{JobID: a, Run: 2, OrderID: o.ID, Options: supportJobOptions, Provider: "sim", Shape: workflows.JobShapeQuiet}) {
			t.Fatalf("start input = %+v", st.args)
		}
		sa := st.opts.TypedSearchAttributes
		for key, want := range map[temporal.SearchAttributeKeyKeyword]string{
			workflows.SAAccountID: tn.accountID, workflows.SAInstallationID: tn.installationID, workflows.SAOrderID: o.ID,
			workflows.SAJobType: jobtype.PhotoShoot, workflows.SAJobStatus: status.JobPending,
		} {
			if got, ok := sa.GetKeyword(key); !ok || got != want {
				t.Errorf("search attribute %s = %q, want %q", key.GetName(), got, want)
			}
		}
		if live, ok := sa.GetBool(workflows.SALivemode); !ok || !live {
			t.Errorf("search attribute ShotflowLivemode = %v (set %v), want true", live, ok)
		}
		if sa.Size() != 6 {
			t.Errorf("search attributes = %v", sa.GetUntypedValues())
		}
		if st.opts.Memo["product_ref"] != "policy" || st.opts.Memo["product_label"] != "Label policy" {
			t.Fatalf("memo = %v", st.opts.Memo)
		}

		// The job cannot be retried again while its run is under way, and a late settlement of the
		// old run changes nothing.
		if _, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: a, Actor: "bob"}); !errors.Is(err, engine.ErrNotRetryable) {
			t.Fatalf("retry of a pending run = %v", err)
		}
		if ended, err := models.EndJob(db, a, 1, status.JobFailed, "CONTENT_POLICY", "", ""); err != nil || ended {
			t.Fatalf("settling run 1 again: %v, %v", ended, err)
		}
		completeRun(t, db, a, 1)
		if j := loadJob(t, db, a); j.Status != status.JobPending || j.Run != 2 {
			t.Fatalf("a late settlement of run 1 moved the job: %+v", j)
		}

		// An expired job runs again too.
		res, err = s.Support.RetryJob(ctx, engine.RetryRequest{JobID: b, Actor: "alice"})
		if err != nil || res.PreviousStatus != status.JobExpired || res.Run != 2 {
			t.Fatalf("retry of the expired job = %+v, %v", res, err)
		}
		if got := loadOrder(t, db, o.ID); got.JobsExpired != 0 || got.CreditsReserved != 10 || got.Status != status.OrderInProgress {
			t.Fatalf("order = %+v", got)
		}
		assertAccountCredits(t, db, tn.accountID, 4, 4)

		// The runs end as JobWorkflow ends them: the order is complete again and balances.
		completeRun(t, db, a, 2)
		failRun(t, db, b, 2, errorcat.InternalBug)
		got = loadOrder(t, db, o.ID)
		if got.Status != status.OrderCompleted || got.CompletedAt == nil || got.JobsCompleted != 2 || got.JobsFailed != 1 ||
			got.CreditsReserved != 10 || got.CreditsConsumed+got.CreditsReleased != 10 {
			t.Fatalf("order after the runs = %+v", got)
		}
		assertAccountCredits(t, db, tn.accountID, 6, 0)
		if got := jobLedger(t, db, a); !slices.Equal(got, []string{"reserve/1/-2/2", "release/1/2/-2", "reserve/2/-2/2", "consume/2/0/-2"}) {
			t.Fatalf("ledger of the job = %v", got)
		}

		// A job whose second run failed can run a third time.
		res, err = s.Support.RetryJob(ctx, engine.RetryRequest{JobID: b, Actor: "carol"})
		if err != nil || res.Run != 3 || res.WorkflowID != "job/"+b+"/run-3" {
			t.Fatalf("third run = %+v, %v", res, err)
		}
		completeRun(t, db, b, 3)
		got = loadOrder(t, db, o.ID)
		if got.Status != status.OrderCompleted || got.JobsCompleted != 3 || got.JobsFailed != 0 || got.JobsExpired != 0 ||
			got.CreditsReserved != 12 || got.CreditsConsumed != 6 || got.CreditsReleased != 6 {
			t.Fatalf("order after the third run = %+v", got)
		}
		assertAccountCredits(t, db, tn.accountID, 4, 0)
		var audits int64
		db.Model(&models.JobRetry{}).Where("order_id = ?", o.ID).Count(&audits)
		if audits != 3 {
			t.Fatalf("%d audit rows, want 3", audits)
		}
	})
}

func TestRetryJobRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		s := newSupportEngine(db, tc)
		tn := newSupportTenant(t, db, 4)
		_, jobs := submitOrder(t, s, tn, 2, "done", "broken")
		done, broken := jobs[0].ID, jobs[1].ID
		completeRun(t, db, done, 1)
		failRun(t, db, broken, 1, errorcat.ContentPolicy)
		// Another order holds the rest of the balance: nothing is left for a new run.
		_, others := submitOrder(t, s, tn, 2, "waiting")
		assertAccountCredits(t, db, tn.accountID, 0, 2)
		// A failed job whose reservation was never released (as if settlement had been skipped).
		_, stuck := submitOrder(t, s, newSupportTenant(t, db, 1), 1, "stuck")
		testdb.MustExec(t, db, "UPDATE jobs SET status = ? WHERE id = ?", status.JobFailed, stuck[0].ID)
		testdb.MustExec(t, db, "UPDATE orders SET jobs_failed = 1 WHERE id = ?", stuck[0].OrderID)
		starts := tc.count()

		cases := []struct {
			name    string
			req     engine.RetryRequest
			account string
			want    error
		}{
			{"completed job", engine.RetryRequest{JobID: done, Actor: "a"}, tn.accountID, engine.ErrNotRetryable},
			{"pending job", engine.RetryRequest{JobID: others[0].ID, Actor: "a"}, tn.accountID, engine.ErrNotRetryable},
			{"short balance", engine.RetryRequest{JobID: broken, Actor: "a"}, tn.accountID, models.ErrInsufficientCredits},
			{"unknown job", engine.RetryRequest{JobID: models.NewID(), Actor: "a"}, tn.accountID, models.ErrNotFound},
			{"reservation not released", engine.RetryRequest{JobID: stuck[0].ID, Actor: "a"}, stuck[0].AccountID, engine.ErrReservationNotReleased},
			{"no actor", engine.RetryRequest{JobID: broken, Actor: " "}, tn.accountID, nil},
		}
		for _, c := range cases {
			before := accountSnapshot(t, db, c.account)
			_, err := s.Support.RetryJob(ctx, c.req)
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
			if after := accountSnapshot(t, db, c.account); after != before {
				t.Errorf("%s changed the database:\nbefore %s\nafter  %s", c.name, before, after)
			}
		}
		if _, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: broken, Actor: "a"}); err == nil ||
			!strings.Contains(err.Error(), "0 credits available and the run needs 2") {
			t.Errorf("short balance message: %v", err)
		}
		if _, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: done, Actor: "a"}); err == nil ||
			!strings.Contains(err.Error(), "is completed") {
			t.Errorf("completed job message: %v", err)
		}
		if tc.count() != starts {
			t.Fatalf("a refused retry started %d workflows", tc.count()-starts)
		}

		// With credits granted the same retry goes through.
		if err := models.GrantCredits(db, tn.accountID, 2, "test"); err != nil {
			t.Fatal(err)
		}
		if res, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: broken, Actor: "a"}); err != nil || res.Run != 2 {
			t.Fatalf("retry after a grant = %+v, %v", res, err)
		}
		assertAccountCredits(t, db, tn.accountID, 0, 4)
	})
}

// TestRetryWhoseStartIsLostIsStartedBySweeper: the run is committed even when Temporal cannot be
// reached; the intake sweeper starts it later, once.
func TestRetryWhoseStartIsLostIsStartedBySweeper(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		lost := &recordingTemporal{err: errors.New("connection to Temporal lost")}
		tn := newSupportTenant(t, db, 5)
		_, jobs := submitOrder(t, newSupportEngine(db, &recordingTemporal{}), tn, 1, "x", "y")
		x, y := jobs[0].ID, jobs[1].ID
		failRun(t, db, x, 1, errorcat.ProviderAccount)
		failRun(t, db, y, 1, errorcat.ProviderAccount)

		res, err := newSupportEngine(db, lost).Support.RetryJob(ctx, engine.RetryRequest{JobID: x, Actor: "a"})
		if err != nil || res.WorkflowStarted || !strings.Contains(res.StartError, "connection to Temporal lost") || res.Run != 2 || res.AuditID == "" {
			t.Fatalf("retry with a lost start = %+v, %v", res, err)
		}
		if j := loadJob(t, db, x); j.Run != 2 || j.Status != status.JobPending || j.RunStartedAt != nil {
			t.Fatalf("job = %+v", j)
		}
		assertAccountCredits(t, db, tn.accountID, 4, 1)

		tc := &recordingTemporal{}
		sweeper := newSupportEngine(db, tc)
		if n, err := sweeper.Outbox.StartPendingRuns(ctx, time.Hour, 10); err != nil || n != 0 {
			t.Fatalf("sweep before the threshold started %d, %v", n, err)
		}
		if n, err := sweeper.Outbox.StartPendingRuns(ctx, 0, 10); err != nil || n != 1 {
			t.Fatalf("sweep started %d, %v; want 1", n, err)
		}
		starts := tc.startsOf("job/" + x + "/run-2")
		if len(starts) != 1 || !reflect.DeepEqual(starts[0].args[0], workflows.JobInput{JobID: x, Run: 2, OrderID: jobs[0].OrderID, Options: supportJobOptions, Provider: "sim", Shape: workflows.JobShapeQuiet}) ||
			starts[0].opts.WorkflowIDReusePolicy != enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE {
			t.Fatalf("sweeper starts = %+v", tc.starts)
		}
		if j := loadJob(t, db, x); j.RunStartedAt == nil {
			t.Fatal("the sweeper did not record the start")
		}
		if n, err := sweeper.Outbox.StartPendingRuns(ctx, 0, 10); err != nil || n != 0 {
			t.Fatalf("second sweep started %d, %v; want 0", n, err)
		}
		// Run 1 jobs are the order workflow's business, never the run sweeper's.
		if tc.count() != 1 {
			t.Fatalf("the sweeper made %d starts, want 1", tc.count())
		}

		// A start that finds the run's workflow already there (the sweeper racing the command) is a start.
		already := &recordingTemporal{err: serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", "")}
		res, err = newSupportEngine(db, already).Support.RetryJob(ctx, engine.RetryRequest{JobID: y, Actor: "a"})
		if err != nil || !res.WorkflowStarted || res.StartError != "" {
			t.Fatalf("retry racing the sweeper = %+v, %v", res, err)
		}
		if j := loadJob(t, db, y); j.RunStartedAt == nil {
			t.Fatal("run_started_at not set")
		}
	})
}

func TestSupportShowOrder(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		tn := newSupportTenant(t, db, 10)
		o, jobs := submitOrder(t, s, tn, 1, "mug", "vase")
		mug, vase := jobs[0].ID, jobs[1].ID
		failRun(t, db, mug, 1, errorcat.ContentPolicy)
		failRun(t, db, vase, 1, errorcat.InputMissing)
		deliver := func(jobID string, run int, event string, codes ...int) string {
			id := models.WebhookDeliveryID(jobID+o.ID, run, event)
			var job *string // none for an event of the order
			if jobID != "" {
				job = &jobID
			}
			if _, err := models.CreateWebhookDelivery(db, &models.WebhookDelivery{ID: id, AccountID: tn.accountID,
				InstallationID: &tn.installationID, OrderID: &o.ID, JobID: job, Run: run, Event: event,
				Payload: models.JSON(`{}`), CallbackURL: "https://shop.example/hooks"}); err != nil {
				t.Fatal(err)
			}
			for i, code := range codes {
				rec := models.AttemptRecord{Attempt: i + 1, CallbackURL: "https://shop.example/hooks", StartedAt: time.Now(),
					StatusCode: code, Latency: 42 * time.Millisecond, Delivered: code == 204}
				if code != 204 {
					rec.Error = "HTTP 503"
				}
				if err := models.RecordWebhookAttempt(db, id, rec); err != nil {
					t.Fatal(err)
				}
			}
			return id
		}
		first := deliver(mug, 1, webhooks.EventJobFailed, 503, 204)
		res, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: mug, Actor: "alice", Reason: "policy misfire"})
		if err != nil {
			t.Fatal(err)
		}
		completeRun(t, db, mug, 2)
		second := deliver(mug, 2, webhooks.EventJobCompleted, 204)
		third := deliver("", 0, webhooks.EventOrderCompleted, 204)

		v, err := s.Support.ShowOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		link := func(id string) string {
			return "http://localhost:8233/namespaces/default/workflows/" + strings.ReplaceAll(id, "/", "%2F")
		}
		sum := v.Order
		if sum.OrderID != o.ID || sum.Status != status.OrderCompleted || sum.JobsTotal != 2 || sum.JobsCompleted != 1 || sum.JobsFailed != 1 ||
			sum.Credits != (engine.SupportCredits{Reserved: 3, Consumed: 1, Released: 2, Held: 0}) ||
			sum.WorkflowID != "order/"+o.ID || sum.TemporalUIURL != link("order/"+o.ID) || sum.CompletedAt == nil {
			t.Fatalf("order = %+v", sum)
		}
		if len(v.Jobs) != 2 || v.Jobs[0].JobID != mug || v.Jobs[1].JobID != vase {
			t.Fatalf("jobs = %+v", v.Jobs)
		}
		m, vs := v.Jobs[0], v.Jobs[1]
		if m.Run != 2 || m.Status != status.JobCompleted || m.WorkflowID != "job/"+mug+"/run-2" || m.TemporalUIURL != link("job/"+mug+"/run-2") ||
			len(m.EarlierRuns) != 1 || m.EarlierRuns[0] != (engine.SupportRunLink{Run: 1, WorkflowID: "job/" + mug, TemporalUIURL: link("job/" + mug)}) ||
			m.RunStartedAt == nil || m.CompletedAt == nil || m.ErrorCategory != nil {
			t.Fatalf("retried job = %+v", m)
		}
		if vs.Run != 1 || vs.Status != status.JobFailed || vs.ErrorCategory == nil || *vs.ErrorCategory != "INPUT_MISSING" ||
			vs.ErrorHint == nil || vs.ErrorDetail != "raw provider message for "+vase || vs.WorkflowID != "job/"+vase || len(vs.EarlierRuns) != 0 {
			t.Fatalf("failed job = %+v", vs)
		}
		kinds := []string{}
		for _, e := range v.Ledger {
			if e.JobID != nil && *e.JobID == mug {
				kinds = append(kinds, e.Kind+"/"+string(rune('0'+e.Run)))
			}
		}
		if !slices.Equal(kinds, []string{"reserve/1", "release/1", "reserve/2", "consume/2"}) || len(v.Ledger) != 6 {
			t.Fatalf("ledger = %+v (mug: %v)", v.Ledger, kinds)
		}
		if len(v.Deliveries) != 3 || v.Deliveries[0].DeliveryID != first || v.Deliveries[1].DeliveryID != second || first == second ||
			v.Deliveries[2].DeliveryID != third {
			t.Fatalf("deliveries = %+v", v.Deliveries)
		}
		d1, d2 := v.Deliveries[0], v.Deliveries[1]
		if d1.JobID == nil || *d1.JobID != mug || v.Deliveries[2].JobID != nil {
			t.Fatalf("the deliveries' jobs: %v, %v (want the mug, and null for the order's event)", d1.JobID, v.Deliveries[2].JobID)
		}
		if d1.Run != 1 || d1.Event != webhooks.EventJobFailed || d1.Status != models.WebhookDelivered || d1.Attempts != 2 ||
			len(d1.AttemptLog) != 2 || *d1.AttemptLog[0].StatusCode != 503 || d1.AttemptLog[0].Error != "HTTP 503" ||
			d1.AttemptLog[0].LatencyMS != 42 || *d1.AttemptLog[1].StatusCode != 204 ||
			d1.WorkflowID != "webhook/"+first || d1.TemporalUIURL != link("webhook/"+first) {
			t.Fatalf("first delivery = %+v", d1)
		}
		if d2.Run != 2 || d2.Event != webhooks.EventJobCompleted || len(d2.AttemptLog) != 1 {
			t.Fatalf("second delivery = %+v", d2)
		}
		if len(v.Retries) != 1 || v.Retries[0] != (engine.SupportRetryRow{ID: res.AuditID, JobID: mug, Action: models.JobRetryActionRetry, FromRun: 1, ToRun: 2, Actor: "alice",
			Reason: "policy misfire", CreatedAt: v.Retries[0].CreatedAt}) {
			t.Fatalf("retries = %+v", v.Retries)
		}

		if _, err := s.Support.ShowOrder(ctx, models.NewID()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown order: %v", err)
		}
	})
}

func TestSupportReplayWebhook(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		tn := newSupportTenant(t, db, 1)
		o, jobs := submitOrder(t, newSupportEngine(db, tc), tn, 1, "cup")
		failRun(t, db, jobs[0].ID, 1, errorcat.ContentPolicy)
		var ep models.WebhookEndpoint // the tenant's one, at its callback URL
		if err := db.Where("installation_id = ?", tn.installationID).Take(&ep).Error; err != nil {
			t.Fatal(err)
		}
		id := models.WebhookDeliveryID(jobs[0].ID, 1, webhooks.EventJobFailed)
		if _, err := models.CreateWebhookDelivery(db, &models.WebhookDelivery{ID: id, AccountID: tn.accountID, InstallationID: &tn.installationID,
			OrderID: &o.ID, JobID: &jobs[0].ID, Run: 1, Event: webhooks.EventJobFailed, Payload: models.JSON(`{}`), CallbackURL: ep.URL,
			EndpointID: &ep.ID}); err != nil {
			t.Fatal(err)
		}

		res, err := newSupportEngine(db, tc).Support.ReplayWebhook(ctx, id)
		if err != nil || res != (engine.SupportReplayResult{DeliveryID: id, WorkflowID: "webhook/" + id,
			TemporalUIURL: "http://localhost:8233/namespaces/default/workflows/webhook%2F" + id, Status: "queued"}) {
			t.Fatalf("replay = %+v, %v", res, err)
		}
		starts := tc.startsOf("webhook/" + id)
		if len(starts) != 1 {
			t.Fatalf("starts = %+v", tc.starts)
		}
		st := starts[0]
		if st.opts.TaskQueue != "support-test" || st.opts.WorkflowIDReusePolicy != enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE ||
			st.opts.WorkflowIDConflictPolicy != enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING ||
			st.args[0] != (workflows.WebhookDeliveryInput{DeliveryID: id, Replay: true}) ||
			reflect.ValueOf(st.workflow).Pointer() != reflect.ValueOf(workflows.WebhookDeliveryWorkflow).Pointer() {
			t.Fatalf("replay start = %+v %+v", st.opts, st.args)
		}

		n := tc.count()
		if _, err := newSupportEngine(db, tc).Support.ReplayWebhook(ctx, models.NewID()); !errors.Is(err, models.ErrNotFound) || tc.count() != n {
			t.Fatalf("unknown delivery: %v", err)
		}
		down := &recordingTemporal{err: errors.New("unavailable")}
		_, err = newSupportEngine(db, down).Support.ReplayWebhook(ctx, id)
		if e, ok := engine.As(err); !ok || e.Kind != engine.KindUnavailable || !errors.Is(err, down.err) {
			t.Fatalf("replay with Temporal down: %v", err)
		}
	})
}

// A fashion-model idea job that failed and is run again by support settles its record with the
// new run: the retry puts the record back in progress, and the completed run makes it DONE with
// its thumbnail (it stayed FAILED, charged and unusable, before).
func TestRetriedIdeaJobSettlesItsRecordWithTheNewRun(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		acc, err := models.CreateAccount(db, "ideas", 10)
		if err != nil {
			t.Fatal(err)
		}
		order := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal,
			JobType: jobtype.ModelIdea, SessionConfig: models.JSON(`{}`)}
		job := models.Job{ID: models.NewID(), AccountID: acc.ID, JobType: jobtype.ModelIdea, AIModel: "sim/ok",
			AspectRatio: "1:1", CreditCost: 1, Status: status.JobPending, Voting: models.VotingPending}
		item := models.ReferenceItem{ID: models.NewID(), AccountID: &acc.ID, Name: "idea", Preferences: "p",
			Status: models.RefStatusInProgress, OrderID: &order.ID, JobID: &job.ID}
		job.RecordID = &item.ID
		if err := s.Orders.SubmitWith(ctx, &order, []models.Job{job}, func(tx *models.Store) error {
			return tx.CreateReferenceItems(ctx, models.KindFashionModel, []models.ReferenceItem{item})
		}); err != nil {
			t.Fatal(err)
		}
		failRun(t, db, job.ID, 1, errorcat.TransientInfra)
		if _, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: job.ID, Actor: "alice"}); err != nil {
			t.Fatal(err)
		}
		if err := models.BeginAttempt(db, job.ID, 2, 1); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		out := models.Asset{ID: models.OutputAssetID(job.ID, 2, 0), AccountID: acc.ID, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: "image/png", SizeBytes: 4, BlobKey: "outputs/x.png", Width: 2, Height: 2,
			CreatedAt: now, UpdatedAt: now}
		if _, ok, err := models.CompleteJobRun(db, job.ID, 2, []models.Asset{out}); err != nil || !ok {
			t.Fatalf("complete run 2: %v %v", ok, err)
		}
		if j := loadJob(t, db, job.ID); j.Status != status.JobCompleted {
			t.Fatalf("job = %s", j.Status)
		}
		var row models.ReferenceItem
		if err := db.Table(models.KindFashionModel.Table()).Take(&row, "id = ?", item.ID).Error; err != nil {
			t.Fatal(err)
		}
		if row.Status != models.RefStatusDone || row.ThumbnailAssetID == nil {
			t.Fatalf("job completed on run 2, but its fashion model is %s (thumbnail %v)", row.Status, row.ThumbnailAssetID)
		}
	})
}

// The alerts a retried run's reservation crosses are recorded by the retry itself, as an order's
// are by its acceptance, not left to the outbox sweep.
func TestRetryJobRecordsTheAlertsItsReservationCrosses(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		tn := newSupportTenant(t, db, 10)
		_, jobs := submitOrder(t, s, tn, 2, "policy")
		failRun(t, db, jobs[0].ID, 1, errorcat.ContentPolicy) // released: 10 available again
		threshold := int64(9)
		if _, err := s.Alerts.SetLowBalanceThreshold(ctx, engine.SpendScope{InstallationID: tn.installationID}, &threshold); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: jobs[0].ID, Actor: "alice"}); err != nil {
			t.Fatal(err)
		}
		var pending, recorded int64
		db.Model(&models.PendingAlert{}).Where("account_id = ?", tn.accountID).Count(&pending)
		db.Model(&models.WebhookEvent{}).Where("account_id = ? AND type = ?", tn.accountID, models.AlertCreditsLow).Count(&recorded)
		if pending != 0 || recorded != 1 {
			t.Fatalf("after the retry: %d alerts queued, %d credits.low recorded; want 0 and 1", pending, recorded)
		}
	})
}

// A support re-run of a test twin's job is a test job of the day like any other: it counts against
// the twin's test quota (docs/test-mode.md, "Quota"), is refused with nothing changed when the day's
// jobs are spent, and on a new UTC day starts that day first (the balance refilled, the count reset).
func TestRetryOfATestJobCountsAgainstTheTestQuota(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		tn := newTestSupportTenant(t, db, models.TestDailyCredits)
		_, jobs := submitOrder(t, s, tn, 2, "a", "b")
		a, b := jobs[0].ID, jobs[1].ID
		failRun(t, db, a, 1, errorcat.ProviderCapacity)
		failRun(t, db, b, 1, errorcat.ProviderCapacity)
		jobsToday := func() int {
			t.Helper()
			acc, err := models.GetAccount(db, tn.accountID)
			if err != nil {
				t.Fatal(err)
			}
			return acc.TestJobsToday
		}
		if n := jobsToday(); n != 2 {
			t.Fatalf("the order counted %d jobs, want 2", n)
		}

		// The day's jobs spent: the re-run is refused, saying why and until when, and nothing changes.
		testdb.MustExec(t, db, "UPDATE accounts SET test_jobs_today = ? WHERE id = ?", models.TestDailyJobs, tn.accountID)
		before := accountSnapshot(t, db, tn.accountID)
		_, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: a, Actor: "alice"})
		if !errors.Is(err, models.ErrTestQuotaExceeded) || !strings.Contains(err.Error(), "midnight UTC") {
			t.Fatalf("re-run past the test quota = %v, want %v saying when it resets", err, models.ErrTestQuotaExceeded)
		}
		if after := accountSnapshot(t, db, tn.accountID); after != before {
			t.Fatalf("a refused re-run changed the database:\nbefore %s\nafter  %s", before, after)
		}

		// One job left: the re-run takes it.
		testdb.MustExec(t, db, "UPDATE accounts SET test_jobs_today = ? WHERE id = ?", models.TestDailyJobs-1, tn.accountID)
		if res, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: a, Actor: "alice"}); err != nil || res.Run != 2 {
			t.Fatalf("re-run with one job left = %+v, %v", res, err)
		}
		if n := jobsToday(); n != models.TestDailyJobs {
			t.Fatalf("after the re-run the day counts %d jobs, want %d", n, models.TestDailyJobs)
		}

		// The next UTC day: the re-run starts the day (the day's credits, the count reset) and is its
		// first job.
		now := time.Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		tomorrow := engine.New(engine.Config{Store: models.NewStore(db), Temporal: &recordingTemporal{}, TaskQueue: "support-test",
			Log: zap.NewNop(), JobOptions: supportJobOptions, TemporalUI: supportUI, Now: func() time.Time { return midnight }})
		if res, err := tomorrow.Support.RetryJob(ctx, engine.RetryRequest{JobID: b, Actor: "alice"}); err != nil || res.Run != 2 {
			t.Fatalf("re-run on the next day = %+v, %v", res, err)
		}
		acc, err := models.GetAccount(db, tn.accountID)
		if err != nil {
			t.Fatal(err)
		}
		if acc.TestDay != models.TestDay(midnight) || acc.TestJobsToday != 1 {
			t.Fatalf("the next day's re-run left test_day %s with %d jobs; want %s with 1", acc.TestDay, acc.TestJobsToday, models.TestDay(midnight))
		}
		// The day's credits less the run's 2; job a's run 2 still holds its 2.
		assertAccountCredits(t, db, tn.accountID, models.TestDailyCredits-2, 4)
	})
}

// A test job's re-run refused for its twin's short balance names the remedies test mode has (the
// client's PUT …/test/credits, the day's refill at midnight UTC), not `credits grant`, which refuses
// a test twin.
func TestRetryOfATestJobShortOfTestCreditsSaysHowToGetThem(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		tn := newTestSupportTenant(t, db, models.TestDailyCredits)
		_, jobs := submitOrder(t, s, tn, 2, "a")
		failRun(t, db, jobs[0].ID, 1, errorcat.ProviderAccount)
		if _, err := models.NewStore(db).SetTestCredits(ctx, tn.accountID, 1, time.Now()); err != nil {
			t.Fatal(err)
		}
		before := accountSnapshot(t, db, tn.accountID)
		_, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: jobs[0].ID, Actor: "alice"})
		if !errors.Is(err, models.ErrInsufficientCredits) {
			t.Fatalf("re-run with 1 test credit = %v, want %v", err, models.ErrInsufficientCredits)
		}
		msg := err.Error()
		if strings.Contains(msg, "credits grant") || !strings.Contains(msg, "/test/credits") || !strings.Contains(msg, "midnight UTC") {
			t.Fatalf("message %q should name PUT …/test/credits and the refill at midnight UTC, not credits grant", msg)
		}
		if after := accountSnapshot(t, db, tn.accountID); after != before {
			t.Fatalf("a refused re-run changed the database:\nbefore %s\nafter  %s", before, after)
		}
		// What the live message offered is refused for a twin.
		if _, err := s.Accounts.GrantCredits(ctx, tn.accountID, 10); err == nil {
			t.Fatal("credits grant added credits to a test twin")
		}
	})
}
