package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// FinishJob ends a job run and records its events (the job's, and order.completed when it ended
// its order) with their deliveries in one database transaction (a local activity): CompleteJob or
// EndJob, then RecordJobWebhook, so a job's end costs one transaction and one local-activity
// marker instead of two of each. The account's update, which the settlement owes, is the
// transaction's last statement (models.Store.Tx): the account's row is held for that statement and
// the commit, not over the events' statements too. After the commit it starts the deliveries'
// workflows itself (DeliveryStarter), so the job's history holds no child start for them. Like
// CompleteJob and EndJob it can run again: a run already terminal is left as it is and nothing is
// recorded twice.
//
// The end is never lost for its webhook's sake: a webhook that cannot be recorded for a reason
// that retrying would not change (the run is no longer the job's current one) is logged and left
// out, and the job's end is committed with no delivery. A database failure rolls back both.
func (a *Activities) FinishJob(ctx context.Context, in contract.FinishJobInput) (contract.RecordWebhookResult, error) {
	var endStatus, category string
	var finish func(tx *models.Store) (*models.Job, bool, error)
	var ref contract.RecordWebhookInput
	switch {
	case in.Complete != nil && in.End == nil:
		endStatus, ref = status.JobCompleted, contract.RecordWebhookInput{JobID: in.Complete.JobID, Run: in.Complete.Run}
		finish = func(tx *models.Store) (*models.Job, bool, error) { return completeJob(ctx, tx, *in.Complete) }
	case in.End != nil && in.Complete == nil:
		endStatus, category, ref = in.End.Status, string(in.End.Category), contract.RecordWebhookInput{JobID: in.End.JobID, Run: in.End.Run}
		finish = func(tx *models.Store) (*models.Job, bool, error) { return endJob(ctx, tx, *in.End) }
	default:
		return contract.RecordWebhookResult{}, temporal.NewNonRetryableApplicationError("FinishJob needs exactly one of Complete and End", "BAD_INPUT", nil)
	}
	var owed []models.WebhookDelivery
	finished, test := false, false
	var ended *models.Job
	err := a.Store.Tx(ctx, func(tx *models.Store) error {
		// The job as its end left it, read once by the end's UPDATE, is what the webhook reports.
		job, ok, err := finish(tx)
		if err != nil {
			return err
		}
		finished, test, ended = ok, job != nil && job.TestMode, job
		owed, err = a.recordWebhookInTx(ctx, tx, ref, job)
		return err
	})
	if err != nil {
		return contract.RecordWebhookResult{}, err
	}
	if finished {
		a.Metrics.JobFinished(endStatus, category, test)
		if endStatus == status.JobCompleted && ended != nil {
			a.Metrics.CreditsConsumed(ended.JobType, ended.TestMode, ended.CreditCost)
		}
	}
	a.startDeliveries(ctx, owed)
	return contract.RecordWebhookResult{}, nil
}

// recordWebhookInTx records the run's webhook of job (the job of ref as tx has just left it) in a
// savepoint of tx. A non-retryable refusal is logged and answered with no delivery; any other
// error fails the whole transaction.
func (a *Activities) recordWebhookInTx(ctx context.Context, tx *models.Store, ref contract.RecordWebhookInput, job *models.Job) ([]models.WebhookDelivery, error) {
	var owed []models.WebhookDelivery
	err := tx.Tx(ctx, func(sp *models.Store) error {
		var err error
		owed, err = a.recordJobEnd(ctx, sp, ref, job)
		return err
	})
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		a.Log.Error("job webhook not recorded", zap.String("job_id", ref.JobID), zap.Int("run", ref.Run), zap.Error(err))
		return nil, nil
	}
	return owed, err
}
