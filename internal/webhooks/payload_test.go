package webhooks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

func TestEventForStatus(t *testing.T) {
	cases := map[string]string{
		status.JobCompleted: "job.completed",
		status.JobFailed:    "job.failed",
		status.JobExpired:   "job.failed",
		status.JobCancelled: "job.cancelled",
	}
	for status, want := range cases {
		if got, ok := webhooks.EventForStatus(status); !ok || got != want {
			t.Errorf("EventForStatus(%s) = %q, %v; want %q", status, got, ok, want)
		}
	}
	for _, s := range []string{status.JobPending, status.JobInProgress, status.JobRetryPending, ""} {
		if _, ok := webhooks.EventForStatus(s); ok {
			t.Errorf("EventForStatus(%q) is an event", s)
		}
	}
}

func TestBuildJobPayload(t *testing.T) {
	signer := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "https://api.example")
	created := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	started, done := created.Add(-time.Minute), created.Add(-time.Second)
	packshot, cat, hint := "asset-in", "RATE_LIMIT", "hint"
	purged := created
	job := &models.Job{
		ID: "job-1", OrderID: "order-1", JobType: jobtype.PhotoShoot, Status: status.JobCompleted, ProductRef: "mug-01",
		ProductLabel: "Red mug", InputAssetID: &packshot, AIModel: "local/studio-v1", AspectRatio: "4:5", CreditCost: 2,
		AttemptCount: 3, Voting: models.VotingPending, CreatedAt: created.Add(-time.Hour), UpdatedAt: done,
		StartedAt: &started, CompletedAt: &done,
	}
	outputs := []models.Asset{
		{ID: "out-1", ContentType: "image/png", Width: 820, Height: 1024, SizeBytes: 1234},
		{ID: "out-gone", ContentType: "image/png", PurgedAt: &purged},
	}
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{
		DeliveryID: "d-1", Event: "job.completed", CreatedAt: created, Job: job, Outputs: outputs,
		Signer: signer, DownloadTTL: 168 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(body, []byte(`\u0026`)) {
		t.Errorf("URLs are HTML-escaped: %s", body)
	}
	var p webhooks.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.DeliveryID != "d-1" || p.Event != "job.completed" || !p.DeliveryCreatedAt.Equal(created) {
		t.Fatalf("notification fields = %q %q %v", p.DeliveryID, p.Event, p.DeliveryCreatedAt)
	}
	if p.ID != "job-1" || p.OrderID != "order-1" || p.Status != "completed" || p.ProductRef != "mug-01" || p.ProductLabel != "Red mug" ||
		p.PackshotAssetID == nil || *p.PackshotAssetID != "asset-in" || p.Voting != "pending" || p.VotingAt != nil ||
		p.AttemptCount != 3 || p.JobType != "photo_shoot" || p.StartedAt == nil || p.CompletedAt == nil || !p.CreatedAt.Equal(job.CreatedAt) {
		t.Fatalf("job fields = %+v", p.Job)
	}
	if len(p.Outputs) != 1 {
		t.Fatalf("outputs = %+v, want the one that is not purged", p.Outputs)
	}
	o := p.Outputs[0]
	// Valid at least 7 days after the last automatic attempt (48 h after creation), on the hour.
	minExpiry := created.Add(48*time.Hour + 168*time.Hour)
	if o.ExpiresAt.Before(minExpiry) || o.ExpiresAt.After(minExpiry.Add(time.Hour)) || o.ExpiresAt.Truncate(time.Hour) != o.ExpiresAt {
		t.Fatalf("expires_at = %v, want the hour at or after %v", o.ExpiresAt, minExpiry)
	}
	u, err := url.Parse(o.URL)
	if err != nil || u.Host != "api.example" || u.Path != "/files/out-1" {
		t.Fatalf("url = %q", o.URL)
	}
	if err := signer.Verify(http.MethodGet, u.Path, u.Query(), minExpiry.Add(-time.Minute)); err != nil {
		t.Fatalf("the download URL does not verify: %v", err)
	}

	// A job that did not complete has no outputs, whatever assets exist; keys are always present.
	job.Status, job.ErrorCategory, job.ErrorHint = status.JobExpired, &cat, &hint
	body, err = webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: "d-2", Event: "job.failed", CreatedAt: created, Job: job, Outputs: outputs, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	raw := decodeObject(t, body)
	if raw["event"] != "job.failed" || raw["status"] != "expired" || raw["error_category"] != "RATE_LIMIT" {
		t.Fatalf("expired job payload: %s", body)
	}
	if outs, ok := raw["outputs"].([]any); !ok || len(outs) != 0 {
		t.Fatalf("outputs of an expired job: %v", raw["outputs"])
	}
	for _, k := range []string{"packshot_asset_id", "product_label", "product_ref", "voting", "voting_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("the payload lacks %q at its top level (api/openapi.yaml, WebhookEvent)", k)
		}
	}
}

// notificationKeys are the payload's fields that are not the job's.
var notificationKeys = []string{"event", "delivery_id", "delivery_created_at"}

// The payload is the job view's every field, with the same value, at the top level, and the
// notification's own fields beside them: none of them hides a field of the job.
func TestPayloadIsTheJobViewAtTopLevel(t *testing.T) {
	job, outputs, signer, created := completedJob()
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: "d-1", Event: webhooks.EventJobCompleted,
		CreatedAt: created, Job: job, Outputs: outputs, Signer: signer, DownloadTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	payload := decodeObject(t, body)
	var p webhooks.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	// The same view, rendered on its own as GET /jobs/{id} renders it.
	view, err := json.Marshal(jobview.New(job, outputs, fileurl.API(signer), p.Outputs[0].ExpiresAt))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeObject(t, view)
	want["event"], want["delivery_id"], want["delivery_created_at"] = "job.completed", "d-1", "2026-06-01T12:30:00Z"
	if len(want) != len(decodeObject(t, view))+len(notificationKeys) {
		t.Fatalf("the job view has a field named like a notification field: %s", view)
	}
	if !reflect.DeepEqual(payload, want) {
		t.Fatalf("payload\n%s\nwant the job view with %v beside its fields\n%s", body, notificationKeys, view)
	}
}

// A payload recorded before the job's fields moved to the top level is sent in the current shape,
// byte for byte what BuildJobPayload now makes for the same notification, with the livemode of
// its scope (it predates the field); a current one as stored, without asking for the mode.
func TestCurrentPayload(t *testing.T) {
	for _, test := range []bool{false, true} {
		job, outputs, signer, created := completedJob()
		job.TestMode = test
		current, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: "d-1", Event: webhooks.EventJobCompleted,
			CreatedAt: created, Job: job, Outputs: outputs, Signer: signer, DownloadTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		var p webhooks.Payload
		if err := json.Unmarshal(current, &p); err != nil {
			t.Fatal(err)
		}
		// The earlier shape, as PostgreSQL's JSONB gives it back: keys reordered, spaces added, no livemode.
		data := decodeObject(t, []byte(mustJSON(t, p.Job)))
		delete(data, "livemode")
		legacy := fmt.Sprintf(`{"id": "d-1", "data": %s, "type": "job.completed", "created_at": "2026-06-01T12:30:00Z"}`, mustJSON(t, data))
		asked := 0
		got, err := webhooks.CurrentPayload([]byte(legacy), func() (bool, error) { asked++; return !test, nil })
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(current) || asked != 1 {
			t.Fatalf("legacy payload sent as\n%s\nwant\n%s (mode asked %d times)", got, current, asked)
		}
		if got, err := webhooks.CurrentPayload(current, noMode(t)); err != nil || string(got) != string(current) {
			t.Fatalf("a current payload is sent as %s, %v; want it unchanged", got, err)
		}
	}
	if _, err := webhooks.CurrentPayload([]byte(`not json`), noMode(t)); err == nil {
		t.Fatal("a stored payload that is not JSON was accepted")
	}
}

// A body of the current shape recorded before livemode existed gets it at the top level and on
// its nested order, record or endpoint, in its order; one that has it is sent as stored.
func TestCurrentPayloadAddsLivemode(t *testing.T) {
	stored := `{"event": "order.completed", "delivery_id": "e-1", "delivery_created_at": "2026-06-01T12:30:00Z", ` +
		`"order": {"id": "o-1", "status": "completed"}}`
	got, err := webhooks.CurrentPayload([]byte(stored), func() (bool, error) { return false, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"order.completed","delivery_id":"e-1","delivery_created_at":"2026-06-01T12:30:00Z",` +
		`"order":{"id":"o-1","status":"completed","livemode":false},"livemode":false}`
	if string(got) != want {
		t.Fatalf("sent as\n%s\nwant\n%s", got, want)
	}
	if again, err := webhooks.CurrentPayload(got, noMode(t)); err != nil || string(again) != string(got) {
		t.Fatalf("a body with livemode is sent as %s, %v; want it unchanged", again, err)
	}
	if _, err := webhooks.CurrentPayload([]byte(`{"event":"webhook.test"}`), func() (bool, error) {
		return false, errors.New("database away")
	}); err == nil {
		t.Fatal("a body whose mode could not be read was sent")
	}
}

// noMode is a livemode source that fails the test when asked.
func noMode(t *testing.T) func() (bool, error) {
	return func() (bool, error) {
		t.Helper()
		t.Error("the mode was asked for a body that has it")
		return true, nil
	}
}

// completedJob is a completed job with one stored output, its signer and a notification time.
func completedJob() (*models.Job, []models.Asset, *urlsign.Signer, time.Time) {
	signer := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "https://api.example")
	created := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	done, packshot := created.Add(-time.Second), "asset-in"
	job := &models.Job{
		ID: "job-1", OrderID: "order-1", JobType: jobtype.PhotoShoot, Status: status.JobCompleted, ProductRef: "mug-01",
		ProductLabel: "Red mug", InputAssetID: &packshot, AIModel: "local/studio-v1", AspectRatio: "4:5", CreditCost: 2,
		AttemptCount: 1, Voting: models.VotingAccepted, VotingAt: &done, CreatedAt: created.Add(-time.Hour), UpdatedAt: done,
		StartedAt: &done, CompletedAt: &done,
	}
	outputs := []models.Asset{{ID: "out-1", ContentType: "image/png", Width: 820, Height: 1024, SizeBytes: 1234}}
	return job, outputs, signer, created
}

func decodeObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
