package webhooks

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/shotflow/shotflow/internal/urlsign"
	"github.com/shotflow/shotflow/models"
)

// Event types (plugin-api-v1.md, Events). An expired job is reported as job.failed, with
// data.status "expired": the spec names three kinds and expiry is a failure to run.
const (
	EventJobCompleted = "job.completed"
	EventJobFailed    = "job.failed"
	EventJobCancelled = "job.cancelled"
)

// EventForStatus returns the event type of a terminal job status; ok is false for a job that is
// not terminal.
func EventForStatus(status string) (event string, ok bool) {
	switch status {
	case models.JobCompleted:
		return EventJobCompleted, true
	case models.JobFailed, models.JobExpired:
		return EventJobFailed, true
	case models.JobCancelled:
		return EventJobCancelled, true
	}
	return "", false
}

// Payload is the JSON body of a job webhook (docs/webhooks.md).
type Payload struct {
	ID        string    `json:"id"`   // the delivery ID, also sent as webhook-id
	Type      string    `json:"type"` // the event type
	CreatedAt time.Time `json:"created_at"`
	Data      JobData   `json:"data"`
}

// JobData is the job as GET /api/v1/plugin/jobs/{id} shows it; its JSON field names are those of
// plugin.JobResponse (a test in api/plugin keeps the two identical).
type JobData struct {
	ID              string     `json:"id"`
	OrderID         string     `json:"order_id"`
	JobType         string     `json:"job_type"`
	Status          string     `json:"status"`
	ProductRef      string     `json:"product_ref"`
	ProductLabel    string     `json:"product_label"`
	PackshotAssetID *string    `json:"packshot_asset_id"`
	AIModel         string     `json:"ai_model"`
	AspectRatio     string     `json:"aspect_ratio"`
	CreditCost      int64      `json:"credit_cost"`
	AttemptCount    int        `json:"attempt_count"`
	ErrorCategory   *string    `json:"error_category"`
	ErrorHint       *string    `json:"error_hint"`
	Voting          string     `json:"voting"`
	VotingAt        *time.Time `json:"voting_at"`
	Outputs         []Output   `json:"outputs"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	StartedAt       *time.Time `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
}

// Output is a generated file with its signed download URL (the fields of plugin.Output).
type Output struct {
	AssetID     string    `json:"asset_id"`
	URL         string    `json:"url"`
	ContentType string    `json:"content_type"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	SizeBytes   int64     `json:"size_bytes"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// RetryWindow is how long after its creation a delivery may still be attempted automatically
// (the whole retry schedule, with jitter, fits in it). Download URLs in a payload stay valid for
// the download TTL after the end of this window.
const RetryWindow = 48 * time.Hour

// downloadPath is the API's download route for an asset (plugin.FilePath).
func downloadPath(assetID string) string { return "/files/" + assetID }

// JobPayload is the inputs of BuildJobPayload.
type JobPayload struct {
	DeliveryID string
	Event      string
	CreatedAt  time.Time
	Job        *models.Job
	Outputs    []models.Asset // the job's outputs; used only for a completed job
	Signer     *urlsign.Signer
	// DownloadTTL is the minimum validity of the output URLs at the last automatic attempt.
	DownloadTTL time.Duration
}

// BuildJobPayload renders the JSON body of a job webhook. Output URLs expire DownloadTTL after
// the retry window, rounded up to the hour, so every automatic attempt carries URLs valid at least
// DownloadTTL; a later replay may carry shorter-lived URLs (POST /jobs/{id}/refresh-url renews them).
func BuildJobPayload(p JobPayload) ([]byte, error) {
	j := p.Job
	data := JobData{
		ID: j.ID, OrderID: j.OrderID, JobType: j.JobType, Status: j.Status, ProductRef: j.ProductRef,
		ProductLabel: j.ProductLabel, PackshotAssetID: j.InputAssetID, AIModel: j.AIModel, AspectRatio: j.AspectRatio,
		CreditCost: j.CreditCost, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory, ErrorHint: j.ErrorHint,
		Voting: j.Voting, VotingAt: j.VotingAt, Outputs: []Output{}, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt,
	}
	if j.Status == models.JobCompleted {
		expires := p.CreatedAt.Add(RetryWindow + p.DownloadTTL + time.Hour - time.Nanosecond).Truncate(time.Hour).UTC()
		for _, a := range p.Outputs {
			if a.PurgedAt != nil {
				continue
			}
			data.Outputs = append(data.Outputs, Output{
				AssetID: a.ID, URL: p.Signer.URL(http.MethodGet, downloadPath(a.ID), expires), ContentType: a.ContentType,
				Width: a.Width, Height: a.Height, SizeBytes: a.SizeBytes, ExpiresAt: expires,
			})
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // URLs keep their "&", as in the API's own answers
	if err := enc.Encode(Payload{ID: p.DeliveryID, Type: p.Event, CreatedAt: p.CreatedAt.UTC(), Data: data}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
