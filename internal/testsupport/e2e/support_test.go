package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// failedJob runs a one-job session with sim/content-policy to its end and returns the job, which
// failed with CONTENT_POLICY after one attempt, and its order ID.
func failedJob(t *testing.T, env *testenv.Env, api *client, productRef string) (string, string) {
	t.Helper()
	registerPackshot(t, env, api, productRef, packshotPNG(t))
	session := startSession(t, api, productRef, "sim/content-policy", 1)
	id := session.Subjects[0].JobIDs[0]
	job := waitTerminal(t, api, []string{id})[id]
	if job.Status != status.JobFailed || job.AttemptCount != 1 || job.ErrorCategory == nil || *job.ErrorCategory != string(errorcat.ContentPolicy) {
		t.Fatalf("job = %+v, want failed with CONTENT_POLICY", job)
	}
	waitOrderStatus(t, env, session.OrderID, status.OrderFailed, 10*time.Second)
	return id, session.OrderID
}

// fixCause stands in for whatever support fixed before retrying (a provider account, a content
// rule, a bad model mapping): the sim models' outcome depends only on the model, so pointing the
// job at sim/ok is how the test makes the second run succeed.
func fixCause(t *testing.T, env *testenv.Env, jobID string) {
	t.Helper()
	if err := env.DB.Model(&models.Job{}).Where("id = ?", jobID).Update("ai_model", "sim/ok").Error; err != nil {
		t.Fatal(err)
	}
}

// waitCompleted waits until the job has completed and returns it as the API shows it; a job that
// fails instead fails the test at once.
func waitCompleted(t *testing.T, api *client, jobID string) plugin.JobResponse {
	t.Helper()
	var job plugin.JobResponse
	testenv.Eventually(t, 60*time.Second, "job "+jobID+" to complete", func() bool {
		expect(t, api.do(http.MethodGet, "/jobs/"+jobID, nil, &job), http.StatusOK)
		if job.Status == status.JobFailed {
			t.Fatalf("job failed: %+v", job)
		}
		return job.Status == status.JobCompleted
	})
	return job
}

// TestSupportRetriesAFailedJobAsANewRun: support finds a job that failed with CONTENT_POLICY,
// fixes the cause and runs it again inside its order: a second run with its own reservation,
// workflow, audit row and webhook (a new webhook-id); the order ends completed and balances.
func TestSupportRetriesAFailedJobAsANewRun(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.WebhookAllowPrivateNetworks = true
	}})
	tenant := env.NewTenant(t, 5)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	support := env.App.Engine.Support
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	jobID, orderID := failedJob(t, env, api, "teapot")
	expectNotified(t, env, receiver, secret, jobID, webhooks.EventJobFailed, status.JobFailed)

	// Support finds it the way docs/operations.md shows.
	list, err := support.ListJobs(ctx, engine.SupportJobFilter{Status: status.JobFailed, Category: "CONTENT_POLICY", InstallationID: tenant.InstallationID})
	if err != nil || list.Count != 1 || list.Jobs[0].JobID != jobID || list.Jobs[0].OrderID != orderID {
		t.Fatalf("list = %+v, %v", list, err)
	}

	fixCause(t, env, jobID)
	res, err := support.RetryJob(ctx, engine.RetryRequest{JobID: jobID, Actor: "e2e-support", Reason: "policy rule fixed"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run != 2 || !res.WorkflowStarted || res.WorkflowID != workflows.JobWorkflowID(jobID, 2) || res.CreditsReserved != 1 || res.AuditID == "" ||
		res.TemporalUIURL != env.Config.TemporalUIURL+"/namespaces/default/workflows/"+strings.ReplaceAll(res.WorkflowID, "/", "%2F") {
		t.Fatalf("retry = %+v", res)
	}

	job := waitCompleted(t, api, jobID)
	if job.AttemptCount != 1 || job.ErrorCategory != nil || job.ErrorHint != nil || len(job.Outputs) != 1 || job.StartedAt == nil {
		t.Fatalf("second run = %+v", job)
	}
	o := waitOrderStatus(t, env, orderID, status.OrderCompleted, 10*time.Second)
	if o.JobsCompleted != 1 || o.JobsFailed != 0 || o.CompletedAt == nil || o.CreditsReserved != 2 || o.CreditsConsumed != 1 || o.CreditsReleased != 1 {
		t.Fatalf("order = %+v", o)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	me := credits(t, api)
	if me.Credits.Available != 4 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v, want 4 available (run 1 released, run 2 consumed)", me.Credits)
	}

	// The run's own workflow completed (a moment after the job row: it still sends the webhook and
	// tells the order), with the memo operators see.
	var info *workflowpb.WorkflowExecutionInfo
	testenv.Eventually(t, 20*time.Second, "the run 2 workflow to close", func() bool {
		desc, err := env.App.Temporal.DescribeWorkflowExecution(ctx, res.WorkflowID, "")
		if err != nil {
			t.Fatal(err)
		}
		info = desc.GetWorkflowExecutionInfo()
		return info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	var ref string
	if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED ||
		converter.GetDefaultDataConverter().FromPayload(info.GetMemo().GetFields()["product_ref"], &ref) != nil || ref != "teapot" {
		t.Fatalf("run 2 workflow: status %v, product_ref %q", info.GetStatus(), ref)
	}

	// A second webhook, with a new webhook-id, reports the run's success.
	first := models.WebhookDeliveryID(jobID, 1, webhooks.EventJobFailed)
	second := models.WebhookDeliveryID(jobID, 2, webhooks.EventJobCompleted)
	if first == second {
		t.Fatal("both runs share a delivery ID")
	}
	hooks := receiver.waitHooks(t, second, 1, 60*time.Second)
	p := verify(t, secret, hooks[0])
	if hooks[0].header.Get("webhook-id") != second || p.Event != webhooks.EventJobCompleted || p.ID != jobID ||
		p.Status != status.JobCompleted || len(p.Outputs) != 1 {
		t.Fatalf("run 2 webhook = %s", hooks[0].body)
	}
	if n := len(receiver.got(first)); n != 1 {
		t.Fatalf("run 1 webhook sent %d times, want once", n)
	}
	testenv.Eventually(t, 10*time.Second, "run 2 delivery recorded", func() bool {
		d, err := deliveryOfEvent(t, env, second)
		return err == nil && d.Status == models.WebhookDelivered
	})
	// The receiver keys webhooks by their webhook-id (the event's); support names deliveries.
	firstDelivery, err := deliveryOfEvent(t, env, first)
	if err != nil {
		t.Fatal(err)
	}
	secondDelivery, err := deliveryOfEvent(t, env, second)
	if err != nil {
		t.Fatal(err)
	}

	// The order as support sees it: both runs, both deliveries, the audit row and every link.
	v, err := support.ShowOrder(ctx, orderID)
	if err != nil {
		t.Fatal(err)
	}
	link := func(id string) string {
		return env.Config.TemporalUIURL + "/namespaces/default/workflows/" + strings.ReplaceAll(id, "/", "%2F")
	}
	if v.Order.Status != status.OrderCompleted || v.Order.Credits.Held != 0 || v.Order.TemporalUIURL != link("order/"+orderID) {
		t.Fatalf("order view = %+v", v.Order)
	}
	if len(v.Jobs) != 1 || v.Jobs[0].Run != 2 || v.Jobs[0].Status != status.JobCompleted || v.Jobs[0].TemporalUIURL != link("job/"+jobID+"/run-2") ||
		len(v.Jobs[0].EarlierRuns) != 1 || v.Jobs[0].EarlierRuns[0].TemporalUIURL != link("job/"+jobID) || v.Jobs[0].RunStartedAt == nil {
		t.Fatalf("job view = %+v", v.Jobs)
	}
	if len(v.Deliveries) != 2 || v.Deliveries[0].DeliveryID != firstDelivery.ID || v.Deliveries[0].Run != 1 || v.Deliveries[1].DeliveryID != secondDelivery.ID ||
		v.Deliveries[1].Run != 2 || v.Deliveries[1].TemporalUIURL != link("webhook/"+secondDelivery.ID) {
		t.Fatalf("deliveries = %+v", v.Deliveries)
	}
	for _, d := range v.Deliveries {
		if d.Status != models.WebhookDelivered || len(d.AttemptLog) != 1 || d.AttemptLog[0].StatusCode == nil || *d.AttemptLog[0].StatusCode != 204 {
			t.Fatalf("delivery %s = %+v", d.DeliveryID, d)
		}
	}
	if len(v.Retries) != 1 || v.Retries[0].ID != res.AuditID || v.Retries[0].Actor != "e2e-support" || v.Retries[0].FromRun != 1 || v.Retries[0].ToRun != 2 {
		t.Fatalf("retries = %+v", v.Retries)
	}
	if len(v.Ledger) != 4 {
		t.Fatalf("ledger = %+v, want reserve/release of run 1 and reserve/consume of run 2", v.Ledger)
	}

	// A completed job is not run again.
	if _, err := support.RetryJob(ctx, engine.RetryRequest{JobID: jobID, Actor: "e2e-support"}); !errors.Is(err, engine.ErrNotRetryable) {
		t.Fatalf("retry of a completed job = %v", err)
	}

	// Support can also send the run 2 webhook again: same webhook-id, recorded as a replay.
	replay, err := support.ReplayWebhook(ctx, secondDelivery.ID)
	if err != nil || replay.Status != "queued" || replay.WorkflowID != "webhook/"+secondDelivery.ID {
		t.Fatalf("replay = %+v, %v", replay, err)
	}
	again := receiver.waitHooks(t, second, 2, 30*time.Second)[1]
	if verify(t, secret, again).DeliveryID != second || string(again.body) != string(hooks[0].body) {
		t.Fatalf("replayed webhook = %s", again.body)
	}
	testenv.Eventually(t, 10*time.Second, "the replay recorded", func() bool {
		attempts, err := models.WebhookAttempts(env.DB, secondDelivery.ID)
		return err == nil && len(attempts) == 2 && attempts[1].Replay
	})
}

// TestSweeperStartsAReRunWhoseStartWasLost: the retry commits the new run but its workflow start
// never reaches Temporal (as when the admin process dies right after the commit); the worker's
// sweeper starts it, once, and the run completes.
func TestSweeperStartsAReRunWhoseStartWasLost(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.SimProvider = true }})
	tenant := env.NewTenant(t, 3)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	jobID, orderID := failedJob(t, env, api, "kettle")
	fixCause(t, env, jobID)
	crashing := lostStartsEngine(env)
	res, err := crashing.Support.RetryJob(ctx, engine.RetryRequest{JobID: jobID, Actor: "e2e-support"})
	if err != nil || res.WorkflowStarted || res.StartError == "" || res.Run != 2 {
		t.Fatalf("retry with a lost start = %+v, %v", res, err)
	}
	var notFound *serviceerror.NotFound
	if _, err := env.App.Temporal.DescribeWorkflowExecution(ctx, res.WorkflowID, ""); !errors.As(err, &notFound) {
		t.Fatalf("run 2 has a workflow although its start was lost: %v", err)
	}
	if j, err := models.GetJob(env.DB, jobID); err != nil || j.Run != 2 || j.Status != status.JobPending || j.RunStartedAt != nil {
		t.Fatalf("job after a lost start = %+v, %v", j, err)
	}

	// The sweeper (called directly instead of waiting for its ticker) starts the run exactly once.
	if n, err := env.App.Engine.Outbox.StartPendingRuns(ctx, 0, 10); err != nil || n != 1 {
		t.Fatalf("StartPendingRuns = %d, %v; want 1", n, err)
	}
	if n, err := env.App.Engine.Outbox.StartPendingRuns(ctx, 0, 10); err != nil || n != 0 {
		t.Fatalf("second sweep started %d, %v; want 0", n, err)
	}
	waitCompleted(t, api, jobID)
	waitOrderStatus(t, env, orderID, status.OrderCompleted, 10*time.Second)
	if j, err := models.GetJob(env.DB, jobID); err != nil || j.RunStartedAt == nil {
		t.Fatalf("run_started_at not recorded: %+v, %v", j, err)
	}
	// Starting it once more, as a racing sweeper would, is harmless.
	j, _ := models.GetJob(env.DB, jobID)
	if err := env.App.Engine.Outbox.StartJobRun(ctx, j); err != nil {
		t.Fatalf("starting a finished run again: %v", err)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	acc, err := models.GetAccount(env.DB, tenant.AccountID)
	if err != nil || acc.CreditBalance != 2 || acc.CreditsReserved != 0 {
		t.Fatalf("account = %+v, %v; want 2 available, 0 reserved", acc, err)
	}
}
