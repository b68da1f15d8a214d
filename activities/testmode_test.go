package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/testmode"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// A test-mode job renders on the test studio whatever its model, watermarked, and its attempts
// do what its outcome says; a live job of the same model goes to its model's provider, never to
// the test studio.
func TestGenerateRoutesTestJobsToTheTestStudio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	blobs := fileBlobs(t)
	cat := loadCatalog(t)
	paid, studio := &capture{}, &capture{}
	acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
		Generator:  providers.MustNewRegistry(cat, map[string]providers.Provider{"openai": paid, "local": paid}),
		TestStudio: testmode.Studio{Local: studio}}
	acc, err := models.CreateAccount(db, "Team", 100)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	input := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		ContentType: "image/png", BlobKey: "f/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	if err := blobs.Put(ctx, input.BlobKey, testimage.SolidPNG(t, 8, 8, testimage.White), "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&input).Error; err != nil {
		t.Fatal(err)
	}
	job := func(test bool, outcome *testmode.Outcome) string {
		t.Helper()
		o := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.Packshot,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now, TestMode: test}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: acc.ID, JobType: jobtype.Packshot,
			InputAssetID: &input.ID, AIModel: "openai/gpt-image-1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
			Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, TestMode: test}
		if outcome != nil {
			s := outcome.Encode()
			j.TestOutcome = &s
		}
		if err := db.Create(&o).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&j).Error; err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	var ts testsuite.WorkflowTestSuite
	attempt := func(jobID string, n int) error {
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.Generate)
		_, err := env.ExecuteActivity(acts.Generate, contract.AttemptInput{JobID: jobID, Run: 1, Attempt: n})
		return err
	}
	category := func(err error) errorcat.Category {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) {
			return ""
		}
		return errorcat.Category(appErr.Type())
	}
	calls := func() (int, int) {
		paid.mu.Lock()
		defer paid.mu.Unlock()
		studio.mu.Lock()
		defer studio.mu.Unlock()
		return len(paid.reqs), len(studio.reqs)
	}

	// A live job reaches its model's provider, the test studio nothing.
	if err := attempt(job(false, nil), 1); err != nil {
		t.Fatal(err)
	}
	if p, s := calls(); p != 1 || s != 0 {
		t.Fatalf("live job: %d paid calls, %d test studio calls; want 1, 0", p, s)
	}
	if paid.reqs[0].Watermark || paid.reqs[0].Model != "gpt-image-1" {
		t.Fatalf("live job's request: %+v", paid.reqs[0])
	}

	// A test job without an outcome completes on the test studio, watermarked.
	if err := attempt(job(true, nil), 1); err != nil {
		t.Fatal(err)
	}
	if p, s := calls(); p != 1 || s != 1 {
		t.Fatalf("test job: %d paid calls, %d test studio calls; want 1, 1", p, s)
	}
	if !studio.reqs[0].Watermark || studio.reqs[0].JobType != jobtype.Packshot || len(studio.reqs[0].Inputs) != 1 {
		t.Fatalf("test job's request: %+v", studio.reqs[0])
	}

	// fail_with: every attempt fails with the category, without a render.
	for _, c := range []errorcat.Category{errorcat.ContentPolicy, errorcat.ProviderCapacity} {
		id := job(true, &testmode.Outcome{FailWith: c})
		for n := 1; n <= 3; n++ {
			if got := category(attempt(id, n)); got != c {
				t.Fatalf("fail_with %s, attempt %d: %s", c, n, got)
			}
		}
	}
	// retryable_failures 2: attempts 1 and 2 fail TRANSIENT_INFRA, the third renders.
	id := job(true, &testmode.Outcome{RetryableFailures: 2})
	for n := 1; n <= 2; n++ {
		if got := category(attempt(id, n)); got != errorcat.TransientInfra {
			t.Fatalf("retryable_failures 2, attempt %d: %s", n, got)
		}
	}
	if err := attempt(id, 3); err != nil {
		t.Fatalf("retryable_failures 2, attempt 3: %v", err)
	}
	// delay_ms: the attempt takes that long.
	began := time.Now()
	if err := attempt(job(true, &testmode.Outcome{DelayMS: 300}), 1); err != nil || time.Since(began) < 300*time.Millisecond {
		t.Fatalf("delay_ms 300: %v after %s", err, time.Since(began))
	}
	if p, s := calls(); p != 1 || s != 3 {
		t.Fatalf("after the test jobs: %d paid calls, %d test studio calls; want 1, 3", p, s)
	}
}
