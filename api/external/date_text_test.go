package external_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// GET /packshots, /image-picker and /videos name a record by its product's name, its label or
// its product's reference exactly as the client gave it, on both databases, also when that text
// looks like a time: on SQLite the driver read such a text, which these lists take from an
// expression (COALESCE), as a time, and "2026-01-02" came back as "2026-01-02T00:00:00Z". Each
// packshot record stays dated by the job that made it, or by itself.
func TestRecordListsShowDateLikeNamesAsStored(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		f := newRecFix(e)
		wantName := map[string]map[string]string{"/packshots": {}, "/packshots?statusFilter=approved": {}, "/image-picker": {}, "/videos": {}}
		dated := map[string]time.Time{}
		for _, text := range []string{"2026-01-02", "2026-01-02 10:00:00", "2026-01-02T10:00:00Z", "2026-01-02 10:00", "12:00"} {
			named := f.product(e.account, text, "named-"+models.NewID())
			bare := f.product(e.account, "", text)
			pending := f.packshot(named, models.VotingPending, nil)
			maker := f.job(e.account, jobtype.Packshot, status.JobCompleted, 1, func(j *models.Job) { j.ProductID = &bare.ID })
			approved := f.packshot(bare, models.VotingAccepted, func(p *models.Packshot) { p.JobID = &maker.ID })
			recordID := models.NewID()
			making := f.job(e.account, jobtype.Packshot, status.JobInProgress, 0, func(j *models.Job) {
				j.ProductID, j.RecordID = &named.ID, &recordID
			})
			dated[pending.ID], dated[approved.ID], dated[recordID] = pending.CreatedAt, maker.CreatedAt, making.CreatedAt
			for _, id := range []string{pending.ID, approved.ID, recordID} {
				wantName["/packshots"][id] = text
			}
			wantName["/packshots?statusFilter=approved"][approved.ID] = text

			byName := f.job(e.account, jobtype.PhotoShoot, status.JobCompleted, 1, func(j *models.Job) { j.ProductID = &named.ID })
			byLabel := f.job(e.account, jobtype.PhotoShoot, status.JobInProgress, 0, func(j *models.Job) { j.ProductLabel = text })
			byRef := f.job(e.account, jobtype.PhotoShoot, status.JobFailed, 0, func(j *models.Job) { j.ProductID = &bare.ID })
			byOrderedRef := f.job(e.account, jobtype.PhotoShoot, status.JobPending, 0, func(j *models.Job) { j.ProductRef = text })
			for _, j := range []*models.Job{byName, byLabel, byRef, byOrderedRef} {
				wantName["/image-picker"][j.ID] = text
			}
			video := f.job(e.account, jobtype.Video, status.JobCompleted, 1, func(j *models.Job) { j.ProductID = &named.ID })
			reel := f.job(e.account, jobtype.Reel, status.JobInProgress, 0, func(j *models.Job) { j.ProductLabel = text })
			wantName["/videos"][video.ID], wantName["/videos"][reel.ID] = text, text
		}

		videoKeys := []string{"id", "name", "thumbnail", "videoUrl", "status", "voting", "createdAt", "livemode"}
		for path, want := range wantName {
			listKey, keys := "packshots", recordKeys
			switch path {
			case "/image-picker":
				listKey = "images"
			case "/videos":
				listKey, keys = "videos", videoKeys
			}
			items := f.recList(e.key, path, listKey, keys...)
			if len(items) != len(want) {
				t.Errorf("GET %s lists %d records, want %d", path, len(items), len(want))
			}
			for _, it := range items {
				id := it["id"].(string)
				if name, ok := want[id]; !ok || it["name"] != name {
					t.Errorf("GET %s: record %s is named %q, want %q as stored", path, id, it["name"], name)
				}
				if at, ok := dated[id]; ok {
					f.checkCreatedAt(it, at)
				}
			}
		}
	})
}
