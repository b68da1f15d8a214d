package external_test

import (
	"net/http"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// The spec's state table: "packshot record | any | update-packshot with status ARCHIVE | regardless
// of voting | archived"; the OpenAPI: "status: ARCHIVE archives it whatever its voting", and (since
// 1921341) a Voting sent with ARCHIVE that cannot apply is ignored and the archive stands: a DONE
// packshot whose file retention purged is archived by ARCHIVE with Voting APPROVED too (not 409).
func TestArchiveWithAnApprovalOfAPurgedPackshotArchives(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		photo, _ := e.photoFixture(e.account, "Shoe")
		code, body := e.post(e.key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 1})
		_, jobs, records := e.checkAccepted(code, body, 1)
		job, record := jobs[0], records[0]
		testdb.MustExec(t, db, "UPDATE jobs SET status = ? WHERE id = ?", status.JobInProgress, job.ID)
		out := models.Asset{ID: models.OutputAssetID(job.ID, 1, 0), AccountID: e.account, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: "image/png", SizeBytes: 3, BlobKey: "outputs/" + job.ID, Width: 2, Height: 2, JobID: &job.ID}
		if _, err := models.CompleteJob(db, job.ID, 1, []models.Asset{out}); err != nil {
			t.Fatal(err)
		}
		testdb.MustExec(t, db, "UPDATE assets SET purged_at = ? WHERE id = ?", time.Now().UTC(), out.ID)

		code, resp := e.post(e.key, "/packshots/update-packshot", map[string]any{"recordId": record, "status": "ARCHIVE", "Voting": "APPROVED"})
		var p models.Packshot
		e.must(db.Take(&p, "id = ?", record).Error)
		if code != http.StatusOK || p.ArchivedAt == nil {
			t.Errorf("ARCHIVE with APPROVED of a DONE packshot whose file was purged: %d %v, archived_at %v; want 200 and archived (regardless of voting)",
				code, resp, p.ArchivedAt)
		}
	})
}
