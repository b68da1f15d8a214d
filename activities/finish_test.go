package activities_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// runningJob is a job whose first attempt is running, with its credit reserved.
func (f *fixture) runningJob(t *testing.T) models.Job {
	t.Helper()
	job := f.newJob(t, &f.inst.ID, status.JobInProgress)
	if err := f.db.Model(&models.Account{}).Where("id = ?", job.AccountID).
		Update("credits_reserved", gorm.Expr("credits_reserved + 1")).Error; err != nil {
		t.Fatal(err)
	}
	return job
}

func (f *fixture) finish(t *testing.T, in contract.FinishJobInput) contract.RecordWebhookResult {
	t.Helper()
	rec, err := f.acts.FinishJob(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (f *fixture) count(t *testing.T, model any, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := f.db.Model(model).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFinishJobCompletesAndRecordsTheWebhookOnce(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, "https://shop.example/hook")
		job := f.runningJob(t)
		in := contract.FinishJobInput{Complete: &contract.CompleteInput{JobID: job.ID, Run: 1, Outputs: []contract.OutputFile{{
			AssetID: models.OutputAssetID(job.ID, 1, 0), BlobKey: "out", ContentType: "image/png", SizeBytes: 3, Width: 2, Height: 2,
		}}}}
		// The result asks the workflow to start nothing: the activity hands the delivery to its
		// starter after the commit.
		want := models.EventDeliveryID(models.WebhookDeliveryID(job.ID, 1, "job.completed"), f.endpoint.ID)
		if rec := f.finish(t, in); rec != (contract.RecordWebhookResult{}) {
			t.Fatalf("result = %+v, want none", rec)
		}
		if owed := f.starter.take(); len(owed) != 1 || owed[0].ID != want {
			t.Fatalf("started %+v, want delivery %s", owed, want)
		}
		// Executed again (a retried local activity): the same delivery, nothing settled twice.
		if rec := f.finish(t, in); rec != (contract.RecordWebhookResult{}) {
			t.Fatalf("second call = %+v", rec)
		}
		got, err := models.GetJob(db, job.ID)
		if err != nil || got.Status != status.JobCompleted {
			t.Fatalf("job = %+v (%v)", got, err)
		}
		if n := f.count(t, &models.LedgerEntry{}, "job_id = ? AND kind = ?", job.ID, models.LedgerConsume); n != 1 {
			t.Fatalf("%d consume rows, want 1", n)
		}
		// The credits consumed count the job's cost once (the dashboard's credits consumed per hour).
		scraped := metricstest.Serve(t, f.acts.Metrics.WorkerHandler())
		if got := scraped.Value(metrics.CreditsConsumed, map[string]string{"job_type": job.JobType, "livemode": metrics.Live}); got != float64(job.CreditCost) {
			t.Fatalf("credits consumed = %v, want %d", got, job.CreditCost)
		}
		if n := f.count(t, &models.WebhookDelivery{}, "job_id = ?", job.ID); n != 1 {
			t.Fatalf("%d deliveries, want 1", n)
		}
		if d := f.delivery(t, want); d.Event != "job.completed" || d.Status != models.WebhookPending {
			t.Fatalf("delivery = %+v", d)
		}
		if n := f.count(t, &models.Asset{}, "job_id = ? AND kind = ?", job.ID, models.AssetKindOutput); n != 1 {
			t.Fatalf("%d outputs, want 1", n)
		}
	})
}

func TestFinishJobEndsAFailedRunWithItsWebhook(t *testing.T) {
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), "https://shop.example/hook")
	job := f.runningJob(t)
	rec := f.finish(t, contract.FinishJobInput{End: &contract.EndInput{
		JobID: job.ID, Run: 1, Status: status.JobFailed, Category: errorcat.ContentPolicy, Detail: "no",
	}})
	if owed := f.starter.take(); rec.Deliver || len(owed) != 1 || owed[0].EventID != models.WebhookDeliveryID(job.ID, 1, "job.failed") {
		t.Fatalf("result = %+v, started %+v", rec, owed)
	}
	got, err := models.GetJob(f.db, job.ID)
	if err != nil || got.Status != status.JobFailed || got.ErrorCategory == nil || *got.ErrorCategory != string(errorcat.ContentPolicy) {
		t.Fatalf("job = %+v (%v)", got, err)
	}
	if n := f.count(t, &models.LedgerEntry{}, "job_id = ? AND kind = ?", job.ID, models.LedgerRelease); n != 1 {
		t.Fatalf("%d release rows, want 1", n)
	}
}

func TestFinishJobKeepsTheEndWhenTheWebhookCannotBeRecorded(t *testing.T) {
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), "https://shop.example/hook")
	job := f.runningJob(t)
	// Run 2 is not the job's run: nothing ends, the webhook is refused, and that is no error.
	rec := f.finish(t, contract.FinishJobInput{Complete: &contract.CompleteInput{JobID: job.ID, Run: 2}})
	if owed := f.starter.take(); rec.Deliver || rec.DeliveryID != "" || len(owed) != 0 {
		t.Fatalf("result = %+v, started %+v", rec, owed)
	}
	if got, err := models.GetJob(f.db, job.ID); err != nil || got.Status != status.JobInProgress {
		t.Fatalf("job = %+v (%v)", got, err)
	}
	if n := f.count(t, &models.WebhookDelivery{}, "job_id = ?", job.ID); n != 0 {
		t.Fatalf("%d deliveries, want 0", n)
	}
	if _, err := f.acts.FinishJob(context.Background(), contract.FinishJobInput{}); err == nil {
		t.Fatal("FinishJob without Complete or End did not fail")
	}
}

// TestFinishJobRollsBackTheEndWhenTheWebhookRecordFails: a database failure while recording the
// webhook undoes the job's end too, so the retried FinishJob settles it and records its webhook
// together rather than leaving an ended job without its delivery.
func TestFinishJobRollsBackTheEndWhenTheWebhookRecordFails(t *testing.T) {
	f := newFixture(t, testdb.Open(t, testdb.SQLiteURL(t)), "https://shop.example/hook")
	job := f.runningJob(t)
	if err := f.db.Migrator().DropTable(&models.WebhookDelivery{}); err != nil {
		t.Fatal(err)
	}
	_, err := f.acts.FinishJob(context.Background(), contract.FinishJobInput{Complete: &contract.CompleteInput{
		JobID: job.ID, Run: 1, Outputs: []contract.OutputFile{{AssetID: models.OutputAssetID(job.ID, 1, 0), BlobKey: "out", ContentType: "image/png"}},
	}})
	if err == nil {
		t.Fatal("FinishJob succeeded without its webhook table")
	}
	if got, err := models.GetJob(f.db, job.ID); err != nil || got.Status != status.JobInProgress {
		t.Fatalf("job = %+v (%v), want it still in progress", got, err)
	}
	if n := f.count(t, &models.LedgerEntry{}, "job_id = ? AND kind = ?", job.ID, models.LedgerConsume); n != 0 {
		t.Fatalf("%d consume rows, want 0", n)
	}
	if n := f.count(t, &models.Asset{}, "job_id = ? AND kind = ?", job.ID, models.AssetKindOutput); n != 0 {
		t.Fatalf("%d outputs, want 0", n)
	}
}
