package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
)

// sample returns the value of a counter, or the count of a histogram, failing if it is absent.
func sample(t *testing.T, s metricstest.Snapshot, name string, want map[string]string) float64 {
	t.Helper()
	if s[name] == nil {
		t.Fatalf("no family %s", name)
	}
	return s.Value(name, want)
}

func TestTwoProcessesInOneRegisterNothingTwice(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.OrderAccepted("plugin", "photo_shoot", false, 3, 30)
	fa, fb := metricstest.Serve(t, a.APIHandler()), metricstest.Serve(t, b.APIHandler())
	if got := sample(t, fa, metrics.CreditsReserved, map[string]string{"api": "plugin", "job_type": "photo_shoot"}); got != 30 {
		t.Errorf("credits reserved = %v, want 30", got)
	}
	if _, ok := fb[metrics.CreditsReserved]; ok {
		t.Error("the second process's registry shows the first one's order")
	}
	for _, m := range []*metrics.Metrics{a, b} {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEachListenerShowsItsOwnFamilies(t *testing.T) {
	m := metrics.New()
	defer m.Close()
	m.Request("/api/v1/plugin/jobs/:id", http.MethodGet, http.StatusNotFound, 20*time.Millisecond)
	m.OrderAccepted("external", "packshot", false, 2, 4)
	m.OrderAccepted("external", "packshot", true, 1, 7)
	m.JobFinished("failed", "CONTENT_POLICY", false)
	m.JobFinished("completed", "", false)
	m.JobFinished("completed", "", true)
	m.CreditsConsumed("packshot", false, 5)
	m.CreditsConsumed("packshot", false, 2)
	m.CreditsConsumed("packshot", true, 3)
	m.GenerateAttempt("sim", metrics.OutcomeOK, false, 150*time.Millisecond)
	m.GenerateAttempt("local", metrics.OutcomeOK, true, 50*time.Millisecond)
	m.WebhookAttempt(metrics.WebhookRejected, 80*time.Millisecond)
	m.WebhookAttempt(metrics.WebhookUnreachable, 0)
	m.OutboxSwept(metrics.OutboxOrder, 2)
	m.DeadlineCancelled(metrics.DeadlineBySweep, false, 3)
	m.DeadlineCancelled(metrics.DeadlineBySweep, true, 0)    // nothing cancelled: no sample
	m.DeadlineCancelled(metrics.DeadlineByAttempt, false, 0) // nothing cancelled: no sample
	m.Purged(5)
	m.WebhookDeliveryEnded("failed")
	m.WebhookEndpointDisabled()
	m.WebhookLogPurged(metrics.RetentionDelivery, 3)
	m.WebhookLogPurged(metrics.RetentionEvent, 0) // nothing deleted: no sample
	m.AlertSent("credits.low", false)
	m.OrderEventsPurged(4)

	api, worker := metricstest.Serve(t, m.APIHandler()), metricstest.Serve(t, m.WorkerHandler())
	for _, f := range m.Families() {
		_, onAPI := api[f.Name]
		_, onWorker := worker[f.Name]
		if f.Process {
			if !onAPI || !onWorker {
				t.Errorf("%s: on the API's listener %v, on the worker's %v; want both (the process's own)", f.Name, onAPI, onWorker)
			}
			continue
		}
		if onAPI == onWorker {
			t.Errorf("%s: on the API's listener %v, on the worker's %v; want exactly one", f.Name, onAPI, onWorker)
		}
	}
	for name, want := range map[string]map[string]float64{
		metrics.HTTPRequests:        {`route=/api/v1/plugin/jobs/:id,method=GET,status=4xx`: 1},
		metrics.HTTPRequestDuration: {`route=/api/v1/plugin/jobs/:id,method=GET`: 1},
		metrics.OrdersAccepted:      {`api=external,job_type=packshot,livemode=true`: 1, `api=external,job_type=packshot,livemode=false`: 1},
		metrics.JobsAccepted:        {`api=external,job_type=packshot,livemode=true`: 2, `api=external,job_type=packshot,livemode=false`: 1},
		metrics.CreditsReserved:     {`api=external,job_type=packshot,livemode=true`: 4, `api=external,job_type=packshot,livemode=false`: 7},
	} {
		for labels, v := range want {
			if got := sample(t, api, name, parseLabels(labels)); got != v {
				t.Errorf("%s{%s} = %v, want %v", name, labels, got, v)
			}
		}
	}
	for name, want := range map[string]map[string]float64{
		metrics.JobsFinished: {`status=failed,error_category=CONTENT_POLICY,livemode=true`: 1, `status=completed,error_category=none,livemode=true`: 1,
			`status=completed,error_category=none,livemode=false`: 1, `livemode=false`: 1},
		metrics.CreditsConsumed:          {`job_type=packshot,livemode=true`: 7, `job_type=packshot,livemode=false`: 3},
		metrics.GenerateAttempts:         {`provider=sim,outcome=ok,livemode=true`: 1, `provider=local,outcome=ok,livemode=false`: 1},
		metrics.GenerateDuration:         {`provider=sim,livemode=true`: 1, `provider=local,livemode=false`: 1},
		metrics.WebhookDeliveries:        {`outcome=rejected`: 1, `outcome=unreachable`: 1},
		metrics.WebhookDeliveryDuration:  {`outcome=rejected`: 1},
		metrics.OutboxStarted:            {`kind=order`: 2},
		metrics.JobsDeadlineCancelled:    {`by=sweep,livemode=true`: 3},
		metrics.RetentionPurged:          {``: 5},
		metrics.WebhookDeliveriesEnded:   {`status=failed`: 1},
		metrics.WebhookEndpointsDisabled: {``: 1},
		metrics.RetentionWebhookDeleted:  {`kind=delivery`: 3},
	} {
		for labels, v := range want {
			if got := sample(t, worker, name, parseLabels(labels)); got != v {
				t.Errorf("%s{%s} = %v, want %v", name, labels, got, v)
			}
		}
	}
	// An API's cancels end jobs too (DELETE /jobs/{id}): the API's own listener shows them.
	if got := sample(t, api, metrics.JobsFinished, parseLabels(`status=failed,error_category=CONTENT_POLICY,livemode=true`)); got != 1 {
		t.Errorf("the API's listener shows %v of %s, want the process's 1", got, metrics.JobsFinished)
	}
	if f := worker[metrics.WebhookDeliveryDuration]; f != nil && len(f.GetMetric()) != 1 {
		t.Errorf("an attempt that sent nothing has a latency: %v", f)
	}
	if labels := worker.Labels(metrics.JobsDeadlineCancelled); len(labels) != 1 {
		t.Errorf("%s has samples %v, want only by=sweep,livemode=true", metrics.JobsDeadlineCancelled, labels)
	}
	// Every sample of the job metrics carries livemode, "true" or "false".
	for _, f := range []struct {
		s    metricstest.Snapshot
		name string
	}{
		{api, metrics.OrdersAccepted}, {api, metrics.JobsAccepted}, {api, metrics.CreditsReserved}, {worker, metrics.JobsFinished},
		{worker, metrics.CreditsConsumed},
		{worker, metrics.GenerateAttempts}, {worker, metrics.GenerateDuration}, {worker, metrics.JobsDeadlineCancelled},
	} {
		for _, l := range f.s.Labels(f.name) {
			if l["livemode"] != metrics.Live && l["livemode"] != metrics.Test {
				t.Errorf("%s%v: livemode %q", f.name, l, l["livemode"])
			}
		}
	}
	if labels := worker.Labels(metrics.RetentionWebhookDeleted); len(labels) != 1 {
		t.Errorf("%s has samples %v, want only kind=delivery", metrics.RetentionWebhookDeleted, labels)
	}
	if _, ok := api["go_goroutines"]; !ok {
		t.Error("the API's listener lacks the Go runtime's metrics")
	}
}

func TestTemporalSDKMetricsAreSecondsHistogramsAndCounters(t *testing.T) {
	m := metrics.New()
	defer m.Close()
	h := m.Temporal().WithTags(map[string]string{"task_queue": "q"})
	h.Timer("temporal_workflow_task_schedule_to_start_latency").Record(30 * time.Millisecond)
	h.Counter("temporal_request").Inc(2)
	h.Gauge("temporal_num_pollers").Update(3)

	for _, handler := range []http.Handler{m.WorkerHandler(), m.APIHandler()} {
		families := metricstest.Serve(t, handler)
		f := families["temporal_workflow_task_schedule_to_start_latency_seconds"]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("the SDK's timer is %v, want a histogram in seconds", f)
		}
		var bounds []float64
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
			if b.GetUpperBound() == 0.05 && b.GetCumulativeCount() != 1 {
				t.Errorf("30 ms is not in the 50 ms bucket: %v", b)
			}
		}
		if !slices.Contains(bounds, 0.05) || !slices.Contains(bounds, 300) {
			t.Errorf("buckets %v are not seconds buckets", bounds)
		}
		if got := sample(t, families, "temporal_request_total", map[string]string{"task_queue": "q"}); got != 2 {
			t.Errorf("temporal_request_total = %v, want 2", got)
		}
		if f := families["temporal_num_pollers"]; f == nil || f.GetMetric()[0].GetGauge().GetValue() != 3 {
			t.Errorf("temporal_num_pollers = %v, want the gauge 3", f)
		}
		for name := range families {
			if strings.HasPrefix(name, "otel_") || name == "target_info" {
				t.Errorf("the exporter adds %s, which says nothing about shotflow", name)
			}
		}
	}
}

func TestFamiliesAreNamedShotflow(t *testing.T) {
	m := metrics.New()
	defer m.Close()
	names := map[string]bool{}
	for _, f := range m.Families() {
		if !strings.HasPrefix(f.Name, "shotflow_") || names[f.Name] {
			t.Errorf("family %q: want a unique shotflow_ name", f.Name)
		}
		names[f.Name] = true
		if f.Type == "counter" && !strings.HasSuffix(f.Name, "_total") {
			t.Errorf("counter %s does not end in _total", f.Name)
		}
	}
	documented := []string{metrics.HTTPRequests, metrics.HTTPRequestDuration, metrics.OrdersAccepted, metrics.JobsAccepted,
		metrics.CreditsReserved, metrics.CreditsConsumed, metrics.JobsFinished, metrics.GenerateAttempts, metrics.GenerateDuration,
		metrics.WebhookDeliveries, metrics.WebhookDeliveryDuration, metrics.OutboxStarted, metrics.RetentionPurged,
		metrics.WebhookDeliveriesEnded, metrics.WebhookEndpointsDisabled, metrics.RetentionWebhookDeleted, metrics.JobsDeadlineCancelled, metrics.AlertsSent, metrics.RetentionOrderEventsDeleted}
	for _, name := range documented {
		if !names[name] {
			t.Errorf("%s is documented but not registered", name)
		}
	}
	if len(names) != len(documented) {
		t.Errorf("%d families registered, %d documented", len(names), len(documented))
	}
}

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{200: "2xx", 201: "2xx", 304: "3xx", 404: "4xx", 429: "4xx", 503: "5xx", 0: "other", 600: "other"} {
		if got := metrics.StatusClass(status); got != want {
			t.Errorf("StatusClass(%d) = %q, want %q", status, got, want)
		}
	}
}

// parseLabels reads "a=1,b=2".
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	if s == "" {
		return out
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// BenchmarkRequest is what the API's middleware adds to every request.
func BenchmarkRequest(b *testing.B) {
	m := metrics.New()
	defer m.Close()
	for b.Loop() {
		m.Request("/api/v1/plugin/jobs/:id", http.MethodGet, http.StatusOK, 3*time.Millisecond)
	}
}

// BenchmarkTemporalSDKCall is what the SDK's metrics cost per recorded call: a tagged handler, a
// counter and a timer, as its gRPC interceptor records each request to the server.
func BenchmarkTemporalSDKCall(b *testing.B) {
	m := metrics.New()
	defer m.Close()
	h := m.Temporal().WithTags(map[string]string{"namespace": "default", "task_queue": "shotflow"})
	for b.Loop() {
		op := h.WithTags(map[string]string{"operation": "RespondWorkflowTaskCompleted"})
		op.Counter("temporal_request").Inc(1)
		op.Timer("temporal_request_latency").Record(2 * time.Millisecond)
	}
}

// BenchmarkWorkerScrape is one Prometheus scrape of a worker's /metrics with every shotflow
// family in use and the SDK's usual series.
func BenchmarkWorkerScrape(b *testing.B) {
	m := metrics.New()
	defer m.Close()
	for _, status := range []string{"completed", "failed", "cancelled", "expired"} {
		m.JobFinished(status, "CONTENT_POLICY", false)
	}
	for _, p := range []string{"local", "sim", "openai", "fal"} {
		m.GenerateAttempt(p, metrics.OutcomeOK, false, time.Second)
	}
	m.WebhookAttempt(metrics.WebhookDelivered, 50*time.Millisecond)
	for _, q := range []string{"shotflow", "shotflow-generate-local"} {
		h := m.Temporal().WithTags(map[string]string{"task_queue": q})
		for _, name := range []string{"temporal_workflow_task_schedule_to_start_latency", "temporal_activity_schedule_to_start_latency",
			"temporal_workflow_task_execution_latency", "temporal_activity_execution_latency", "temporal_request_latency"} {
			h.Timer(name).Record(10 * time.Millisecond)
		}
		h.Gauge("temporal_num_pollers").Update(2)
		h.Counter("temporal_request").Inc(1)
	}
	handler := m.WorkerHandler()
	for b.Loop() {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// In one process serving both listeners (shotflow dev), the families they share (the Go runtime's,
// the process's, the Temporal SDK's) appear on the worker's alone: scraping both counts each once.
func TestOneProcessShowsSharedFamiliesOnce(t *testing.T) {
	m := metrics.New()
	defer m.Close()
	m.OneProcess()
	m.Request("/api/v1/plugin/jobs/:id", http.MethodGet, http.StatusOK, time.Millisecond)
	m.Temporal().Counter("temporal_request").Inc(1)
	m.AlertSent("credits.low", false)
	api, worker := metricstest.Serve(t, m.APIHandler()), metricstest.Serve(t, m.WorkerHandler())
	for name := range worker {
		if _, twice := api[name]; twice {
			t.Errorf("%s is on both listeners", name)
		}
	}
	for _, name := range []string{"go_goroutines", "temporal_request_total", metrics.AlertsSent} {
		if _, ok := worker[name]; !ok {
			t.Errorf("%s is not on the worker's listener", name)
		}
	}
	if _, ok := api[metrics.HTTPRequests]; !ok {
		t.Errorf("the API's own %s left its listener", metrics.HTTPRequests)
	}
}
