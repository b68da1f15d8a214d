package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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

// admin runs `shotflow admin args…` with the environment's configuration and decodes its JSON
// answer into out; it returns the exit error and what the command printed.
func admin(t *testing.T, env *testenv.Env, out any, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), append([]string{"admin"}, args...)...)
	cmd.Env = append(append(os.Environ(), env.Config.Environ()...), "USER=support-e2e")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil && out != nil {
		if jerr := json.Unmarshal([]byte(stdout.String()), out); jerr != nil {
			t.Fatalf("admin %v: %v\n%s", args, jerr, stdout.String())
		}
	}
	return stdout.String() + stderr.String(), err
}

// TestSupportFindsAndRedrivesStrandedJobs strands jobs the way an outage did before workflows
// waited for their database: job workflows that closed while their rows are in progress, and a
// job never launched whose order workflow closed. The worker's sweeper reports them, `admin jobs
// stragglers` lists exactly them, and `admin jobs redrive` settles or re-runs each, audited; a job
// a workflow still runs is refused. Every job then ends, credits settle and webhooks go out.
func TestSupportFindsAndRedrivesStrandedJobs(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true, Configure: func(c *config.Config) {
		c.SimProvider = true
		c.OrderMaxConcurrentJobs = 3
		c.WebhookAllowPrivateNetworks = true
	}})
	worker := env.StartWorkerProcess(t, "STRAGGLER_SWEEP_INTERVAL=1s", "STRAGGLER_AGE=0s")
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "lamp", packshotPNG(t))
	// Each job generates for 12 s: the order must be stopped (below) before the first of them
	// ends, or it launches the fourth job, which then is no straggler. 6 s was too short on a
	// loaded machine.
	session := startSlowSession(t, api, "lamp", 4, 12*time.Second)
	ids := session.Subjects[0].JobIDs
	settled, rerun, healthy, queued := ids[0], ids[1], ids[2], ids[3]
	testenv.Eventually(t, 60*time.Second, "three jobs to be generating", func() bool {
		return generating(t, env, ids[:3]) == 3
	})
	ctx := context.Background()
	// The order first: from then on nothing launches the queued job.
	for _, id := range []string{workflows.OrderWorkflowID(session.OrderID), workflows.JobWorkflowID(settled, 1), workflows.JobWorkflowID(rerun, 1)} {
		if err := env.App.Temporal.TerminateWorkflow(ctx, id, "", "stranded by the test"); err != nil {
			t.Fatal(err)
		}
	}

	var list engine.StragglerList
	if out, err := admin(t, env, &list, "jobs", "stragglers", "--older-than", "0s"); err != nil {
		t.Fatalf("jobs stragglers: %v\n%s", err, out)
	}
	found := map[string]string{}
	for _, s := range list.Jobs {
		found[s.JobID] = s.Why
	}
	if len(found) != 3 || !strings.Contains(found[settled], "Terminated") || !strings.Contains(found[rerun], "Terminated") ||
		!strings.Contains(found[queued], "never launched") {
		t.Fatalf("stragglers = %+v; want %s and %s (workflow terminated) and %s (never launched)", list.Jobs, settled, rerun, queued)
	}
	testenv.Eventually(t, 20*time.Second, "the worker to report the stranded jobs", func() bool {
		out := worker.Output()
		return strings.Contains(out, "stranded job") && strings.Contains(out, settled) && strings.Contains(out, queued)
	})

	// A job a workflow still runs needs no re-drive.
	if out, err := admin(t, env, nil, "jobs", "redrive", healthy, "--action", "settle"); err == nil || !strings.Contains(out, "not stranded") {
		t.Fatalf("redrive of a running job: %v\n%s", err, out)
	}

	var res engine.RedriveResult
	for _, id := range []string{settled, queued} {
		if out, err := admin(t, env, &res, "jobs", "redrive", id, "--action", "settle", "--reason", "outage"); err != nil {
			t.Fatalf("redrive settle %s: %v\n%s", id, err, out)
		}
		if res.SettledRun != 1 || res.AuditID == "" || res.NotifyError != "" || res.WebhookDeliveryID == "" {
			t.Fatalf("settle %s = %+v", id, res)
		}
	}
	if out, err := admin(t, env, &res, "jobs", "redrive", rerun, "--action", "rerun", "--reason", "outage"); err != nil {
		t.Fatalf("redrive rerun: %v\n%s", err, out)
	}
	if res.Rerun == nil || res.Rerun.Run != 2 || !res.Rerun.WorkflowStarted {
		t.Fatalf("rerun = %+v", res)
	}
	// Once settled, a job is no straggler any more.
	if out, err := admin(t, env, nil, "jobs", "redrive", settled, "--action", "settle"); err == nil || !strings.Contains(out, "not stranded") {
		t.Fatalf("second redrive: %v\n%s", err, out)
	}

	jobs := waitTerminal(t, api, ids)
	for _, id := range []string{settled, queued} {
		if j := jobs[id]; j.Status != status.JobFailed || j.ErrorCategory == nil || *j.ErrorCategory != string(errorcat.InternalBug) {
			t.Errorf("settled job %s: %+v", id, j)
		}
		expectNotified(t, env, receiver, secret, id, webhooks.EventJobFailed, status.JobFailed)
	}
	for _, id := range []string{rerun, healthy} {
		if j := jobs[id]; j.Status != status.JobCompleted {
			t.Errorf("job %s: %s", id, j.Status)
		}
	}
	waitOrderStatus(t, env, session.OrderID, status.OrderCompleted, 30*time.Second)
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	var audit []models.JobRetry
	env.DB.Where("order_id = ?", session.OrderID).Order("created_at").Find(&audit)
	actions := map[string][]string{}
	for _, r := range audit {
		if r.Actor != "support-e2e" || r.Reason == "" {
			t.Errorf("audit row %+v", r)
		}
		actions[r.JobID] = append(actions[r.JobID], r.Action)
	}
	if strings.Join(actions[settled], ",") != "settle" || strings.Join(actions[queued], ",") != "settle" ||
		strings.Join(actions[rerun], ",") != "settle,retry" || len(actions) != 3 {
		t.Fatalf("audit trail: %v", actions)
	}
}
