package e2e_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// delta is how far one sample (a counter, or a histogram's count) must move.
type delta struct {
	name   string
	labels map[string]string
	want   float64
}

func (d delta) String() string {
	keys := make([]string, 0, len(d.labels))
	for k := range d.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + d.labels[k]
	}
	return d.name + "{" + strings.Join(parts, ",") + "}"
}

// expectDeltas scrapes url until every sample has moved by exactly its want since before (a
// counter is bumped just after the row it counts commits, so the last ones may lag the API by
// moments), and fails naming every sample that did not.
func expectDeltas(t *testing.T, url string, before metricstest.Snapshot, deltas []delta) metricstest.Snapshot {
	t.Helper()
	var after metricstest.Snapshot
	var wrong []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		after = metricstest.Get(t, url)
		wrong = wrong[:0]
		for _, d := range deltas {
			if got := after.Value(d.name, d.labels) - before.Value(d.name, d.labels); got != d.want {
				wrong = append(wrong, fmt.Sprintf("%s moved by %v, want %v", d, got, d.want))
			}
		}
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, w := range wrong {
		t.Error(w)
	}
	return after
}

// TestMetricsCountARealOrder runs plugin sessions (one job refused for content policy, two that
// succeed on their second attempt) and an external generation request through the real API and
// worker, with webhooks to a receiver, and checks that both /metrics moved by exactly what
// happened: requests per route, orders, jobs and credits per API and job type; jobs finished by
// status and category, generate attempts by provider and outcome, webhook deliveries; and that the
// worker exports the Temporal SDK's metrics.
func TestMetricsCountARealOrder(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.WebhookAllowPrivateNetworks = true
	}, Engine: func(c *engine.Config) {
		c.JobOptions.Retry = workflows.RetrySchedule{Delays: []time.Duration{300 * time.Millisecond}, MaxAttempts: 4, MaxTotal: time.Minute}
	}})
	tenant := env.NewTenant(t, 50)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, _ := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	apiURL, workerURL := env.BaseURL+"/metrics", env.WorkerMetricsURL+"/metrics"
	apiBefore, workerBefore := metricstest.Get(t, apiURL), metricstest.Get(t, workerURL)

	refused := startSession(t, api, "vase", "sim/content-policy", 1)
	retried := startSession(t, api, "vase", "sim/transient-once", 2)
	ext := externalClient(t, env, tenant)
	idea := register(t, ext, "/sceneries/register-ideas", map[string]any{"preferences": "warm oak table, morning light", "count": 1})

	jobIDs := append(refused.Subjects[0].JobIDs, retried.Subjects[0].JobIDs...)
	for id, job := range waitTerminal(t, api, jobIDs) {
		want := status.JobCompleted
		if id == refused.Subjects[0].JobIDs[0] {
			want = status.JobFailed
		}
		if job.Status != want {
			t.Fatalf("job %s is %s, want %s", id, job.Status, want)
		}
	}
	if d := waitOrder(t, env, ext, idea.OrderID); d.Status != status.OrderCompleted {
		t.Fatalf("the external order is %s, want completed", d.Status)
	}
	for _, id := range jobIDs {
		event := "job.completed"
		if id == refused.Subjects[0].JobIDs[0] {
			event = "job.failed"
		}
		receiver.waitHooks(t, models.WebhookDeliveryID(id, 1, event), 1, time.Minute)
	}

	plugin2 := map[string]string{"api": models.APIPlugin, "job_type": jobtype.PhotoShoot, "livemode": metrics.Live}
	ext1 := map[string]string{"api": models.APIExternal, "job_type": jobtype.SceneryIdea, "livemode": metrics.Live}
	route := func(method, path, status string) map[string]string {
		l := map[string]string{"route": path, "method": method}
		if status != "" {
			l["status"] = status
		}
		return l
	}
	expectDeltas(t, apiURL, apiBefore, []delta{
		{metrics.OrdersAccepted, plugin2, 2},
		{metrics.OrdersAccepted, ext1, 1},
		{metrics.OrdersAccepted, nil, 3},
		{metrics.JobsAccepted, plugin2, 3},
		{metrics.JobsAccepted, ext1, 1},
		{metrics.CreditsReserved, plugin2, float64(refused.CreditsReserved + retried.CreditsReserved)},
		{metrics.CreditsReserved, ext1, float64(idea.CreditsReserved)},
		{metrics.HTTPRequests, route(http.MethodPost, plugin.Base+"/jobs", "2xx"), 2},
		{metrics.HTTPRequests, route(http.MethodPost, external.Base+"/sceneries/register-ideas", "2xx"), 1},
		{metrics.HTTPRequestDuration, route(http.MethodPost, plugin.Base+"/jobs", ""), 2},
		{metrics.HTTPRequestDuration, route(http.MethodPost, external.Base+"/sceneries/register-ideas", ""), 1},
	})
	if refused.CreditsReserved <= 0 || idea.CreditsReserved <= 0 {
		t.Errorf("credits reserved %d and %d: the test needs orders that cost something", refused.CreditsReserved, idea.CreditsReserved)
	}

	sim := func(outcome string) map[string]string {
		return map[string]string{"provider": "sim", "outcome": outcome}
	}
	workerAfter := expectDeltas(t, workerURL, workerBefore, []delta{
		{metrics.JobsFinished, map[string]string{"status": status.JobFailed, "error_category": string(errorcat.ContentPolicy), "livemode": metrics.Live}, 1},
		{metrics.JobsFinished, map[string]string{"status": status.JobCompleted, "error_category": metrics.NoCategory, "livemode": metrics.Live}, 3},
		{metrics.JobsFinished, nil, 4},
		{metrics.GenerateAttempts, sim(string(errorcat.ContentPolicy)), 1},
		{metrics.GenerateAttempts, sim(string(errorcat.TransientInfra)), 2},
		{metrics.GenerateAttempts, sim(metrics.OutcomeOK), 2},
		{metrics.GenerateAttempts, map[string]string{"provider": "local", "outcome": metrics.OutcomeOK}, 1},
		{metrics.GenerateAttempts, nil, 6},
		{metrics.GenerateDuration, map[string]string{"provider": "sim"}, 5},
		{metrics.GenerateDuration, map[string]string{"provider": "local"}, 1},
		{metrics.WebhookDeliveries, map[string]string{"outcome": metrics.WebhookDelivered}, 3},
		{metrics.WebhookDeliveries, nil, 3},
		{metrics.WebhookDeliveryDuration, map[string]string{"outcome": metrics.WebhookDelivered}, 3},
	})
	for _, name := range metrics.TemporalSDKMetrics {
		if workerAfter[name] == nil {
			t.Errorf("the worker's /metrics lacks the Temporal SDK's %s", name)
		}
	}
	for _, name := range []string{"temporal_activity_schedule_to_start_latency_seconds", "temporal_workflow_task_schedule_to_start_latency_seconds"} {
		if workerAfter.Value(name, map[string]string{"task_queue": env.Config.TemporalTaskQueue}) == 0 {
			t.Errorf("%s has no observation on the task queue %s", name, env.Config.TemporalTaskQueue)
		}
	}
	for name := range workerAfter {
		if !strings.HasPrefix(name, "shotflow_") && !strings.HasPrefix(name, "temporal_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("the worker's /metrics has %s, outside the shotflow_, temporal_, go_ and process_ families", name)
		}
	}
}

// TestWorkerHealthFollowsThePolling: the worker's /healthz answers 503 before the worker starts,
// 200 while it polls and 503 once it has stopped, while its /metrics keeps answering.
func TestWorkerHealthFollowsThePolling(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true})
	healthz := env.WorkerMetricsURL + "/healthz"
	status := func() int {
		resp, err := http.Get(healthz)
		if err != nil {
			t.Fatalf("GET %s: %v", healthz, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != http.StatusServiceUnavailable {
		t.Fatalf("/healthz before the worker starts = %d, want 503", got)
	}
	env.StartWorker()
	testenv.Eventually(t, 30*time.Second, "/healthz to answer 200 while the worker polls", func() bool { return status() == http.StatusOK })
	env.StopWorker()
	if got := status(); got != http.StatusServiceUnavailable {
		t.Fatalf("/healthz after the worker stopped = %d, want 503", got)
	}
	if s := metricstest.Get(t, env.WorkerMetricsURL+"/metrics"); s["temporal_num_pollers"] == nil {
		t.Error("the stopped worker's /metrics lacks the SDK's poller gauge")
	}
}

// TestOutboxSweepCountsTheOrdersItStarts: an order whose start was lost is started by the worker's
// sweep loop, which counts it once.
func TestOutboxSweepCountsTheOrdersItStarts(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OutboxSweepInterval, c.OutboxStartAfter = 200*time.Millisecond, time.Second
	}})
	tenant := env.NewTenant(t, 5)
	workerURL := env.WorkerMetricsURL + "/metrics"
	before := metricstest.Get(t, workerURL)

	crashedURL, crashing := lostStartsAPI(t, env)
	// The request is refused until the worker's generate queue has a poller; in parallel runs the
	// worker may still be starting.
	testenv.Eventually(t, 30*time.Second, "the local generator to poll", func() bool {
		live, _ := crashing.Generation.GeneratorLive(t.Context(), "local")
		return live
	})
	ext := externalClient(t, env, tenant)
	ext.base = crashedURL + external.Base
	idea := register(t, ext, "/models/register-ideas", map[string]any{"preferences": "tall woman, linen dress", "count": 1})
	testenv.Eventually(t, 30*time.Second, "the sweep to start the order", func() bool {
		var o models.Order
		return env.DB.Take(&o, "id = ?", idea.OrderID).Error == nil && o.WorkflowStartedAt != nil
	})
	expectDeltas(t, workerURL, before, []delta{{metrics.OutboxStarted, map[string]string{"kind": metrics.OutboxOrder}, 1}})
}
