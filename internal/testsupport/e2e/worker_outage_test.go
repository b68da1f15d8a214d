package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/faultproxy"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// outageLength is how long the worker's database is cut: longer than every timeout on the way (a
// projection try, 10 s; a burst of tries, 30 s; one dependency call of an activity, 10 s; the
// generate heartbeat, 20 s), so each of them expires at least once during the outage.
const outageLength = 45 * time.Second

// TestWorkerDatabaseOutageStrandsNothing cuts the worker process's PostgreSQL through a TCP proxy,
// refusing connections or black-holing them, while the API keeps its own. Jobs are generating,
// waiting to start and queued in their orders when it happens; a queued job is cancelled during
// the outage. Once the database is back every job ends, completed with one attempt or cancelled,
// every order ends, credits are settled exactly once and every terminal job is notified.
func TestWorkerDatabaseOutageStrandsNothing(t *testing.T) {
	t.Parallel()
	long(t)
	for _, mode := range []faultproxy.Mode{faultproxy.Refuse, faultproxy.Blackhole} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			databaseOutage(t, mode)
		})
	}
}

func databaseOutage(t *testing.T, mode faultproxy.Mode) {
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true, Configure: func(c *config.Config) {
		c.SimProvider = true
		c.OrderMaxConcurrentJobs = 2
		c.WebhookAllowPrivateNetworks = true
	}})
	dbURL, err := url.Parse(env.Config.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.Start(dbURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	dbURL.Host = proxy.Addr()
	worker := env.StartWorkerProcess(t, "DATABASE_URL="+dbURL.String())

	tenant := env.NewTenant(t, 100)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "lamp", packshotPNG(t))
	var sessions []plugin.SessionResponse
	var ids []string
	for range 3 {
		s := startSlowSession(t, api, "lamp", 4, 3*time.Second)
		sessions = append(sessions, s)
		ids = append(ids, s.Subjects[0].JobIDs...)
	}
	testenv.Eventually(t, 60*time.Second, "a job to be generating", func() bool {
		return generating(t, env, ids) > 0
	})

	if err := proxy.SetMode(mode); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()

	// A job queued in its order (two run at a time, and none can finish now) is cancelled during
	// the outage: the API's database decides it at once; the worker's needs none of it.
	queued := sessions[0].Subjects[0].JobIDs[3]
	var answer plugin.JobResponse
	expect(t, api.do(http.MethodDelete, "/jobs/"+queued, nil, &answer), http.StatusOK)
	if answer.ID != queued || answer.Status != status.JobCancelled {
		t.Fatalf("cancel answered %+v", answer)
	}

	// Operators see the wait.
	testenv.Eventually(t, outageLength, "workflows to show ShotflowWaitingOn = database", func() bool {
		return len(waitingOn(t, env, tenant.AccountID, "database")) > 0
	})
	if wait := outageLength - time.Since(cut); wait > 0 {
		time.Sleep(wait)
	}
	if err := proxy.SetMode(faultproxy.Forward); err != nil {
		t.Fatal(err)
	}

	jobs := waitTerminal(t, api, ids)
	for id, j := range jobs {
		switch {
		case id == queued:
			if j.Status != status.JobCancelled || j.StartedAt != nil || j.AttemptCount != 0 {
				t.Errorf("cancelled job %s: %s, started %v, %d attempts", id, j.Status, j.StartedAt, j.AttemptCount)
			}
		case j.Status != status.JobCompleted || j.AttemptCount != 1 || len(j.Outputs) != 1:
			// An outage is no attempt: every job completes on its first.
			t.Errorf("job %s after the outage: %s, %d attempts, %d outputs", id, j.Status, j.AttemptCount, len(j.Outputs))
		}
	}
	for _, s := range sessions {
		testenv.Eventually(t, 30*time.Second, "order "+s.OrderID+" to end", func() bool {
			var o models.Order
			return env.DB.Take(&o, "id = ?", s.OrderID).Error == nil && o.Status != status.OrderInProgress
		})
	}
	consumed := countRows(t, env, &models.LedgerEntry{}, "job_id IN ? AND kind = ?", ids, models.LedgerConsume)
	released := countRows(t, env, &models.LedgerEntry{}, "job_id IN ? AND kind = ?", ids, models.LedgerRelease)
	if consumed != int64(len(ids)-1) || released != 1 {
		t.Fatalf("ledger: %d consume and %d release rows for %d jobs, one cancelled", consumed, released, len(ids))
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	for _, id := range ids {
		event, want := webhooks.EventJobCompleted, status.JobCompleted
		if id == queued {
			event, want = webhooks.EventJobCancelled, status.JobCancelled
		}
		expectNotified(t, env, receiver, secret, id, event, want)
	}
	testenv.Eventually(t, 30*time.Second, "ShotflowWaitingOn to be unset everywhere", func() bool {
		return len(waitingOn(t, env, tenant.AccountID, "database")) == 0
	})
	if out := worker.Output(); !strings.Contains(out, "dependency unavailable; waiting for it") {
		t.Errorf("the worker logged no wait for its database:\n%s", out)
	}
}

// waitingOn lists the account's workflows whose ShotflowWaitingOn names the dependency
// (contract.DependencyDatabase or contract.DependencyBlobStore).
func waitingOn(t *testing.T, env *testenv.Env, accountID, dependency string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := env.App.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("%s = %q AND %s = %q", workflows.SAAccountID.GetName(), accountID, workflows.SAWaitingOn.GetName(), dependency),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.Executions {
		out = append(out, e.Execution.WorkflowId)
	}
	return out
}
