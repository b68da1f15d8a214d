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

// refusing is a provider whose every call fails with its category.
type refusing struct{ category errorcat.Category }

func (r refusing) Serves(string, string) bool { return true }

func (r refusing) Generate(context.Context, providers.Request) ([]providers.Output, error) {
	return nil, &providers.Error{Category: r.category, Message: "refused (unit test)"}
}

// A failed attempt is a benign error to the Temporal SDK (logged at debug level, not as an ERROR
// "Activity error.", and left out of its failure metrics) when it is no operator's matter: an input
// still being uploaded or prepared (the job waits for it), an input missing or unusable, a request
// the provider's content rules refuse, and any failure of a test key's job. A live job's provider
// failing otherwise stays an ordinary failure. Every one keeps its category, non-retryability and
// details: the Retry-After and when the attempt began.
func TestFailuresThatAreNoOperatorsMatterAreBenign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	blobs := fileBlobs(t)
	cat := loadCatalog(t)
	acc, err := models.CreateAccount(db, "Team", 100)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	jobOn := func(assetStatus string, test bool) string {
		t.Helper()
		a := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: assetStatus,
			Problem: "the file is not an image", ContentType: "image/png", BlobKey: "f/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
		if assetStatus == status.AssetReady {
			if err := blobs.Put(ctx, a.BlobKey, testimage.SolidPNG(t, 8, 8, testimage.White), "image/png"); err != nil {
				t.Fatal(err)
			}
		}
		o := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.Packshot,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now, TestMode: test}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: acc.ID, JobType: jobtype.Packshot,
			InputAssetID: &a.ID, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
			Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, TestMode: test}
		for _, row := range []any{&a, &o, &j} {
			if err := db.Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		return j.ID
	}
	var ts testsuite.WorkflowTestSuite
	generate := func(provider providers.Provider, jobID string) *temporal.ApplicationError {
		t.Helper()
		acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
			Generator:  providers.MustNewRegistry(cat, map[string]providers.Provider{"local": provider}),
			TestStudio: testmode.Studio{Local: provider}}
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.Generate)
		_, err := env.ExecuteActivity(acts.Generate, contract.AttemptInput{JobID: jobID, Run: 1, Attempt: 1})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) {
			t.Fatalf("Generate = %v, want an ApplicationError", err)
		}
		return appErr
	}
	ok := &capture{}
	for _, c := range []struct {
		name     string
		provider providers.Provider
		asset    string
		test     bool
		want     errorcat.Category
		benign   bool
	}{
		{"input awaiting upload", ok, status.AssetAwaitingUpload, false, errorcat.InputNotReady, true},
		{"input uploading", ok, status.AssetUploading, false, errorcat.InputNotReady, true},
		{"input being prepared", ok, status.AssetProcessing, false, errorcat.InputNotReady, true},
		{"input unusable", ok, status.AssetInvalid, false, errorcat.InputMissing, true},
		{"content refused", refusing{errorcat.ContentPolicy}, status.AssetReady, false, errorcat.ContentPolicy, true},
		{"provider down, live", refusing{errorcat.TransientInfra}, status.AssetReady, false, errorcat.TransientInfra, false},
		{"provider account, live", refusing{errorcat.ProviderAccount}, status.AssetReady, false, errorcat.ProviderAccount, false},
		{"provider down, test key", refusing{errorcat.TransientInfra}, status.AssetReady, true, errorcat.TransientInfra, true},
	} {
		appErr := generate(c.provider, jobOn(c.asset, c.test))
		if appErr.Type() != string(c.want) || !appErr.NonRetryable() {
			t.Errorf("%s: %s (non-retryable %v), want a non-retryable %s", c.name, appErr.Type(), appErr.NonRetryable(), c.want)
		}
		if benign := appErr.Category() == temporal.ApplicationErrorCategoryBenign; benign != c.benign {
			t.Errorf("%s: benign %v, want %v", c.name, benign, c.benign)
		}
		var retryAfter float64
		if !appErr.HasDetails() || appErr.Details(&retryAfter) != nil {
			t.Errorf("%s: the Retry-After detail is lost", c.name)
		}
		// And when the attempt began running, where JobWorkflow's retry window starts
		// (contract.Generate): after the attempt's wait in its provider's queue.
		var began time.Time
		if err := appErr.Details(&retryAfter, &began); err != nil || began.IsZero() || time.Since(began) > time.Minute {
			t.Errorf("%s: the attempt began at %v (%v), want when it started", c.name, began, err)
		}
	}
	if len(ok.reqs) != 0 {
		t.Error("the provider rendered without its input")
	}
}
