package deploycheck

import (
	"encoding/json"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/metrics"
)

// The monitoring files of the compose stack.
const (
	prometheusConfig  = "deploy/prometheus/prometheus.yml"
	grafanaDatasource = "deploy/grafana/provisioning/datasources/prometheus.yml"
	grafanaProvider   = "deploy/grafana/provisioning/dashboards/shotflow.yml"
	grafanaDashboard  = "deploy/grafana/dashboards/shotflow.json"
)

type prometheusFile struct {
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
		DNSSDConfigs []struct {
			Names []string `yaml:"names"`
			Type  string   `yaml:"type"`
			Port  int      `yaml:"port"`
		} `yaml:"dns_sd_configs"`
	} `yaml:"scrape_configs"`
}

// mounts returns a service's bind mounts, container path → repository path.
func mounts(t *testing.T, name string, s composeService) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range s.Volumes {
		spec, ok := v.(string)
		if !ok {
			continue
		}
		parts := strings.Split(mustInterpolate(t, spec), ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[0], ".") {
			out[parts[1]] = path.Clean(parts[0])
		}
	}
	return out
}

// listenPort is the port of a service's listen address setting, as its compose defaults give it.
func listenPort(t *testing.T, f composeFile, service string, addr func(config.Config) string) string {
	t.Helper()
	environ := defaultEnv(t, service, f.service(t, service))
	for k := range environ {
		if strings.HasPrefix(k, "AWS_") {
			delete(environ, k)
		}
	}
	cfg, err := config.LoadFrom(environ)
	if err != nil {
		t.Fatalf("service %s: %v", service, err)
	}
	_, port, err := net.SplitHostPort(addr(cfg))
	if err != nil {
		t.Fatalf("service %s: %v", service, err)
	}
	return port
}

// TestPrometheusScrapesTheAPIAndEveryWorker: the Prometheus service reads deploy/prometheus, whose
// targets are compose services on the ports their settings listen on, at /metrics: the api on
// HTTP_ADDR and the workers on WORKER_METRICS_ADDR, each by DNS so that every replica is scraped.
func TestPrometheusScrapesTheAPIAndEveryWorker(t *testing.T) {
	f := loadCompose(t)
	prom := f.service(t, "prometheus")
	if mounts(t, "prometheus", prom)["/etc/prometheus/prometheus.yml"] != prometheusConfig {
		t.Errorf("the prometheus service does not mount %s at /etc/prometheus/prometheus.yml", prometheusConfig)
	}
	if !slices.Contains(stringList(prom.Command), "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("the prometheus service does not read /etc/prometheus/prometheus.yml: %q", stringList(prom.Command))
	}
	var pf prometheusFile
	if err := yaml.Unmarshal(readRepoFile(t, prometheusConfig), &pf); err != nil {
		t.Fatalf("parse %s: %v", prometheusConfig, err)
	}
	want := map[string]string{
		"api":    listenPort(t, f, "api", func(c config.Config) string { return c.HTTPAddr }),
		"worker": listenPort(t, f, "worker", func(c config.Config) string { return c.WorkerMetricsAddr }),
	}
	scraped := map[string]bool{}
	for _, sc := range pf.ScrapeConfigs {
		if p := sc.MetricsPath; p != "" && p != api.MetricsPath {
			t.Errorf("job %s scrapes %s, want %s", sc.JobName, p, api.MetricsPath)
		}
		var targets []string
		for _, s := range sc.StaticConfigs {
			targets = append(targets, s.Targets...)
		}
		for _, d := range sc.DNSSDConfigs {
			if d.Type != "A" {
				t.Errorf("job %s: dns_sd_configs type %q, want A (compose's DNS has no SRV records)", sc.JobName, d.Type)
			}
			for _, n := range d.Names {
				targets = append(targets, net.JoinHostPort(n, strconv.Itoa(d.Port)))
			}
		}
		if len(targets) == 0 {
			t.Errorf("job %s has no target", sc.JobName)
		}
		for _, target := range targets {
			host, port, err := net.SplitHostPort(target)
			if err != nil {
				t.Errorf("job %s: target %q: %v", sc.JobName, target, err)
				continue
			}
			wantPort, known := want[host]
			switch {
			case !known:
				t.Errorf("job %s scrapes %s, which is not a shotflow service with metrics (api, worker)", sc.JobName, target)
			case port != wantPort:
				t.Errorf("job %s scrapes %s on port %s, but the service listens on %s", sc.JobName, host, port, wantPort)
			default:
				scraped[host] = true
			}
		}
	}
	for host := range want {
		if !scraped[host] {
			t.Errorf("%s does not scrape the %s service", prometheusConfig, host)
		}
	}
}

// TestWorkerHealthcheckAsksItsListener: the worker's container health is its /healthz on
// WORKER_METRICS_ADDR, asked with the binary's own healthcheck command (the image has no curl).
func TestWorkerHealthcheckAsksItsListener(t *testing.T) {
	f := loadCompose(t)
	w := f.service(t, "worker")
	if !hasHealthcheck(w) {
		t.Fatal("the worker service has no healthcheck")
	}
	port := listenPort(t, f, "worker", func(c config.Config) string { return c.WorkerMetricsAddr })
	test := stringList(w.Healthcheck.Test)
	wantURL := "http://127.0.0.1:" + port + "/healthz"
	if !slices.Contains(test, "/usr/local/bin/shotflow") || !slices.Contains(test, "healthcheck") || !slices.Contains(test, wantURL) {
		t.Errorf("worker healthcheck %q, want `/usr/local/bin/shotflow healthcheck %s`", test, wantURL)
	}
}

// TestGrafanaIsProvisionedFromTheRepository: Grafana mounts deploy/grafana's provisioning and
// dashboards where the provider looks, and its data source is the prometheus service.
func TestGrafanaIsProvisionedFromTheRepository(t *testing.T) {
	f := loadCompose(t)
	g := f.service(t, "grafana")
	m := mounts(t, "grafana", g)
	if m["/etc/grafana/provisioning"] != "deploy/grafana/provisioning" {
		t.Errorf("grafana does not mount deploy/grafana/provisioning at /etc/grafana/provisioning: %v", m)
	}
	var provider struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, grafanaProvider), &provider); err != nil || len(provider.Providers) != 1 {
		t.Fatalf("%s: %v providers, %v; want one", grafanaProvider, len(provider.Providers), err)
	}
	p := provider.Providers[0]
	if p.Type != "file" || m[p.Options.Path] != path.Dir(grafanaDashboard) {
		t.Errorf("the dashboard provider reads %s (type %s), where grafana mounts %q, not %s", p.Options.Path, p.Type, m[p.Options.Path], path.Dir(grafanaDashboard))
	}
	if deps := dependsOn(t, "grafana", g); deps["prometheus"] == "" {
		t.Error("grafana does not depend on prometheus")
	}

	var ds struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, grafanaDatasource), &ds); err != nil || len(ds.Datasources) != 1 {
		t.Fatalf("%s: %v data sources, %v; want one", grafanaDatasource, len(ds.Datasources), err)
	}
	d := ds.Datasources[0]
	u, err := url.Parse(d.URL)
	if err != nil || d.Type != "prometheus" || u.Hostname() != "prometheus" || u.Port() != containerPort(t, f.service(t, "prometheus")) {
		t.Errorf("data source %+v does not point at the prometheus service's port %s", d, containerPort(t, f.service(t, "prometheus")))
	}
	for _, q := range dashboardQueries(t) {
		if q.datasource != d.UID {
			t.Errorf("panel %q queries data source %q, not the provisioned %q", q.panel, q.datasource, d.UID)
		}
	}
}

// containerPort is the container side of a service's first published port.
func containerPort(t *testing.T, s composeService) string {
	t.Helper()
	if len(s.Ports) == 0 {
		t.Fatal("the service publishes no port")
	}
	spec := mustInterpolate(t, s.Ports[0].(string))
	return spec[strings.LastIndex(spec, ":")+1:]
}

// query is one PromQL expression of the dashboard.
type query struct {
	panel, datasource, expr string
}

type grafanaPanel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// dashboardQueries parses the dashboard and returns every query of every panel (rows included);
// a panel without a query fails the test.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	var dash struct {
		UID    string         `json:"uid"`
		Title  string         `json:"title"`
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(readRepoFile(t, grafanaDashboard), &dash); err != nil {
		t.Fatalf("parse %s: %v", grafanaDashboard, err)
	}
	if dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s has no uid, title or panels", grafanaDashboard)
	}
	var out []query
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, target := range p.Targets {
				q := query{panel: p.Title, expr: target.Expr}
				switch {
				case target.Datasource != nil:
					q.datasource = target.Datasource.UID
				case p.Datasource != nil:
					q.datasource = p.Datasource.UID
				}
				if strings.TrimSpace(q.expr) == "" {
					t.Errorf("panel %q has an empty query", p.Title)
				}
				out = append(out, q)
			}
		}
	}
	walk(dash.Panels)
	return out
}

// metricNameRE finds the names of shotflow's and the Temporal SDK's metrics in PromQL; label names
// (route, task_queue, …) never start with these prefixes.
var metricNameRE = regexp.MustCompile(`\b(?:shotflow|temporal)_[a-zA-Z0-9_]+`)

// exportedNames are the sample names /metrics can show for shotflow's families and the SDK's
// families metrics.TemporalSDKMetrics lists: counters as they are, histograms with _bucket,
// _sum and _count.
func exportedNames() map[string]bool {
	m := metrics.New()
	defer m.Close()
	names := map[string]bool{}
	histogram := func(n string) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			names[n+suffix] = true
		}
	}
	for _, f := range m.Families() {
		names[f.Name] = true
		if f.Type == "histogram" {
			histogram(f.Name)
		}
	}
	for _, n := range metrics.TemporalSDKMetrics {
		names[n] = true
		if strings.HasSuffix(n, "_seconds") {
			histogram(n)
		}
	}
	return names
}

// unknownMetrics returns the metric names of expr that the code does not export.
func unknownMetrics(expr string, exported map[string]bool) []string {
	var out []string
	for _, name := range metricNameRE.FindAllString(expr, -1) {
		if !exported[name] {
			out = append(out, name)
		}
	}
	return out
}

// TestDashboardQueriesUseExportedMetrics fails when a panel queries a metric the code does not
// export (renamed or never made), and when the panels the operators rely on are gone.
func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	exported := exportedNames()
	used := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		names := metricNameRE.FindAllString(q.expr, -1)
		if len(names) == 0 && !strings.Contains(q.expr, "up{") {
			t.Errorf("panel %q: %q queries none of shotflow's or Temporal's metrics", q.panel, q.expr)
		}
		for _, name := range unknownMetrics(q.expr, exported) {
			t.Errorf("panel %q queries %s, which shotflow does not export", q.panel, name)
		}
		for _, n := range names {
			used[n] = true
		}
	}
	for _, need := range []struct{ name, what string }{
		{metrics.HTTPRequests, "request rate and errors per route"},
		{metrics.HTTPRequestDuration + "_bucket", "p95 latency per route"},
		{metrics.JobsFinished, "jobs by status and category"},
		{metrics.GenerateDuration + "_bucket", "generate latency per provider"},
		{metrics.WebhookDeliveries, "webhook failures"},
		{"temporal_workflow_task_schedule_to_start_latency_seconds_bucket", "Temporal schedule-to-start latency"},
		{"temporal_activity_schedule_to_start_latency_seconds_bucket", "Temporal schedule-to-start latency"},
	} {
		if !used[need.name] {
			t.Errorf("the dashboard does not show %s (no query of %s)", need.what, need.name)
		}
	}
}

// TestUnknownMetricsCatchesRenames pins the check above: a renamed family, a counter without its
// _total and a counter queried as a histogram are reported; label names are not metric names.
func TestUnknownMetricsCatchesRenames(t *testing.T) {
	exported := exportedNames()
	for expr, want := range map[string][]string{
		`sum by (route) (rate(shotflow_http_requests_total{status="5xx"}[5m]))`:                                                    nil,
		`histogram_quantile(0.95, sum by (le) (rate(shotflow_generate_duration_seconds_bucket[5m])))`:                              nil,
		`histogram_quantile(0.95, sum by (task_queue, le) (rate(temporal_activity_schedule_to_start_latency_seconds_bucket[5m])))`: nil,
		`rate(shotflow_http_request_total[5m])`:                                                                                    {"shotflow_http_request_total"},
		`rate(shotflow_jobs_finished[5m])`:                                                                                         {"shotflow_jobs_finished"},
		`rate(shotflow_jobs_finished_total_bucket[5m])`:                                                                            {"shotflow_jobs_finished_total_bucket"},
		`temporal_activity_schedule_to_start_latency_bucket`:                                                                       {"temporal_activity_schedule_to_start_latency_bucket"},
		`sum by (error_category) (shotflow_jobs_finished_total)`:                                                                   nil,
	} {
		if got := unknownMetrics(expr, exported); !slices.Equal(got, want) {
			t.Errorf("unknownMetrics(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestDashboardShowsLiveTrafficByDefault: the dashboard has a livemode variable whose default is
// "true", and every query of a job metric (those with a livemode label) filters by it, so test
// keys' traffic is hidden until an operator picks it.
func TestDashboardShowsLiveTrafficByDefault(t *testing.T) {
	var dash struct {
		Templating struct {
			List []struct {
				Name     string `json:"name"`
				Type     string `json:"type"`
				Query    string `json:"query"`
				AllValue string `json:"allValue"`
				Current  struct {
					Value any `json:"value"`
				} `json:"current"`
				Options []struct {
					Value    string `json:"value"`
					Selected bool   `json:"selected"`
				} `json:"options"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readRepoFile(t, grafanaDashboard), &dash); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range dash.Templating.List {
		if v.Name != "livemode" {
			continue
		}
		found = true
		if v.Current.Value != metrics.Live {
			t.Errorf("livemode defaults to %v, want %q (live traffic)", v.Current.Value, metrics.Live)
		}
		var values []string
		for _, o := range v.Options {
			values = append(values, o.Value)
			if o.Selected != (o.Value == metrics.Live) {
				t.Errorf("livemode option %q selected %v", o.Value, o.Selected)
			}
		}
		if !slices.Equal(values, []string{metrics.Live, metrics.Test}) || v.Query != "true,false" {
			t.Errorf("livemode options %v (query %q), want true, false", values, v.Query)
		}
	}
	if !found {
		t.Fatal("the dashboard has no livemode variable")
	}
	labelled := []string{metrics.OrdersAccepted, metrics.JobsAccepted, metrics.CreditsReserved, metrics.JobsFinished,
		metrics.GenerateAttempts, metrics.GenerateDuration + "_bucket", metrics.JobsDeadlineCancelled}
	filtered := regexp.MustCompile(`^\{[^}]*livemode=~"\$livemode"[^}]*\}`)
	seen := 0
	for _, q := range dashboardQueries(t) {
		for _, name := range labelled {
			for rest := q.expr; ; {
				i := strings.Index(rest, name)
				if i < 0 {
					break
				}
				rest = rest[i+len(name):]
				if strings.HasPrefix(rest, "_") { // a longer name (…_bucket of a histogram)
					continue
				}
				seen++
				if !filtered.MatchString(rest) {
					t.Errorf("panel %q queries %s without livemode=~\"$livemode\": %s", q.panel, name, q.expr)
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no panel queries a job metric")
	}
}
