package e2e_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// Operators tell test traffic from live: a live key's and a test key's sessions run on the real
// workflows, whose order and job workflows carry ShotflowLivemode (true, false), and the job
// metrics count each under its livemode label.
func TestLivemodeInTemporalAndMetrics(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.SimProvider = true }})
	tenant := env.NewTenant(t, 50)
	testKey, err := env.App.Engine.Accounts.IssueTestPluginKey(context.Background(), env.App.Box, tenant.InstallationID, "e2e", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	test := &client{t: t, base: env.BaseURL + plugin.Base, key: testKey.APIKey}
	registerPackshot(t, env, live, "vase", packshotPNG(t))
	registerPackshot(t, env, test, "vase", packshotPNG(t))
	apiURL, workerURL := env.BaseURL+"/metrics", env.WorkerMetricsURL+"/metrics"
	apiBefore, workerBefore := metricstest.Get(t, apiURL), metricstest.Get(t, workerURL)

	liveSession := startSession(t, live, "vase", "sim/ok", 1)
	testSession := startSession(t, test, "vase", "sim/ok", 2)
	for api, session := range map[*client]plugin.SessionResponse{live: liveSession, test: testSession} {
		for id, job := range waitTerminal(t, api, session.Subjects[0].JobIDs) {
			if job.Status != status.JobCompleted {
				t.Fatalf("job %s is %s", id, job.Status)
			}
		}
	}

	tc := env.App.Temporal
	ctx := context.Background()
	livemodeOf := func(workflowID string) (bool, bool) {
		t.Helper()
		d, err := tc.DescribeWorkflowExecution(ctx, workflowID, "")
		if err != nil {
			t.Fatalf("describe %s: %v", workflowID, err)
		}
		p, ok := d.WorkflowExecutionInfo.GetSearchAttributes().GetIndexedFields()["ShotflowLivemode"]
		if !ok {
			return false, false
		}
		var v bool
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			t.Fatalf("ShotflowLivemode of %s: %v", workflowID, err)
		}
		return v, true
	}
	for want, session := range map[bool]plugin.SessionResponse{true: liveSession, false: testSession} {
		ids := []string{workflows.OrderWorkflowID(session.OrderID)}
		for _, j := range session.Subjects[0].JobIDs {
			ids = append(ids, workflows.JobWorkflowID(j, 1))
		}
		for _, id := range ids {
			if got, ok := livemodeOf(id); !ok || got != want {
				t.Errorf("%s: ShotflowLivemode = %v (set %v), want %v", id, got, ok, want)
			}
		}
	}
	// The Temporal UI's query finds the test key's jobs alone.
	query := `WorkflowType = "JobWorkflow" AND ShotflowLivemode = false AND ShotflowInstallationID = "` + testKey.InstallationID + `"`
	testenv.Eventually(t, 20*time.Second, "the visibility query to list the test jobs", func() bool {
		n, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		return err == nil && n.GetCount() == int64(len(testSession.Subjects[0].JobIDs))
	})

	photo := func(live string) map[string]string {
		return map[string]string{"api": "plugin", "job_type": jobtype.PhotoShoot, "livemode": live}
	}
	expectDeltas(t, apiURL, apiBefore, []delta{
		{metrics.OrdersAccepted, photo(metrics.Live), 1},
		{metrics.OrdersAccepted, photo(metrics.Test), 1},
		{metrics.JobsAccepted, photo(metrics.Live), 1},
		{metrics.JobsAccepted, photo(metrics.Test), 2},
		{metrics.CreditsReserved, photo(metrics.Live), float64(liveSession.CreditsReserved)},
		{metrics.CreditsReserved, photo(metrics.Test), float64(testSession.CreditsReserved)},
	})
	done := func(live string) map[string]string {
		return map[string]string{"status": status.JobCompleted, "livemode": live}
	}
	expectDeltas(t, workerURL, workerBefore, []delta{
		{metrics.JobsFinished, done(metrics.Live), 1},
		{metrics.JobsFinished, done(metrics.Test), 2},
		{metrics.GenerateAttempts, map[string]string{"livemode": metrics.Live}, 1},
		{metrics.GenerateAttempts, map[string]string{"livemode": metrics.Test}, 2},
	})
}
