// Package metricstest reads a /metrics answer in tests: it parses the Prometheus text format and
// sums samples by name and labels, so a test can assert how far a counter moved.
package metricstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is the metric families of one scrape.
type Snapshot map[string]*dto.MetricFamily

// Parse reads the Prometheus text format.
func Parse(r io.Reader) (Snapshot, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}

// Serve scrapes a handler (GET /metrics) and fails the test unless it answers 200 in the text format.
func Serve(t testing.TB, h http.Handler) Snapshot {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return read(t, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
}

// Get scrapes a URL and fails the test unless it answers 200 in the text format.
func Get(t testing.TB, url string) Snapshot {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	return read(t, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body)
}

func read(t testing.TB, status int, contentType string, body io.Reader) Snapshot {
	t.Helper()
	if status != http.StatusOK {
		data, _ := io.ReadAll(body)
		t.Fatalf("/metrics answered %d: %s", status, data)
	}
	if !strings.HasPrefix(contentType, "text/plain") {
		t.Fatalf("/metrics Content-Type = %q, want the Prometheus text format", contentType)
	}
	s, err := Parse(body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return s
}

// Value sums the samples of a family whose labels include want: counter and gauge values, and
// the observation counts of histograms. A family that is absent sums to 0.
func (s Snapshot) Value(name string, want map[string]string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

// Labels lists the label sets of a family's samples.
func (s Snapshot) Labels(name string) []map[string]string {
	var out []map[string]string
	for _, m := range s[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out = append(out, labels)
	}
	return out
}

func matches(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
