package external_test

import (
	"net/http"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// The spec's state table: "packshot record | any | update-packshot with status ARCHIVE | regardless
// of voting | archived". GET /packshots lists the records of packshot jobs that failed (FAILED) or
// still run (INPROGRESS) next to the DONE ones; each can be archived, which takes it out of the
// list (a FAILED one could never be cleared: 404), and a record archived while its job ran stays
// archived when the job then makes its packshot. A vote on such a record is still 404, and a
// second archive too.
func TestAPackshotRecordCanBeArchivedInAnyState(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		photo, _ := e.photoFixture(e.account, "Shoe")
		code, body := e.post(e.key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 2})
		_, jobs, records := e.checkAccepted(code, body, 2)
		failed, running := records[0], records[1]
		var failedJob, runningJob models.Job
		for _, j := range jobs {
			switch *j.RecordID {
			case failed:
				failedJob = j
			case running:
				runningJob = j
			}
		}
		testdb.MustExec(t, db, "UPDATE jobs SET status = ? WHERE id = ?", status.JobFailed, failedJob.ID)
		testdb.MustExec(t, db, "UPDATE jobs SET status = ? WHERE id = ?", status.JobInProgress, runningJob.ID)
		listed := func() map[string]string {
			_, page := e.getAs(e.key, "/packshots")
			out := map[string]string{}
			for _, it := range page["packshots"].([]any) {
				m := it.(map[string]any)
				out[m["id"].(string)] = m["status"].(string)
			}
			return out
		}
		if got := listed(); got[failed] != "FAILED" || got[running] != "INPROGRESS" {
			t.Fatalf("listed %v; want %s FAILED and %s INPROGRESS", got, failed, running)
		}
		if code, out := e.post(e.key, "/packshots/update-packshot", map[string]any{"recordId": failed, "Voting": "APPROVED"}); code != http.StatusNotFound {
			t.Errorf("a vote on the FAILED record: %d %v, want 404", code, out)
		}
		for id, body := range map[string]map[string]any{
			failed:  {"recordId": failed, "status": "ARCHIVE", "Voting": "REJECTED"}, // regardless of voting
			running: {"recordId": running, "status": "ARCHIVE"},
		} {
			if code, out := e.post(e.key, "/packshots/update-packshot", body); code != http.StatusOK {
				t.Errorf("archive the record %s GET /packshots lists (%v): %d %v, want 200", id, body, code, out)
			}
			if code, out := e.post(e.key, "/packshots/update-packshot", map[string]any{"recordId": id, "status": "ARCHIVE"}); code != http.StatusNotFound {
				t.Errorf("archive %s again: %d %v, want 404", id, code, out)
			}
		}
		if got := listed(); len(got) != 0 {
			t.Errorf("after ARCHIVE the records are still listed: %v", got)
		}

		// The running job then completes: its packshot is made archived, and stays unlisted.
		out := models.Asset{ID: models.OutputAssetID(runningJob.ID, 1, 0), AccountID: e.account, Kind: models.AssetKindOutput,
			Status: status.AssetReady, ContentType: "image/png", SizeBytes: 3, BlobKey: "outputs/" + runningJob.ID, Width: 2, Height: 2, JobID: &runningJob.ID}
		if _, err := models.CompleteJob(db, runningJob.ID, 1, []models.Asset{out}); err != nil {
			t.Fatal(err)
		}
		var p models.Packshot
		e.must(db.Take(&p, "id = ?", running).Error)
		if p.ArchivedAt == nil {
			t.Errorf("the packshot of a record archived while its job ran is not archived: %+v", p)
		}
		if got := listed(); len(got) != 0 {
			t.Errorf("after its job completed the archived record is listed again: %v", got)
		}
	})
}
