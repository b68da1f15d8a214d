package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// ErrJobNotTerminal: RecordJobEnd was asked about a job run that has not ended, or that a newer
// run has superseded. Retrying does not change that.
var ErrJobNotTerminal = errors.New("not a terminal run")

// Recorder records the events of jobs, orders and endpoints (docs/webhooks.md) through a store (a
// transaction of the caller's, or none): each event once, with its body fixed at that moment, and
// one delivery per endpoint that subscribed. What it returns are the deliveries whose workflow
// start is owed; the caller starts them after its commit (engine.Outbox, or the activities'
// starter), and the outbox sweep starts any it could not.
type Recorder struct {
	Signer *urlsign.Signer // signs the output URLs in job payloads
	// Files makes those URLs (nil: the API's, signed by Signer). A payload's URLs outlast the
	// retry window by DownloadTTL, longer than a store signs: they are the API's unless Files
	// makes URLs under a public base.
	Files       *fileurl.Maker
	DownloadTTL time.Duration // minimum validity of those URLs at the last automatic attempt
}

// jobEvent is an event about job, in the job's scope: its installation's (plugin API) or its
// account's own (external API).
func jobEvent(job *models.Job, id, typ string, payload []byte, at time.Time) *models.WebhookEvent {
	order, jobID := job.OrderID, job.ID
	return &models.WebhookEvent{ID: id, AccountID: job.AccountID, InstallationID: job.InstallationID, Type: typ,
		Payload: models.JSON(payload), OrderID: &order, JobID: &jobID, CreatedAt: at}
}

// now is the creation time of an event: microseconds, as PostgreSQL stores it, so that a payload's
// delivery_created_at is the recorded event's created_at exactly.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// RecordJobEnd records the event of the terminal run of a job: for a plugin installation's job
// job.completed, job.failed or job.cancelled with the job (and its outputs when it completed); for
// an external account's job record.done or record.failed with its record. When the job's end ended
// its order, order.completed follows. The event's ID is derived from the job, run and event type
// (the ID its only delivery had before endpoints existed), so a repeated call records nothing new.
// A run that has not ended or is no longer the job's current one is refused with
// ErrJobNotTerminal.
func (r Recorder) RecordJobEnd(ctx context.Context, st *models.Store, job *models.Job, run int) ([]models.WebhookDelivery, error) {
	event, terminal := EventForStatus(job.Status)
	if !terminal || job.Run != run {
		return nil, fmt.Errorf("job %s run %d is %w (status %s, current run %d)", job.ID, run, ErrJobNotTerminal, job.Status, job.Run)
	}
	var (
		ev  *models.WebhookEvent
		err error
	)
	if job.InstallationID == nil {
		ev, err = r.externalRecordEvent(ctx, st, job)
	} else {
		ev, err = r.jobEvent(ctx, st, job, event, nil)
	}
	if err != nil {
		return nil, err
	}
	events := []*models.WebhookEvent{ev}
	ended, err := orderEndEvent(ctx, st, job.OrderID)
	if err != nil {
		return nil, err
	}
	if ended != nil {
		events = append(events, ended)
	}
	// Both events in one insert, with one read of the scope's endpoints.
	return st.RecordEvents(ctx, events, models.EventDeliveries{Run: job.Run})
}

// RecordJobEndByID is RecordJobEnd of the job read by its ID.
func (r Recorder) RecordJobEndByID(ctx context.Context, st *models.Store, jobID string, run int) ([]models.WebhookDelivery, error) {
	job, err := st.GetJob(ctx, jobID)
	if err != nil {
		return nil, fmt.Errorf("load job %s: %w", jobID, err)
	}
	return r.RecordJobEnd(ctx, st, job, run)
}

// RecordJobStarted records job.started when the first attempt of a plugin job's run begins; an
// external account's job has no such event.
func (r Recorder) RecordJobStarted(ctx context.Context, st *models.Store, job *models.Job) ([]models.WebhookDelivery, error) {
	if job.InstallationID == nil {
		return nil, nil
	}
	return r.recordJobEvent(ctx, st, job, EventJobStarted, nil)
}

// RecordJobRetrying records job.retrying after a retryable failure of a plugin job's attempt: the
// attempt that failed, its category and when the next one is due.
func (r Recorder) RecordJobRetrying(ctx context.Context, st *models.Store, job *models.Job, retry Retry) ([]models.WebhookDelivery, error) {
	if job.InstallationID == nil {
		return nil, nil
	}
	return r.recordJobEvent(ctx, st, job, EventJobRetrying, &retry)
}

// recordJobEvent records a job event of a plugin installation's job with the job as its payload.
func (r Recorder) recordJobEvent(ctx context.Context, st *models.Store, job *models.Job, event string, retry *Retry) ([]models.WebhookDelivery, error) {
	ev, err := r.jobEvent(ctx, st, job, event, retry)
	if err != nil {
		return nil, err
	}
	return st.RecordEvent(ctx, ev, models.EventDeliveries{Run: job.Run})
}

// jobEvent is a job event of a plugin installation's job with the job as its payload (and its
// outputs on job.completed).
func (r Recorder) jobEvent(ctx context.Context, st *models.Store, job *models.Job, event string, retry *Retry) (*models.WebhookEvent, error) {
	id := models.WebhookDeliveryID(job.ID, job.Run, event)
	if retry != nil {
		id = models.EventID(job.ID, strconv.Itoa(job.Run), event, strconv.Itoa(retry.Attempt))
	}
	var outputs []models.Asset
	if job.Status == status.JobCompleted && event == EventJobCompleted {
		byJob, err := st.JobOutputs(ctx, job.ID)
		if err != nil {
			return nil, fmt.Errorf("load outputs: %w", err)
		}
		outputs = byJob[job.ID]
	}
	at := now()
	payload, err := BuildJobPayload(JobPayload{
		DeliveryID: id, Event: event, CreatedAt: at, Job: job, Outputs: outputs, Retry: retry,
		Signer: r.Signer, Files: r.Files, DownloadTTL: r.DownloadTTL,
	})
	if err != nil {
		return nil, err
	}
	return jobEvent(job, id, event, payload, at), nil
}

// externalRecordEvent is record.done or record.failed for an external account's job.
func (r Recorder) externalRecordEvent(ctx context.Context, st *models.Store, job *models.Job) (*models.WebhookEvent, error) {
	event := EventRecordFailed
	var outputs []models.Asset
	if job.Status == status.JobCompleted {
		event = EventRecordDone
		byJob, err := st.JobOutputs(ctx, job.ID)
		if err != nil {
			return nil, fmt.Errorf("load outputs: %w", err)
		}
		outputs = byJob[job.ID]
	}
	// A job of a product is listed under the product's name: read it as the lists do.
	name := ""
	if job.ProductID != nil {
		var err error
		if name, err = st.RecordNameOfJob(ctx, job.ID); err != nil {
			return nil, fmt.Errorf("record name: %w", err)
		}
	}
	id := models.WebhookDeliveryID(job.ID, job.Run, event)
	at := now()
	payload, err := BuildRecordPayload(RecordPayload{DeliveryID: id, Event: event, CreatedAt: at, Job: job, Name: name,
		Outputs: outputs, Signer: r.Signer, Files: r.Files, DownloadTTL: r.DownloadTTL})
	if err != nil {
		return nil, err
	}
	return jobEvent(job, id, event, payload, at), nil
}

// orderEndEvent is order.completed of the order when it has ended (every job terminal), else nil.
// Its ID is derived from the order, so only the first recording of it for an ended order counts.
func orderEndEvent(ctx context.Context, st *models.Store, orderID string) (*models.WebhookEvent, error) {
	o, err := st.GetOrder(ctx, orderID)
	if err != nil {
		return nil, fmt.Errorf("load order %s: %w", orderID, err)
	}
	if o.Status == status.OrderInProgress || o.Status == "" {
		return nil, nil
	}
	id := models.EventID(o.ID, EventOrderCompleted)
	at := now()
	payload, err := BuildOrderPayload(id, at, o)
	if err != nil {
		return nil, err
	}
	return &models.WebhookEvent{ID: id, AccountID: o.AccountID, InstallationID: o.InstallationID,
		Type: EventOrderCompleted, Payload: models.JSON(payload), OrderID: &o.ID, CreatedAt: at}, nil
}

// RecordEndpointDisabled records endpoint.disabled for an endpoint that was just disabled, sent to
// the other enabled endpoints of its scope that subscribed to it, in the mode of its scope.
func RecordEndpointDisabled(ctx context.Context, st *models.Store, ep *models.WebhookEndpoint) ([]models.WebhookDelivery, error) {
	test, err := st.AccountTestMode(ctx, ep.AccountID)
	if err != nil {
		return nil, fmt.Errorf("mode of endpoint %s: %w", ep.ID, err)
	}
	id := models.NewID()
	at := now()
	payload, err := encode(struct {
		header
		Endpoint Endpoint `json:"endpoint"`
		livemode
	}{header{EventEndpointDisabled, id, at}, EndpointOf(ep, !test), livemode{!test}})
	if err != nil {
		return nil, err
	}
	return st.RecordEvent(ctx, &models.WebhookEvent{ID: id, AccountID: ep.AccountID, InstallationID: ep.InstallationID,
		Type: EventEndpointDisabled, Payload: models.JSON(payload), CreatedAt: at}, models.EventDeliveries{Except: ep.ID})
}

// RecordTestEvent records a test send of event (webhook.test, or a sample of another type of the
// endpoint's API) to the endpoint only, marked as a test, in the mode of the endpoint's scope
// (live, or test mode), and returns the event and its delivery.
func RecordTestEvent(ctx context.Context, st *models.Store, ep *models.WebhookEndpoint, event string, live bool) (*models.WebhookEvent, []models.WebhookDelivery, error) {
	id := models.NewID()
	at := now()
	payload, err := SamplePayload(event, id, at, ep, live)
	if err != nil {
		return nil, nil, err
	}
	ev := &models.WebhookEvent{ID: id, AccountID: ep.AccountID, InstallationID: ep.InstallationID, Type: event,
		Payload: models.JSON(payload), Test: true, CreatedAt: at}
	owed, err := st.RecordEvent(ctx, ev, models.EventDeliveries{Only: ep.ID})
	return ev, owed, err
}
