package models_test

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// candidateFixture is an installation with a product and an order of one job per job type.
type candidateFixture struct {
	acc     *models.Account
	inst    *models.Installation
	product models.Product
	order   models.Order
}

func newCandidateFixture(t *testing.T, db *gorm.DB) *candidateFixture {
	t.Helper()
	acc, err := models.CreateAccount(db, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.NewBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f := &candidateFixture{acc: acc, inst: &created.Installation}
	f.product = models.Product{ID: models.NewID(), AccountID: acc.ID, InstallationID: &f.inst.ID, ExternalRef: "mug",
		DisplayName: "Mug", CreatedAt: now, UpdatedAt: now}
	f.order = models.Order{ID: models.NewID(), AccountID: acc.ID, InstallationID: &f.inst.ID, API: models.APIPlugin,
		JobType: jobtype.Packshot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 10,
		CreatedAt: now, UpdatedAt: now}
	for _, v := range []any{&f.product, &f.order} {
		if err := db.Create(v).Error; err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// job stores a pending job of the order (free, so no reservation is needed to settle it).
func (f *candidateFixture) job(t *testing.T, db *gorm.DB, jobType string, withProduct bool) models.Job {
	t.Helper()
	now := time.Now().UTC()
	j := models.Job{ID: models.NewID(), OrderID: f.order.ID, AccountID: f.acc.ID, InstallationID: &f.inst.ID,
		JobType: jobType, ProductRef: "mug", AIModel: "local/studio-v1", AspectRatio: "1:1", Run: 1,
		Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if withProduct {
		j.ProductID = &f.product.ID
	}
	if err := db.Create(&j).Error; err != nil {
		t.Fatal(err)
	}
	return j
}

// outputs are the files of a job run, given in reverse position order.
func (f *candidateFixture) outputs(j models.Job, n int) []models.Asset {
	now := time.Now().UTC()
	out := make([]models.Asset, 0, n)
	for pos := n - 1; pos >= 0; pos-- {
		out = append(out, models.Asset{ID: models.OutputAssetID(j.ID, j.Run, pos), AccountID: f.acc.ID,
			InstallationID: &f.inst.ID, Kind: models.AssetKindOutput, Status: status.AssetReady, ContentType: "image/png",
			BlobKey: models.OutputBlobKey(&j, pos, ".png"), JobID: &j.ID, Position: pos, CreatedAt: now, UpdatedAt: now})
	}
	return out
}

func TestCompletedPackshotJobAddsAPendingCandidate(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		j := f.job(t, db, jobtype.Packshot, true)
		before := time.Now().UTC().Add(-time.Second)
		for range 2 { // a replayed completion adds nothing
			if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 2)); err != nil {
				t.Fatal(err)
			}
		}
		var got []models.Packshot
		if err := db.Where("product_id = ?", f.product.ID).Find(&got).Error; err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("product has %d packshots after the packshot job completed, want 1: %+v", len(got), got)
		}
		p := got[0]
		if p.ID != models.PackshotCandidateID(j.ID, j.Run) || p.AssetID != models.OutputAssetID(j.ID, j.Run, 0) ||
			p.Voting != models.VotingPending || p.VotingAt != nil || p.JobID == nil || *p.JobID != j.ID ||
			p.AccountID != f.acc.ID || p.InstallationID == nil || *p.InstallationID != f.inst.ID || p.DeletedAt != nil ||
			p.CreatedAt.Before(before) {
			t.Fatalf("candidate = %+v, want a pending packshot of the job's first output", p)
		}
		var job models.Job
		db.Take(&job, "id = ?", j.ID)
		if job.Status != status.JobCompleted {
			t.Fatalf("job status = %s", job.Status)
		}
		// EnsurePackshotCandidate finds it again rather than adding another.
		again, err := models.EnsurePackshotCandidate(db, &job)
		if err != nil || again == nil || again.ID != p.ID {
			t.Fatalf("EnsurePackshotCandidate = %+v, %v; want the existing candidate", again, err)
		}
	})
}

func TestOnlyCompletedPackshotJobsWithAProductAddCandidates(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		photo := f.job(t, db, jobtype.PhotoShoot, true)
		noProduct := f.job(t, db, jobtype.Packshot, false)
		failed := f.job(t, db, jobtype.Packshot, true)
		for _, j := range []models.Job{photo, noProduct} {
			if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := models.EndJob(db, failed.ID, failed.Run, status.JobFailed, "CONTENT_POLICY", "hint", "raw"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.Model(&models.Packshot{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d packshots exist; photo_shoot, product-less and failed jobs must add none", n)
		}
	})
}

// A candidate that cannot be written rolls the whole completion back: the job never completes
// (nor consumes its credits) without its candidate.
func TestCandidateIsPartOfTheCompletionTransaction(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		j := f.job(t, db, jobtype.Packshot, true)
		failing := true
		if err := db.Callback().Create().Before("gorm:create").Register("test:fail_packshots", func(tx *gorm.DB) {
			if failing && tx.Statement.Table == "packshots" {
				_ = tx.AddError(errors.New("packshot insert refused"))
			}
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 1)); err == nil {
			t.Fatal("CompleteJob succeeded although the candidate could not be stored")
		}
		var job models.Job
		db.Take(&job, "id = ?", j.ID)
		var outputs, ledger int64
		db.Model(&models.Asset{}).Where("job_id = ?", j.ID).Count(&outputs)
		db.Model(&models.LedgerEntry{}).Where("job_id = ?", j.ID).Count(&ledger)
		if job.Status == status.JobCompleted || outputs != 0 || ledger != 0 {
			t.Fatalf("after a failed candidate insert: status %s, %d outputs, %d ledger rows; want nothing written", job.Status, outputs, ledger)
		}
		// Once the insert works, the retried completion stores everything.
		failing = false
		if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 1)); err != nil {
			t.Fatal(err)
		}
		var n int64
		db.Model(&models.Packshot{}).Where("job_id = ?", j.ID).Count(&n)
		if n != 1 {
			t.Fatalf("%d candidates after the retried completion, want 1", n)
		}
	})
}
