package webhooks

import (
	"fmt"
	"time"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// The bodies of the events beside the job events (docs/webhooks.md). Every body starts with the
// same three fields as a job event's: event, delivery_id (the webhook-id: the event's ID) and
// delivery_created_at; and every body has livemode, false for an event of test mode (a job event
// has it among the job's fields).

// header is the three fields every body starts with.
type header struct {
	Event             string    `json:"event"`
	DeliveryID        string    `json:"delivery_id"`
	DeliveryCreatedAt time.Time `json:"delivery_created_at"`
}

// livemode is the last field of a body beside the job events'.
type livemode struct {
	Livemode bool `json:"livemode"`
}

// OrderSummary is the order in an order.completed body.
type OrderSummary struct {
	ID          string       `json:"id"`
	Status      string       `json:"status"`
	JobsTotal   int          `json:"jobs_total"`
	Jobs        OrderJobs    `json:"jobs"`
	Credits     OrderCredits `json:"credits"`
	CompletedAt *time.Time   `json:"completed_at"`
	Livemode    bool         `json:"livemode"` // false for a test key's order
}

// OrderJobs counts an ended order's jobs by how they ended.
type OrderJobs struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Expired   int `json:"expired"`
}

// OrderCredits are an ended order's credits: reserved at acceptance, consumed by completed jobs,
// released by the others.
type OrderCredits struct {
	Reserved int64 `json:"reserved"`
	Consumed int64 `json:"consumed"`
	Released int64 `json:"released"`
}

// BuildOrderPayload renders the body of order.completed for an ended order.
func BuildOrderPayload(eventID string, at time.Time, o *models.Order) ([]byte, error) {
	return encode(struct {
		header
		Order OrderSummary `json:"order"`
		livemode
	}{header{EventOrderCompleted, eventID, at.UTC()}, OrderSummary{
		ID: o.ID, Status: o.Status, JobsTotal: o.JobsTotal,
		Jobs:        OrderJobs{Completed: o.JobsCompleted, Failed: o.JobsFailed, Cancelled: o.JobsCancelled, Expired: o.JobsExpired},
		Credits:     OrderCredits{Reserved: o.CreditsReserved, Consumed: o.CreditsConsumed, Released: o.CreditsReleased},
		CompletedAt: utc(o.CompletedAt), Livemode: !o.TestMode,
	}, livemode{!o.TestMode}})
}

// RecordItem is a record of the external API in a record.done or record.failed body, with the
// fields its list routes show (api/external/openapi.yaml, RecordItem) and its kind.
type RecordItem struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"` // model, scenery, packshot, image or video
	Name      string    `json:"name"`
	Thumbnail string    `json:"thumbnail"` // signed URL of the first output once DONE, else ""
	Status    string    `json:"status"`    // DONE or FAILED
	Voting    *string   `json:"voting"`    // null: not rated yet
	CreatedAt time.Time `json:"createdAt"`
	// CancelReason is why the job behind a FAILED record was cancelled: "requested" (DELETE
	// /orders/{id}) or "deadline" (its Cancel-After); null when it was not cancelled.
	CancelReason *string `json:"cancelReason"`
	Livemode     bool    `json:"livemode"` // false for a test key's record
}

// RecordItemOf is the record of job j as the external lists show it: named name ("" takes the
// job's label, else its product reference), its thumbnail the first stored output signed until
// expires once the job has completed (urls nil: none).
func RecordItemOf(j *models.Job, name string, outputs []models.Asset, urls *fileurl.Maker, expires time.Time) RecordItem {
	rec := RecordItem{ID: j.ID, Kind: RecordKind(j.JobType), Name: name, Status: models.RecordStatus(j.Status),
		CreatedAt: j.CreatedAt.UTC(), Livemode: !j.TestMode}
	if j.Status == status.JobCancelled {
		rec.CancelReason = j.CancelReason
	}
	if rec.Name == "" {
		rec.Name = j.ProductLabel
	}
	if j.RecordID != nil {
		rec.ID = *j.RecordID
	}
	if rec.Name == "" {
		rec.Name = j.ProductRef
	}
	if j.Status == status.JobCompleted && urls != nil {
		for _, a := range outputs {
			if a.PurgedAt == nil {
				rec.Thumbnail, _ = urls.File(fileurl.File{AssetID: a.ID, Key: a.BlobKey, ContentType: a.ContentType}, expires)
				break
			}
		}
	}
	return rec
}

// RecordKind is the record kind of a job type in the external API's vocabulary.
func RecordKind(jobType string) string {
	switch jobType {
	case jobtype.ModelIdea:
		return "model"
	case jobtype.SceneryIdea:
		return "scenery"
	case jobtype.Packshot:
		return "packshot"
	case jobtype.Video, jobtype.Reel:
		return "video"
	}
	return "image"
}

// RecordPayload is the inputs of BuildRecordPayload.
type RecordPayload struct {
	DeliveryID  string
	Event       string
	CreatedAt   time.Time
	Job         *models.Job
	Name        string         // the record's name as the lists show it; "" takes the job's label, else its product reference
	Outputs     []models.Asset // the job's outputs; used only for a completed job
	Signer      *urlsign.Signer
	Files       *fileurl.Maker // the output URLs' maker; nil: the API's, signed by Signer
	DownloadTTL time.Duration
}

// BuildRecordPayload renders the body of record.done or record.failed: the job's record (under its
// record ID when the job made one, else the job's ID, as the lists show it) and its order.
func BuildRecordPayload(p RecordPayload) ([]byte, error) {
	expires := p.CreatedAt.Add(RetryWindow + p.DownloadTTL + time.Hour - time.Nanosecond).Truncate(time.Hour).UTC()
	j := p.Job
	rec := RecordItemOf(j, p.Name, p.Outputs, fileurl.Of(p.Files, p.Signer), expires)
	return encode(struct {
		header
		OrderID string     `json:"order_id"`
		Record  RecordItem `json:"record"`
		livemode
	}{header{p.Event, p.DeliveryID, p.CreatedAt.UTC()}, j.OrderID, rec, livemode{!j.TestMode}})
}

// sampleMessage is the message of a webhook.test body.
const sampleMessage = "This is a test event from shotflow."

// SamplePayload renders the body of a test send of event to ep, an endpoint of a scope in live
// mode (live) or in test mode: webhook.test, or a sample of another event type of the endpoint's
// API with made-up IDs, in the endpoint's mode. Every test body has "test": true.
func SamplePayload(event, eventID string, at time.Time, ep *models.WebhookEndpoint, live bool) ([]byte, error) {
	h := header{event, eventID, at.UTC()}
	mode := livemode{live}
	sampleID := models.EventID(eventID, "sample")
	switch event {
	case EventWebhookTest:
		return encode(struct {
			header
			Test       bool   `json:"test"`
			EndpointID string `json:"endpoint_id"`
			Message    string `json:"message"`
			livemode
		}{h, true, ep.ID, sampleMessage, mode})
	case EventJobStarted, EventJobRetrying, EventJobCompleted, EventJobFailed, EventJobCancelled:
		job := sampleJob(event, sampleID, at)
		job.Livemode = live
		var retry *Retry
		if event == EventJobRetrying {
			retry = &Retry{Attempt: 1, ErrorCategory: "PROVIDER_CAPACITY", NextAttemptAt: at.Add(5 * time.Second).UTC()}
		}
		return encode(struct {
			Payload
			Test bool `json:"test"`
		}{Payload{Event: event, DeliveryID: eventID, DeliveryCreatedAt: at.UTC(), Job: job, Retry: retry}, true})
	case EventOrderCompleted:
		done := at.UTC()
		return encode(struct {
			header
			Test  bool         `json:"test"`
			Order OrderSummary `json:"order"`
			livemode
		}{h, true, OrderSummary{ID: sampleID, Status: status.OrderCompleted, JobsTotal: 1, Jobs: OrderJobs{Completed: 1},
			Credits: OrderCredits{Reserved: 1, Consumed: 1}, CompletedAt: &done, Livemode: live}, mode})
	case EventRecordDone, EventRecordFailed:
		st := models.RefStatusDone
		if event == EventRecordFailed {
			st = models.RefStatusFailed
		}
		return encode(struct {
			header
			Test    bool       `json:"test"`
			OrderID string     `json:"order_id"`
			Record  RecordItem `json:"record"`
			livemode
		}{h, true, models.EventID(eventID, "sample-order"), RecordItem{ID: sampleID, Kind: "image", Name: "Sample product",
			Status: st, CreatedAt: at.UTC(), Livemode: live}, mode})
	case EventEndpointDisabled:
		sample := EndpointOf(ep, live)
		sample.Status = models.EndpointDisabled
		reason := models.EndpointDisabledFailing
		sample.DisabledReason, sample.DisabledAt, sample.FailingSince = &reason, &h.DeliveryCreatedAt, &h.DeliveryCreatedAt
		return encode(struct {
			header
			Test     bool     `json:"test"`
			Endpoint Endpoint `json:"endpoint"`
			livemode
		}{h, true, sample, mode})
	case EventCreditsLow, EventSpendLimitAlert, EventSpendLimitReached:
		return sampleAlertPayload(event, eventID, at, ep.InstallationID != nil, live)
	}
	return nil, fmt.Errorf("webhooks: no sample of event %q", event)
}

// sampleJob is the made-up job of a sample job event.
func sampleJob(event, id string, at time.Time) jobview.Job {
	at = at.UTC()
	j := jobview.Job{ID: id, OrderID: models.EventID(id, "order"), JobType: jobtype.PhotoShoot, Status: status.JobInProgress,
		ProductRef: "SAMPLE-SKU", ProductLabel: "Sample product", AIModel: "sample-model", AspectRatio: "1:1",
		CreditCost: 1, AttemptCount: 1, Voting: "pending", Outputs: []jobview.Output{}, CreatedAt: at, UpdatedAt: at, StartedAt: &at}
	switch event {
	case EventJobRetrying:
		j.Status = status.JobRetryPending
	case EventJobCompleted:
		j.Status, j.CompletedAt = status.JobCompleted, &at
	case EventJobFailed:
		category, hint := "CONTENT_POLICY", "The provider refused the content; change the product photo or the prompt."
		j.Status, j.ErrorCategory, j.ErrorHint, j.CompletedAt = status.JobFailed, &category, &hint, &at
	case EventJobCancelled:
		reason := status.CancelRequested
		j.Status, j.CompletedAt, j.AttemptCount, j.StartedAt, j.CancelReason = status.JobCancelled, &at, 0, nil, &reason
	}
	return j
}
