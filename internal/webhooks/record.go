package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// ErrJobNotTerminal: RecordJobDelivery was asked about a job run that has not ended, or that a
// newer run has superseded. Retrying does not change that.
var ErrJobNotTerminal = errors.New("not a terminal run")

// RecordedDelivery is the delivery of a job run's event. Deliver is false when there is nothing
// to send: the job belongs to no plugin installation (external API) or the installation has no
// callback URL. The IDs name what the delivery's workflow is started with.
type RecordedDelivery struct {
	DeliveryID     string
	Deliver        bool
	AccountID      string
	InstallationID string
	OrderID        string
}

// RecordJobDelivery creates through st (a transaction of the caller's, or none) the delivery row of
// the terminal run of a job, with its payload fixed at this moment: the job, its outputs when it
// completed (their URLs signed by signer, valid downloadTTL after the last automatic attempt), and
// the installation's callback URL. The delivery's ID is derived from the job, run
// and event and an existing row is returned as it is, so a repeated call records nothing new. A
// run that has not ended or is no longer the job's current one is refused with ErrJobNotTerminal.
//
// A job's workflow records its webhook through the activities (RecordJobWebhook, FinishJob);
// support's re-drive of a stranded job records it here too, outside any workflow.
func RecordJobDelivery(ctx context.Context, st *models.Store, signer *urlsign.Signer, downloadTTL time.Duration, jobID string, run int) (RecordedDelivery, error) {
	job, err := st.GetJob(ctx, jobID)
	if err != nil {
		return RecordedDelivery{}, fmt.Errorf("load job %s: %w", jobID, err)
	}
	return RecordJobDeliveryOf(ctx, st, signer, downloadTTL, job, run)
}

// RecordJobDeliveryOf is RecordJobDelivery of a job the caller has just read or written through st
// (the job as the end of its run left it, CompleteJob or EndJob), which it does not read again.
func RecordJobDeliveryOf(ctx context.Context, st *models.Store, signer *urlsign.Signer, downloadTTL time.Duration, job *models.Job, run int) (RecordedDelivery, error) {
	event, terminal := EventForStatus(job.Status)
	if !terminal || job.Run != run {
		return RecordedDelivery{}, fmt.Errorf("job %s run %d is %w (status %s, current run %d)", job.ID, run, ErrJobNotTerminal, job.Status, job.Run)
	}
	if job.InstallationID == nil {
		return RecordedDelivery{}, nil
	}
	inst, err := st.GetInstallation(ctx, *job.InstallationID)
	if err != nil {
		return RecordedDelivery{}, fmt.Errorf("load installation: %w", err)
	}
	res := RecordedDelivery{AccountID: job.AccountID, InstallationID: inst.ID, OrderID: job.OrderID}
	if inst.CallbackURL == "" {
		return res, nil
	}
	res.DeliveryID, res.Deliver = models.WebhookDeliveryID(job.ID, job.Run, event), true
	if _, err := st.GetWebhookDelivery(ctx, res.DeliveryID); err == nil {
		return res, nil // recorded by an earlier call
	} else if !errors.Is(err, models.ErrNotFound) {
		return RecordedDelivery{}, err
	}
	var outputs []models.Asset
	if job.Status == status.JobCompleted {
		byJob, err := st.JobOutputs(ctx, job.ID)
		if err != nil {
			return RecordedDelivery{}, fmt.Errorf("load outputs: %w", err)
		}
		outputs = byJob[job.ID]
	}
	// Microseconds, as PostgreSQL stores the row's created_at: the payload's delivery_created_at
	// is the recorded delivery's creation time exactly.
	now := time.Now().UTC().Truncate(time.Microsecond)
	payload, err := BuildJobPayload(JobPayload{
		DeliveryID: res.DeliveryID, Event: event, CreatedAt: now, Job: job, Outputs: outputs,
		Signer: signer, DownloadTTL: downloadTTL,
	})
	if err != nil {
		return RecordedDelivery{}, err
	}
	_, err = st.CreateWebhookDelivery(ctx, &models.WebhookDelivery{
		ID: res.DeliveryID, EventID: res.DeliveryID, AccountID: job.AccountID, InstallationID: &inst.ID, OrderID: &job.OrderID, JobID: &job.ID,
		Run: job.Run, Event: event, Payload: models.JSON(payload), CallbackURL: inst.CallbackURL, CreatedAt: now,
	})
	return res, err
}
