package webhooks

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Event types of job ends (api/openapi.yaml, webhooks). An expired job is reported as job.failed,
// with status "expired": the API names three kinds and expiry is a failure to run. The other event
// types are in events.go.
const (
	EventJobCompleted = "job.completed"
	EventJobFailed    = "job.failed"
	EventJobCancelled = "job.cancelled"
)

// EventForStatus returns the event type of a terminal job status; ok is false for a job that is
// not terminal.
func EventForStatus(jobStatus string) (event string, ok bool) {
	switch jobStatus {
	case status.JobCompleted:
		return EventJobCompleted, true
	case status.JobFailed, status.JobExpired:
		return EventJobFailed, true
	case status.JobCancelled:
		return EventJobCancelled, true
	}
	return "", false
}

// Payload is the JSON body of a job webhook (docs/webhooks.md): the job with the same fields as
// GET /api/v1/plugin/jobs/{id} (the embedded jobview.Job, so the two cannot drift apart), and
// beside them what says which notification this is. The notification's own fields are named so
// that none hides a field of the job: the job already has "id" and "created_at".
type Payload struct {
	Event             string    `json:"event"`               // the event type
	DeliveryID        string    `json:"delivery_id"`         // also sent as webhook-id
	DeliveryCreatedAt time.Time `json:"delivery_created_at"` // when the notification was created
	jobview.Job
	// Retry is set on job.retrying: the attempt that failed and when the next one is due.
	Retry *Retry `json:"retry,omitempty"`
}

// Retry is what job.retrying says about the failed attempt and the next one.
type Retry struct {
	Attempt       int       `json:"attempt"`
	ErrorCategory string    `json:"error_category"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
}

// Output is a generated file with its signed download URL.
type Output = jobview.Output

// RetryWindow is how long after its creation a delivery may still be attempted automatically
// (the whole retry schedule, with jitter, fits in it). Download URLs in a payload stay valid for
// the download TTL after the end of this window.
const RetryWindow = 48 * time.Hour

// JobPayload is the inputs of BuildJobPayload.
type JobPayload struct {
	DeliveryID string
	Event      string
	CreatedAt  time.Time
	Job        *models.Job
	Outputs    []models.Asset // the job's outputs; used only for a completed job
	Retry      *Retry         // job.retrying only
	Signer     *urlsign.Signer
	Files      *fileurl.Maker // the output URLs' maker; nil: the API's, signed by Signer
	// DownloadTTL is the minimum validity of the output URLs at the last automatic attempt.
	DownloadTTL time.Duration
}

// BuildJobPayload renders the JSON body of a job webhook. Output URLs expire DownloadTTL after
// the retry window, rounded up to the hour, so every automatic attempt carries URLs valid at least
// DownloadTTL; a later replay may carry shorter-lived URLs (POST /jobs/{id}/refresh-url renews them).
func BuildJobPayload(p JobPayload) ([]byte, error) {
	expires := p.CreatedAt.Add(RetryWindow + p.DownloadTTL + time.Hour - time.Nanosecond).Truncate(time.Hour).UTC()
	return encode(Payload{
		Event: p.Event, DeliveryID: p.DeliveryID, DeliveryCreatedAt: p.CreatedAt.UTC(),
		Job: jobview.New(p.Job, p.Outputs, fileurl.Of(p.Files, p.Signer), expires), Retry: p.Retry,
	})
}

// encode renders a payload as compact JSON without HTML escaping: URLs keep their "&", as in the
// API's own answers.
func encode(p any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
