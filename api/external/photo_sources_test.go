package external_test

import (
	"net/http"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// One upload held by the catalog as a photo of two products (the plugin API's POST /images lets a
// merchant register the same upload under two product refs; GET /products lists both photos). A
// packshot job of product X cut from it, accepted, is X's packshot and the packshot of X's photo.
// The spec's rules of image-picker/register-ideas: the shoot is generated from the named photo's
// own accepted packshot, and a photo without one answers 422 (nothing created). The job's
// candidate is linked to X's photo, never to the newer photo of the same upload of product Y.
func TestPhotoShootUsesThePackshotOfThePhotosOwnProduct(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		now := time.Now().UTC()
		upload := models.Asset{ID: models.NewID(), AccountID: e.account, Kind: models.AssetKindUpload, Status: status.AssetReady,
			Filename: "p.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "uploads/" + e.account + "/shared", Width: 64, Height: 64,
			CreatedAt: now, UpdatedAt: now}
		e.must(db.Create(&upload).Error)
		photo := func(name string, at time.Time) (models.Product, models.ProductImage) {
			p := models.Product{ID: models.NewID(), AccountID: e.account, DisplayName: name, CreatedAt: at, UpdatedAt: at}
			p.ExternalRef = name
			img := models.ProductImage{ID: models.NewID(), AccountID: e.account, ProductID: p.ID, AssetID: upload.ID, CreatedAt: at}
			img.ExternalRef = "img-" + name
			e.must(db.Create(&p).Error)
			e.must(db.Create(&img).Error)
			return p, img
		}
		productX, photoX := photo("X", now)
		_, photoY := photo("Y", now.Add(time.Second)) // the newer photo of the same upload

		// A packshot job of product X from the upload (as the plugin API's POST /jobs makes it).
		o := models.Order{ID: models.NewID(), AccountID: e.account, API: models.APIPlugin, JobType: jobtype.Packshot,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreditsReserved: 1, CreatedAt: now, UpdatedAt: now}
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: e.account, JobType: jobtype.Packshot, ProductID: &productX.ID,
			ProductRef: productX.ExternalRef, ProductLabel: "X", InputAssetID: &upload.ID, AIModel: "local/studio-v1",
			AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobInProgress, Voting: models.VotingPending,
			CreatedAt: now, UpdatedAt: now}
		e.must(db.Create(&o).Error)
		e.must(db.Create(&j).Error)
		testdb.MustExec(t, db, "UPDATE accounts SET credits_reserved = credits_reserved + 1 WHERE id = ?", e.account)
		out := models.Asset{ID: models.OutputAssetID(j.ID, 1, 0), AccountID: e.account, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: "image/png", SizeBytes: 3, BlobKey: "outputs/" + j.ID, Width: 2, Height: 2, JobID: &j.ID}
		if _, err := models.CompleteJob(db, j.ID, 1, []models.Asset{out}); err != nil {
			t.Fatal(err)
		}
		var candidate models.Packshot
		e.must(db.Take(&candidate, "job_id = ?", j.ID).Error)
		if code, body := e.post(e.key, "/packshots/update-packshot", map[string]any{"recordId": candidate.ID, "Voting": "APPROVED"}); code != http.StatusOK {
			t.Fatalf("approve the candidate: %d %v", code, body)
		}
		shoot := func(photoID string) (int, map[string]any) {
			return e.post(e.key, "/image-picker/register-ideas", map[string]any{
				"config": map[string]any{"product": map[string]any{"id": photoID}}, "count": 1})
		}
		if code, body := shoot(photoX.ID); code != http.StatusOK {
			t.Errorf("shoot of product X's photo, which its accepted packshot was cut from: %d %v, want 200", code, body)
		}
		if code, body := shoot(photoY.ID); code != http.StatusUnprocessableEntity {
			t.Errorf("shoot of product Y's photo, which has no packshot of product Y: %d %v, want 422 (it starts from product X's packshot %s)",
				code, body, candidate.ID)
		}
	})
}

// A photo-shoot image whose file the retention policy removed is listed by GET /image-picker with
// an empty thumbnail, and a video or reel of it can only fail (INPUT_MISSING) after its credits
// were reserved. As the plugin API refuses such an input up front (a purged packshot, a purged or
// never-uploaded upload: 400 naming the field, nothing created), a register-videos or
// register-reel naming it answers 400 and creates nothing.
func TestVideoOfAPurgedShootImageIsRefusedUpFront(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		shootID, outputID := e.completedShoot(e.account, status.JobCompleted)
		testdb.MustExec(t, db, "UPDATE assets SET purged_at = ? WHERE id = ?", time.Now().UTC(), outputID)
		for path, body := range map[string]map[string]any{
			"/video-picker/register-videos": {"generatedImageId": shootID},
			"/reel/register-reel":           {"imagesIds": []string{shootID}},
		} {
			code, out := e.post(e.key, path, body)
			if code != http.StatusBadRequest {
				t.Errorf("%s of a shoot image whose file was purged: %d %v, want 400 (the job could only fail INPUT_MISSING)", path, code, out)
			}
		}
		var videos int64
		e.must(db.Model(&models.Job{}).Where("account_id = ? AND job_type IN ?", e.account, []string{jobtype.Video, jobtype.Reel}).Count(&videos).Error)
		if videos != 0 {
			t.Errorf("%d video or reel jobs were created (and their credits reserved) from a purged image", videos)
		}
	})
}
