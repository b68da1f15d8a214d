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
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// killing is a provider that renders like capture, after running its hook (a kill of the store).
type killing struct {
	capture
	hook func()
}

func (k *killing) Generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	if k.hook != nil {
		k.hook()
	}
	return k.capture.Generate(ctx, req)
}

// A blob store that cannot be reached, when an activity reads an input, stores an output or
// prepares an upload, fails the activity as ErrTypeDependencyUnavailable naming the blob store:
// the workflows wait for it (runActivity) instead of counting an attempt or failing the job. It is
// never a provider failure category.
func TestStoreOutageIsADependencyWait(t *testing.T) {
	ctx := context.Background()
	srv := s3server.Start(t)
	srv.Setenv(t)
	blobs, err := blobstore.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	db := testdb.Open(t, testdb.SQLiteURL(t))
	cat := loadCatalog(t)
	provider := &killing{}
	acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
		Generator: providers.MustNewRegistry(cat, map[string]providers.Provider{"local": provider})}
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
	upload := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: status.AssetProcessing,
		ContentType: "image/png", BlobKey: "f/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	if err := blobs.Put(ctx, upload.BlobKey, testimage.SolidPNG(t, 64, 64, testimage.White), "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&input).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&upload).Error; err != nil {
		t.Fatal(err)
	}
	job := func() string {
		t.Helper()
		o := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.Packshot,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: acc.ID, JobType: jobtype.Packshot,
			InputAssetID: &input.ID, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
			Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&o).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&j).Error; err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	var ts testsuite.WorkflowTestSuite
	generate := func(jobID string) error {
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.Generate)
		_, err := env.ExecuteActivity(acts.Generate, contract.AttemptInput{JobID: jobID, Run: 1, Attempt: 1})
		return err
	}
	prepare := func(assetID string) error {
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.PrepareAsset)
		_, err := env.ExecuteActivity(acts.PrepareAsset, assetID)
		return err
	}
	waitsForTheStore := func(what string, err error) {
		t.Helper()
		var appErr *temporal.ApplicationError
		dependency := ""
		if errors.As(err, &appErr) && appErr.HasDetails() {
			_ = appErr.Details(&dependency)
		}
		if appErr == nil || appErr.Type() != contract.ErrTypeDependencyUnavailable || dependency != contract.DependencyBlobStore {
			t.Fatalf("%s with the store down = %v, want %s naming %q", what, err, contract.ErrTypeDependencyUnavailable, contract.DependencyBlobStore)
		}
	}

	// The store goes down during the render: the output cannot be stored.
	provider.hook = srv.Kill
	waitsForTheStore("storing an output", generate(job()))
	provider.hook = nil
	// Still down: the input cannot be read, and the provider is not called.
	calls := len(provider.reqs)
	waitsForTheStore("reading an input", generate(job()))
	if len(provider.reqs) != calls {
		t.Fatal("the provider rendered without its input")
	}
	waitsForTheStore("preparing an upload", prepare(upload.ID))

	// Back: the same job runs again and stores its output; the upload is prepared.
	srv.Restart(t)
	id := job()
	if err := generate(id); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if err := prepare(upload.ID); err != nil {
		t.Fatalf("preparing after the restart: %v", err)
	}
	var prepared models.Asset
	if err := db.Take(&prepared, "id = ?", upload.ID).Error; err != nil || prepared.Status != status.AssetReady {
		t.Fatalf("the upload is %s after the restart (%v)", prepared.Status, err)
	}
	if _, err := blobs.Size(ctx, prepared.ThumbnailBlobKey); err != nil {
		t.Fatalf("thumbnail of the prepared upload: %v", err)
	}
}
