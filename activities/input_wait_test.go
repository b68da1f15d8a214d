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
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// A job whose input is still being uploaded or prepared fails its attempt with INPUT_NOT_READY as
// a benign error (the SDK logs it at debug level and leaves it out of its failure metrics: it is
// the normal course of a job accepted right after its upload), non-retryable and with its
// Retry-After detail like every category; an unusable input (INPUT_MISSING) stays an ordinary
// failure.
func TestAnInputNotReadyIsABenignWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	blobs, err := blobstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	provider := &capture{}
	acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
		Generator: providers.MustNewRegistry(cat, map[string]providers.Provider{"local": provider})}
	acc, err := models.CreateAccount(db, "Team", 100)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	jobOn := func(assetStatus string) string {
		t.Helper()
		a := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: assetStatus,
			Problem: "the file is not an image", ContentType: "image/png", BlobKey: "f/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
		o := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.Packshot,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: acc.ID, JobType: jobtype.Packshot,
			InputAssetID: &a.ID, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
			Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
		for _, row := range []any{&a, &o, &j} {
			if err := db.Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		return j.ID
	}
	var ts testsuite.WorkflowTestSuite
	generate := func(jobID string) *temporal.ApplicationError {
		t.Helper()
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.Generate)
		_, err := env.ExecuteActivity(acts.Generate, contract.AttemptInput{JobID: jobID, Run: 1, Attempt: 1})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) {
			t.Fatalf("Generate = %v, want an ApplicationError", err)
		}
		return appErr
	}

	for _, st := range []string{status.AssetAwaitingUpload, status.AssetUploading, status.AssetProcessing} {
		appErr := generate(jobOn(st))
		if appErr.Type() != string(errorcat.InputNotReady) || !appErr.NonRetryable() {
			t.Errorf("input %s: %s (non-retryable %v), want a non-retryable %s", st, appErr.Type(), appErr.NonRetryable(), errorcat.InputNotReady)
		}
		if appErr.Category() != temporal.ApplicationErrorCategoryBenign {
			t.Errorf("input %s: the wait is not benign: the SDK logs it as an activity error", st)
		}
		var retryAfter float64
		if !appErr.HasDetails() || appErr.Details(&retryAfter) != nil || retryAfter != 0 {
			t.Errorf("input %s: the Retry-After detail is lost", st)
		}
	}
	if appErr := generate(jobOn(status.AssetInvalid)); appErr.Type() != string(errorcat.InputMissing) || appErr.Category() == temporal.ApplicationErrorCategoryBenign {
		t.Errorf("an unusable input: %s (category %v), want an ordinary %s", appErr.Type(), appErr.Category(), errorcat.InputMissing)
	}
	if len(provider.reqs) != 0 {
		t.Error("the provider rendered without its input")
	}
}
