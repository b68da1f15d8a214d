package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// placeJobs places an order of the fixture's installation with one job per start deadline (nil:
// none), each reserving 1 credit.
func (f *fixture) placeJobs(t *testing.T, deadlines ...*time.Time) []models.Job {
	t.Helper()
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: &f.inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: len(deadlines),
		CreatedAt: now, UpdatedAt: now}
	jobs := make([]models.Job, len(deadlines))
	for i, d := range deadlines {
		jobs[i] = models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
			JobType: jobtype.PhotoShoot, Position: i, ProductRef: "mug-01", AIModel: "local/studio-v1", AspectRatio: "1:1",
			CreditCost: 1, Run: 1, Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now,
			StartDeadline: d}
	}
	if err := models.PlaceOrder(f.db, &order, jobs, nil); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// BeginAttempt never begins a job whose start deadline (Cancel-After) passed before its first
// attempt: it cancels it (reason deadline, reservation released, job.cancelled recorded and its
// delivery handed to the DeliveryStarter, counted) and answers not runnable, so that the job's
// workflow ends as for a client's cancel. Asked again, it answers the same and records nothing
// more. A job whose deadline is ahead begins; one that began before its deadline passed begins its
// next attempts after it.
func TestBeginAttemptRefusesAJobPastItsDeadline(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newFixture(t, db, "http://127.0.0.1:1/hooks")
		now := time.Now().UTC()
		past, ahead := now.Add(-time.Second), now.Add(time.Hour)
		jobs := f.placeJobs(t, &past, &ahead, &ahead)
		late, early, begun := jobs[0], jobs[1], jobs[2]

		for range 2 {
			err := f.acts.BeginAttempt(ctx, contract.AttemptInput{JobID: late.ID, Run: 1, Attempt: 1})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != contract.ErrTypeJobNotRunnable || !appErr.NonRetryable() {
				t.Fatalf("BeginAttempt of a job past its deadline = %v, want non-retryable %s", err, contract.ErrTypeJobNotRunnable)
			}
		}
		j, err := models.GetJob(db, late.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != status.JobCancelled || j.CancelReason == nil || *j.CancelReason != status.CancelDeadline ||
			j.StartedAt != nil || j.AttemptCount != 0 {
			t.Fatalf("job past its deadline = %+v", j)
		}
		var ledger []models.LedgerEntry
		if err := db.Where("job_id = ?", late.ID).Order("kind").Find(&ledger).Error; err != nil {
			t.Fatal(err)
		}
		if len(ledger) != 2 || ledger[0].Kind != models.LedgerRelease || ledger[1].Kind != models.LedgerReserve {
			t.Fatalf("ledger of the cancelled job = %+v, want its reservation and one release", ledger)
		}
		owed := f.starter.take()
		if len(owed) != 1 || owed[0].Event != webhooks.EventJobCancelled || owed[0].Job() != late.ID || owed[0].EndpointID == nil ||
			*owed[0].EndpointID != f.endpoint.ID {
			t.Fatalf("deliveries handed to the starter = %+v, want the one job.cancelled", owed)
		}
		scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
		if got := scraped.Value(metrics.JobsDeadlineCancelled, map[string]string{"by": metrics.DeadlineByAttempt}); got != 1 {
			t.Errorf("deadline cancels by attempt = %v, want 1", got)
		}
		if got := scraped.Value(metrics.JobsFinished, map[string]string{"status": status.JobCancelled}); got != 1 {
			t.Errorf("cancelled jobs = %v, want 1", got)
		}

		// A deadline ahead: the attempt begins.
		if err := f.acts.BeginAttempt(ctx, contract.AttemptInput{JobID: early.ID, Run: 1, Attempt: 1}); err != nil {
			t.Fatalf("BeginAttempt before the deadline: %v", err)
		}
		if j, _ := models.GetJob(db, early.ID); j.Status != status.JobInProgress || j.StartedAt == nil || j.CancelReason != nil {
			t.Fatalf("job begun before its deadline = %+v", j)
		}
		// Begun before its deadline passed: its next attempt begins after it.
		if err := f.acts.BeginAttempt(ctx, contract.AttemptInput{JobID: begun.ID, Run: 1, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.Job{}).Where("id = ?", begun.ID).Update("start_deadline", now.Add(-time.Minute)).Error; err != nil {
			t.Fatal(err)
		}
		if err := f.acts.BeginAttempt(ctx, contract.AttemptInput{JobID: begun.ID, Run: 1, Attempt: 2}); err != nil {
			t.Fatalf("the second attempt of a started job past its deadline: %v", err)
		}
		if j, _ := models.GetJob(db, begun.ID); j.Status != status.JobInProgress || j.AttemptCount != 2 || j.CancelReason != nil {
			t.Fatalf("started job = %+v", j)
		}
	})
}
