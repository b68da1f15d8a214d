package webhooks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/urlsign"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

func TestEventForStatus(t *testing.T) {
	cases := map[string]string{
		models.JobCompleted: "job.completed",
		models.JobFailed:    "job.failed",
		models.JobExpired:   "job.failed",
		models.JobCancelled: "job.cancelled",
	}
	for status, want := range cases {
		if got, ok := webhooks.EventForStatus(status); !ok || got != want {
			t.Errorf("EventForStatus(%s) = %q, %v; want %q", status, got, ok, want)
		}
	}
	for _, s := range []string{models.JobPending, models.JobInProgress, models.JobRetryPending, ""} {
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
		ID: "job-1", OrderID: "order-1", JobType: models.JobTypePhotoShoot, Status: models.JobCompleted, ProductRef: "mug-01",
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
	if p.ID != "d-1" || p.Type != "job.completed" || !p.CreatedAt.Equal(created) {
		t.Fatalf("envelope = %+v", p)
	}
	d := p.Data
	if d.ID != "job-1" || d.OrderID != "order-1" || d.Status != "completed" || d.ProductRef != "mug-01" || d.ProductLabel != "Red mug" ||
		d.PackshotAssetID == nil || *d.PackshotAssetID != "asset-in" || d.Voting != "pending" || d.VotingAt != nil ||
		d.AttemptCount != 3 || d.JobType != "photo_shoot" || d.StartedAt == nil || d.CompletedAt == nil {
		t.Fatalf("data = %+v", d)
	}
	if len(d.Outputs) != 1 {
		t.Fatalf("outputs = %+v, want the one that is not purged", d.Outputs)
	}
	o := d.Outputs[0]
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
	job.Status, job.ErrorCategory, job.ErrorHint = models.JobExpired, &cat, &hint
	body, err = webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: "d-2", Event: "job.failed", CreatedAt: created, Job: job, Outputs: outputs, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Type != "job.failed" || raw.Data["status"] != "expired" || raw.Data["error_category"] != "RATE_LIMIT" {
		t.Fatalf("expired job payload: %s", body)
	}
	if outs, ok := raw.Data["outputs"].([]any); !ok || len(outs) != 0 {
		t.Fatalf("outputs of an expired job: %v", raw.Data["outputs"])
	}
	for _, k := range []string{"packshot_asset_id", "product_label", "product_ref", "voting", "voting_at"} {
		if _, ok := raw.Data[k]; !ok {
			t.Errorf("data lacks %q (plugin-api-v1.md, Events rule 6)", k)
		}
	}
}
