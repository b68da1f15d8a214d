// Package metrics holds one shotflow process's Prometheus metrics and serves them in the
// Prometheus text format: the API's (requests, accepted orders, reserved credits) on its
// GET /metrics, the worker's (finished jobs, generate attempts, webhook deliveries, sweeps) and the
// Temporal SDK's on the worker's own listener (WORKER_METRICS_ADDR). shotflow's own metrics are
// named shotflow_…; the SDK's keep their temporal_… names.
//
// Every process builds its own registries (New), so several apps in one process (`shotflow dev`,
// tests) never register a collector twice. A nil *Metrics records nothing.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// shotflow's own metric families.
const (
	// HTTPRequests counts API requests by route template, method and status class.
	HTTPRequests = "shotflow_http_requests_total"
	// HTTPRequestDuration is the latency of API requests by route template and method.
	HTTPRequestDuration = "shotflow_http_request_duration_seconds"
	// OrdersAccepted counts accepted sessions (plugin API) and generation requests (external API) by API and job type.
	OrdersAccepted = "shotflow_orders_accepted_total"
	// JobsAccepted counts the jobs of accepted orders by API and job type.
	JobsAccepted = "shotflow_jobs_accepted_total"
	// CreditsReserved counts the credits reserved for accepted orders by API and job type.
	CreditsReserved = "shotflow_credits_reserved_total"
	// CreditsConsumed counts the credits charged for completed job runs (their settlement), by job
	// type: the Grafana dashboard's credits consumed per hour.
	CreditsConsumed = "shotflow_credits_consumed_total"
	// JobsFinished counts job runs that reached a terminal status, by status and error category.
	JobsFinished = "shotflow_jobs_finished_total"
	// GenerateAttempts counts calls to a generation provider by provider and outcome.
	GenerateAttempts = "shotflow_generate_attempts_total"
	// GenerateDuration is the latency of calls to a generation provider, by provider.
	GenerateDuration = "shotflow_generate_duration_seconds"
	// WebhookDeliveries counts webhook delivery attempts by outcome.
	WebhookDeliveries = "shotflow_webhook_deliveries_total"
	// WebhookDeliveryDuration is the latency of webhook delivery attempts that reached the network, by outcome.
	WebhookDeliveryDuration = "shotflow_webhook_delivery_duration_seconds"
	// WebhookDeliveriesEnded counts webhook deliveries by how their run ended (delivered, failed, held).
	WebhookDeliveriesEnded = "shotflow_webhook_deliveries_ended_total"
	// WebhookEndpointsDisabled counts webhook endpoints disabled because every attempt failed for WEBHOOK_DISABLE_AFTER.
	WebhookEndpointsDisabled = "shotflow_webhook_endpoints_disabled_total"
	// AlertsSent counts the alert events recorded (credits.low, spend_limit.alert,
	// spend_limit.reached), by event and livemode, in the API or the worker that recorded them.
	AlertsSent = "shotflow_alerts_sent_total"
	// OutboxStarted counts the workflows the outbox sweep started because their start was lost, by kind.
	OutboxStarted = "shotflow_outbox_started_total"
	// JobsDeadlineCancelled counts the jobs cancelled because they had not started by the deadline
	// their request's Cancel-After set, by who found them (DeadlineBySweep, DeadlineByAttempt).
	JobsDeadlineCancelled = "shotflow_jobs_deadline_cancelled_total"
	// RetentionPurged counts the output files the retention sweep deleted.
	RetentionPurged = "shotflow_retention_purged_total"
	// RetentionWebhookDeleted counts the rows of the webhook log the retention sweep deleted, by
	// kind (delivery, attempt, event).
	RetentionWebhookDeleted = "shotflow_retention_webhook_deleted_total"
	// RetentionOrderEventsDeleted counts the rows of ended orders' change feed (order_events) the
	// retention sweep deleted (ORDER_EVENTS_RETENTION).
	RetentionOrderEventsDeleted = "shotflow_retention_order_events_deleted_total"
)

// TemporalSDKMetrics are the Temporal SDK's metric families that docs and the Grafana dashboard
// rely on, as the worker's /metrics names them (timers are histograms in seconds).
var TemporalSDKMetrics = []string{
	"temporal_workflow_task_schedule_to_start_latency_seconds",
	"temporal_workflow_task_execution_latency_seconds",
	"temporal_activity_schedule_to_start_latency_seconds",
	"temporal_activity_execution_latency_seconds",
	"temporal_num_pollers",
	"temporal_sticky_cache_size",
	"temporal_worker_task_slots_available",
	"temporal_request_total",
}

// Label values used by more than one caller.
const (
	// OutcomeOK is the outcome of a generate attempt that returned outputs.
	OutcomeOK = "ok"
	// NoCategory is the error_category of a job that completed.
	NoCategory = "none"
	// OutboxOrder is the kind of OutboxStarted for an order's workflow.
	OutboxOrder = "order"
	// OutboxJobRun is the kind of OutboxStarted for a support re-run of a job.
	OutboxJobRun = "job_run"
	// OutboxPreparation is the kind of OutboxStarted for an upload's preparation.
	OutboxPreparation = "input_preparation"
	// OutboxUploadCollection is the kind of OutboxStarted for an upload sent straight to the store
	// that the sweep collected for the jobs waiting for it, and whose preparation it started
	// (nobody had used it yet; docs/files.md).
	OutboxUploadCollection = "upload_collection"
	// OutboxWebhookDelivery is the kind of OutboxStarted for the webhook delivery of a job the API
	// cancelled.
	OutboxWebhookDelivery = "webhook_delivery"
	// DeadlineBySweep is the by of JobsDeadlineCancelled for a job the deadline sweep cancelled
	// (one waiting in its order); DeadlineByAttempt for one whose first attempt found its deadline
	// passed (BeginAttempt).
	DeadlineBySweep   = "sweep"
	DeadlineByAttempt = "attempt"
	// The kinds of RetentionWebhookDeleted.
	RetentionDelivery = "delivery"
	RetentionAttempt  = "attempt"
	RetentionEvent    = "event"
	// WebhookDelivered is the outcome of a webhook attempt answered with a 2xx.
	WebhookDelivered = "delivered"
	// WebhookRejected is the outcome of a webhook attempt answered with anything else.
	WebhookRejected = "rejected"
	// WebhookUnreachable is the outcome of a webhook attempt that got no answer (or had no callback URL).
	WebhookUnreachable = "unreachable"
	// Live and Test are the livemode label values (Livemode) of the job metrics: a live key's
	// orders and jobs, and a test key's.
	Live = "true"
	Test = "false"
)

// Livemode is the livemode label of a job or order whose test_mode is test.
func Livemode(test bool) string {
	if test {
		return Test
	}
	return Live
}

// Family is one of shotflow's own metric families.
type Family struct {
	Name string // as /metrics shows it (histograms add _bucket, _sum and _count)
	Type string // counter or histogram
	// Process marks a family both the API and the worker record, shown with the process's own
	// metrics: on both listeners of a process that runs one of them, on the worker's alone when
	// both run in one process (OneProcess), so that each process's count is scraped once.
	Process bool
}

// Metrics is one process's registries and shotflow's collectors.
type Metrics struct {
	api, worker, shared *prometheus.Registry
	families            []Family
	meters              *sdkmetric.MeterProvider
	temporal            client.MetricsHandler
	// oneProcess is set when the API and the worker share the process (shotflow dev): the
	// process's and the Temporal SDK's metrics then appear on the worker's listener alone.
	oneProcess bool

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	ordersAccepted  *prometheus.CounterVec
	jobsAccepted    *prometheus.CounterVec
	creditsReserved *prometheus.CounterVec
	creditsConsumed *prometheus.CounterVec

	jobsFinished     *prometheus.CounterVec
	generateAttempts *prometheus.CounterVec
	generateDuration *prometheus.HistogramVec
	webhooks         *prometheus.CounterVec
	webhookDuration  *prometheus.HistogramVec
	webhooksEnded    *prometheus.CounterVec
	endpointsOff     *prometheus.CounterVec
	alertsSent       *prometheus.CounterVec
	outboxStarted    *prometheus.CounterVec
	deadlineCancels  *prometheus.CounterVec
	retentionPurged  prometheus.Counter
	webhookLogPurged *prometheus.CounterVec
	orderEventsGone  *prometheus.CounterVec
}

// requestBuckets cover answers from a cached read to the 30 s request timeout.
var requestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// slowBuckets cover generation calls and webhook POSTs: a local render takes a tenth of a second,
// a hosted provider up to minutes.
var slowBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}

// sdkBuckets are the seconds buckets of the Temporal SDK's timers (OpenTelemetry's default
// buckets are meant for milliseconds).
var sdkBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// New builds the registries of one process: Go runtime, process and Temporal SDK metrics shared by
// both listeners, and shotflow's API and worker collectors.
func New() *Metrics {
	m := &Metrics{api: prometheus.NewRegistry(), worker: prometheus.NewRegistry(), shared: prometheus.NewRegistry()}
	m.shared.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.requests = m.counterVec(m.api, HTTPRequests, "API requests by route template, method and status class (2xx, 4xx, 5xx).", "route", "method", "status")
	m.requestDuration = m.histogramVec(m.api, HTTPRequestDuration, "Latency of API requests by route template and method.", requestBuckets, "route", "method")
	m.ordersAccepted = m.counterVec(m.api, OrdersAccepted, "Sessions (plugin API) and generation requests (external API) accepted, by API, job type and livemode (false: a test key's).", "api", "job_type", "livemode")
	m.jobsAccepted = m.counterVec(m.api, JobsAccepted, "Jobs of accepted orders, by API, job type and livemode.", "api", "job_type", "livemode")
	m.creditsReserved = m.counterVec(m.api, CreditsReserved, "Credits reserved for accepted orders, by API, job type and livemode (false: test credits).", "api", "job_type", "livemode")

	m.creditsConsumed = m.counterVec(m.worker, CreditsConsumed, "Credits charged for completed job runs when their reservation is consumed, by job type and livemode (false: test credits).", "job_type", "livemode")
	// Workers count the runs their workflows end, and an API the jobs its cancels end (DELETE
	// /jobs/{id}, an order's cancel): the shared registry shows each process's own, once per process.
	m.jobsFinished = m.counterVec(m.shared, JobsFinished, "Job runs that reached a terminal status, by status, error category (none when completed) and livemode (false: a test key's).", "status", "error_category", "livemode")
	m.generateAttempts = m.counterVec(m.worker, GenerateAttempts, "Calls to a generation provider, by provider, outcome (ok or the error category) and livemode.", "provider", "outcome", "livemode")
	m.generateDuration = m.histogramVec(m.worker, GenerateDuration, "Latency of calls to a generation provider, by provider and livemode.", slowBuckets, "provider", "livemode")
	m.webhooks = m.counterVec(m.worker, WebhookDeliveries, "Webhook delivery attempts, by outcome (delivered, rejected, unreachable).", "outcome")
	m.webhookDuration = m.histogramVec(m.worker, WebhookDeliveryDuration, "Latency of webhook delivery attempts that reached the network, by outcome.", slowBuckets, "outcome")
	m.webhooksEnded = m.counterVec(m.worker, WebhookDeliveriesEnded, "Webhook deliveries by how their run ended: delivered, failed (every attempt failed, or the endpoint was deleted) or held (the endpoint is disabled).", "status")
	m.endpointsOff = m.counterVec(m.worker, WebhookEndpointsDisabled, "Webhook endpoints disabled because every attempt to them failed for WEBHOOK_DISABLE_AFTER.")
	// The API records alerts at acceptance and the worker's sweep records those a crash left: the
	// shared registry shows each process's own, once per process.
	m.alertsSent = m.counterVec(m.shared, AlertsSent, "Alert events recorded (credits.low, spend_limit.alert, spend_limit.reached), by event and livemode (false: a test key's).", "event", "livemode")
	m.outboxStarted = m.counterVec(m.worker, OutboxStarted, "Workflows the outbox sweep started because their start was lost or nobody started them yet, by kind (order, job_run, input_preparation, upload_collection, webhook_delivery).", "kind")
	m.deadlineCancels = m.counterVec(m.worker, JobsDeadlineCancelled, "Jobs cancelled because they had not started by their request's Cancel-After, by who found them (sweep: waiting in their order; attempt: at their first attempt) and livemode.", "by", "livemode")
	m.retentionPurged = prometheus.NewCounter(prometheus.CounterOpts{Name: RetentionPurged, Help: "Output files the retention sweep deleted."})
	m.worker.MustRegister(m.retentionPurged)
	m.families = append(m.families, Family{Name: RetentionPurged, Type: "counter"})
	m.orderEventsGone = m.counterVec(m.worker, RetentionOrderEventsDeleted, "Rows of ended orders' change feed (order_events) the retention sweep deleted (older than ORDER_EVENTS_RETENTION).")
	m.webhookLogPurged = m.counterVec(m.worker, RetentionWebhookDeleted, "Rows of the webhook log the retention sweep deleted (older than WEBHOOK_LOG_RETENTION), by kind (delivery, attempt, event).", "kind")

	// The Temporal SDK reports through OpenTelemetry's metrics API; this exporter turns its
	// instruments into Prometheus families on the shared registry when scraped.
	exporter, err := otelprom.New(otelprom.WithRegisterer(m.shared), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo(),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		panic("metrics: the Temporal SDK exporter does not register on a new registry: " + err.Error())
	}
	m.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithView(sdkmetric.NewView(
		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: sdkBuckets}},
	)))
	m.temporal = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                m.meters.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		// An instrument that cannot be made is left out and reported to OpenTelemetry's error
		// handler (the standard logger); the contrib default would panic inside the SDK.
		OnError: otel.Handle,
	})
	return m
}

func (m *Metrics) counterVec(reg *prometheus.Registry, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	reg.MustRegister(c)
	m.families = append(m.families, Family{Name: name, Type: "counter", Process: reg == m.shared})
	return c
}

func (m *Metrics) histogramVec(reg *prometheus.Registry, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	reg.MustRegister(h)
	m.families = append(m.families, Family{Name: name, Type: "histogram"})
	return h
}

// Families lists shotflow's own metric families, the API's and the worker's.
func (m *Metrics) Families() []Family { return append([]Family(nil), m.families...) }

// Temporal is the Temporal client's metrics handler: the SDK's metrics appear with the process's
// (on both listeners, unless OneProcess).
func (m *Metrics) Temporal() client.MetricsHandler { return m.temporal }

// OneProcess says the API and the worker run in this one process (shotflow dev), each with its
// listener: the process's and the Temporal SDK's metrics, which they share, then appear on the
// worker's listener alone, so that a Prometheus scraping both counts them once. Call it before
// APIHandler.
func (m *Metrics) OneProcess() { m.oneProcess = true }

// APIHandler serves the API's metrics, with the process's and the Temporal client's unless
// OneProcess.
func (m *Metrics) APIHandler() http.Handler {
	if m.oneProcess {
		return promhttp.HandlerFor(m.api, promhttp.HandlerOpts{})
	}
	return promhttp.HandlerFor(prometheus.Gatherers{m.shared, m.api}, promhttp.HandlerOpts{})
}

// WorkerHandler serves the worker's metrics, with the process's and the Temporal SDK's.
func (m *Metrics) WorkerHandler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{m.shared, m.worker}, promhttp.HandlerOpts{})
}

// Close stops the Temporal SDK's meter provider.
func (m *Metrics) Close() error { return m.meters.Shutdown(context.Background()) }

// StatusClass is the status label of a response status: 2xx, 3xx, 4xx or 5xx.
func StatusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// Request records one API request.
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, StatusClass(status)).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// OrderAccepted records an accepted order, its jobs and the credits reserved for them; test says
// it is a test key's.
func (m *Metrics) OrderAccepted(api, jobType string, test bool, jobs int, credits int64) {
	if m == nil {
		return
	}
	live := Livemode(test)
	m.ordersAccepted.WithLabelValues(api, jobType, live).Inc()
	m.jobsAccepted.WithLabelValues(api, jobType, live).Add(float64(jobs))
	m.creditsReserved.WithLabelValues(api, jobType, live).Add(float64(credits))
}

// JobFinished records a job run that reached a terminal status; category is empty when it
// completed, test says the job is a test key's.
func (m *Metrics) JobFinished(status, category string, test bool) {
	if m == nil {
		return
	}
	if category == "" {
		category = NoCategory
	}
	m.jobsFinished.WithLabelValues(status, category, Livemode(test)).Inc()
}

// CreditsConsumed records the credits a completed job run of jobType was charged (test: a test
// key's, test credits).
func (m *Metrics) CreditsConsumed(jobType string, test bool, credits int64) {
	if m == nil {
		return
	}
	m.creditsConsumed.WithLabelValues(jobType, Livemode(test)).Add(float64(credits))
}

// GenerateAttempt records one call to a generation provider for a job (test: a test key's);
// outcome is OutcomeOK or the error category.
func (m *Metrics) GenerateAttempt(provider, outcome string, test bool, took time.Duration) {
	if m == nil {
		return
	}
	live := Livemode(test)
	m.generateAttempts.WithLabelValues(provider, outcome, live).Inc()
	m.generateDuration.WithLabelValues(provider, live).Observe(took.Seconds())
}

// WebhookAttempt records one webhook delivery attempt; took is zero when no request was sent.
func (m *Metrics) WebhookAttempt(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
	if took > 0 {
		m.webhookDuration.WithLabelValues(outcome).Observe(took.Seconds())
	}
}

// WebhookDeliveryEnded records a delivery run that ended: delivered, failed or held.
func (m *Metrics) WebhookDeliveryEnded(status string) {
	if m == nil {
		return
	}
	m.webhooksEnded.WithLabelValues(status).Inc()
}

// WebhookEndpointDisabled records an endpoint disabled for failing.
func (m *Metrics) WebhookEndpointDisabled() {
	if m == nil {
		return
	}
	m.endpointsOff.WithLabelValues().Inc()
}

// AlertSent records an alert event.
func (m *Metrics) AlertSent(event string, test bool) {
	if m == nil {
		return
	}
	m.alertsSent.WithLabelValues(event, Livemode(test)).Inc()
}

// OutboxSwept records n workflows of a kind that the outbox sweep started.
func (m *Metrics) OutboxSwept(kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.outboxStarted.WithLabelValues(kind).Add(float64(n))
}

// DeadlineCancelled records n jobs cancelled past their Cancel-After deadline, found by
// DeadlineBySweep or DeadlineByAttempt; test says they are a test key's.
func (m *Metrics) DeadlineCancelled(by string, test bool, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.deadlineCancels.WithLabelValues(by, Livemode(test)).Add(float64(n))
}

// Purged records n output files the retention sweep deleted.
func (m *Metrics) Purged(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.retentionPurged.Add(float64(n))
}

// OrderEventsPurged records n rows of ended orders' change feed deleted by the retention sweep.
func (m *Metrics) OrderEventsPurged(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.orderEventsGone.WithLabelValues().Add(float64(n))
}

// WebhookLogPurged records n rows of a kind (RetentionDelivery, RetentionAttempt, RetentionEvent)
// that the retention sweep deleted from the webhook log.
func (m *Metrics) WebhookLogPurged(kind string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.webhookLogPurged.WithLabelValues(kind).Add(float64(n))
}
