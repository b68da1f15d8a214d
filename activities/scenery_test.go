package activities_test

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// capture is a provider that serves everything and records the requests it gets.
type capture struct {
	mu   sync.Mutex
	reqs []providers.Request
}

func (c *capture) Serves(string, string) bool { return true }

func (c *capture) Generate(_ context.Context, req providers.Request) ([]providers.Output, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return []providers.Output{{Data: req.Inputs[0].Data, ContentType: "image/png", Ext: ".png", Width: 8, Height: 8}}, nil
}

// A photo shoot whose session names a scenery hands the provider that scenery's image: a
// marketplace scenery's seeded image, or the account's own generated one; a scenery the account
// cannot use leaves the shoot without one.
func TestPhotoShootGetsItsSceneryImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	blobs := fileBlobs(t)
	if err := models.SeedReference(db); err != nil {
		t.Fatal(err)
	}
	catalog := loadCatalog(t)
	provider := &capture{}
	acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
		Generator: providers.MustNewRegistry(catalog, map[string]providers.Provider{"local": provider})}
	acc, err := models.CreateAccount(db, "Team", 100)
	if err != nil {
		t.Fatal(err)
	}
	other, err := models.CreateAccount(db, "Other", 100)
	if err != nil {
		t.Fatal(err)
	}
	img := testimage.SolidPNG(t, 8, 8, testimage.White)
	now := time.Now().UTC()
	file := func(accountID string, kind string) models.Asset {
		a := models.Asset{ID: models.NewID(), AccountID: accountID, Kind: kind, Status: status.AssetReady,
			ContentType: "image/png", BlobKey: "f/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
		if err := blobs.Put(ctx, a.BlobKey, img, "image/png"); err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		return a
	}
	input := file(acc.ID, models.AssetKindUpload)
	own := file(acc.ID, models.AssetKindOutput)
	ownScenery := models.ReferenceItem{AccountID: &acc.ID, Name: "Own", Status: models.RefStatusDone, ThumbnailAssetID: &own.ID}
	theirs := file(other.ID, models.AssetKindOutput)
	theirScenery := models.ReferenceItem{AccountID: &other.ID, Name: "Theirs", Status: models.RefStatusDone, ThumbnailAssetID: &theirs.ID}
	for _, it := range []*models.ReferenceItem{&ownScenery, &theirScenery} {
		if err := models.CreateReferenceItem(db, models.KindScenery, it); err != nil {
			t.Fatal(err)
		}
	}
	const marketplace = "8c4e3d43-4a63-469d-b601-22b6bf85d70c" // seeded "White marble countertop"

	var ts testsuite.WorkflowTestSuite
	for _, tc := range []struct {
		scenery string
		want    bool
	}{{marketplace, true}, {ownScenery.ID, true}, {theirScenery.ID, false}, {"", false}} {
		session := `{}`
		if tc.scenery != "" {
			session = `{"scenery_id":"` + tc.scenery + `"}`
		}
		o := models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.PhotoShoot,
			SessionConfig: models.JSON(session), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: acc.ID, JobType: jobtype.PhotoShoot,
			InputAssetID: &input.ID, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
			Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&o).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&j).Error; err != nil {
			t.Fatal(err)
		}
		env := ts.NewTestActivityEnvironment()
		env.RegisterActivity(acts.Generate)
		if _, err := env.ExecuteActivity(acts.Generate, contract.AttemptInput{JobID: j.ID, Run: 1, Attempt: 1}); err != nil {
			t.Fatalf("scenery %q: %v", tc.scenery, err)
		}
		req := provider.reqs[len(provider.reqs)-1]
		if got := req.Scenery != nil; got != tc.want {
			t.Fatalf("scenery %q: request has a scenery image: %v, want %v", tc.scenery, got, tc.want)
		}
		if req.Scenery != nil {
			if _, _, err := image.Decode(bytes.NewReader(req.Scenery.Data)); err != nil || req.Scenery.ContentType == "" {
				t.Fatalf("scenery %q: image %s does not decode: %v", tc.scenery, req.Scenery.ContentType, err)
			}
			// The blob key names the file, so the provider can keep its decoded image by it.
			if req.Scenery.Key == "" {
				t.Fatalf("scenery %q: the request's scenery image has no blob key", tc.scenery)
			}
		}
	}
}
