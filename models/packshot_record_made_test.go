package models_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// recordMade reports whether the job's record_made_at is set and, in SQL, equal to the created_at
// of the packshot under its record ID; false when either is missing.
func recordMade(t *testing.T, db *gorm.DB, jobID string) bool {
	t.Helper()
	var n int64
	err := db.Raw(`SELECT COUNT(*) FROM jobs j JOIN packshots p ON p.id = j.record_id
		WHERE j.id = ? AND j.record_made_at = p.created_at`, jobID).Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// recordNotMade reports whether the job's record_made_at is NULL.
func recordNotMade(t *testing.T, db *gorm.DB, jobID string) bool {
	t.Helper()
	var n int64
	if err := db.Raw(`SELECT COUNT(*) FROM jobs WHERE id = ? AND record_made_at IS NULL`, jobID).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// recordJob stores a running packshot job of the external API's kind: under a record ID of its own.
func (f *candidateFixture) recordJob(t *testing.T, db *gorm.DB) models.Job {
	t.Helper()
	j := f.job(t, db, jobtype.Packshot, true)
	id := models.NewID()
	j.RecordID = &id
	testdb.MustExec(t, db, "UPDATE jobs SET record_id = ? WHERE id = ?", id, j.ID)
	return j
}

// A packshot job says in its own row when its packshot was made (record_made_at, migration 0030),
// in the transaction that makes it, so that GET /packshots's jobs branch and its index leave the
// job out: through either path that creates the packshot under the job's record ID (the job's
// completion, package function or the worker's store in a Tx; a rating of a job completed before
// candidates existed) and for a record archived while its job ran. A job that completes without a
// file, fails or still runs, and a job without a record ID (the plugin API's), have no record made.
func TestPackshotJobsRecordThatTheirPackshotIsMade(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newCandidateFixture(t, db)
		store := models.NewStore(db)

		completed := f.recordJob(t, db)
		if _, err := models.CompleteJob(db, completed.ID, completed.Run, f.outputs(completed, 1)); err != nil {
			t.Fatal(err)
		}
		if !recordMade(t, db, completed.ID) {
			t.Error("a completed packshot job's row does not say its packshot was made")
		}

		finished := f.recordJob(t, db)
		if err := store.Tx(ctx, func(tx *models.Store) error {
			_, _, err := tx.CompleteJob(ctx, finished.ID, finished.Run, f.outputs(finished, 2))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !recordMade(t, db, finished.ID) {
			t.Error("a packshot job completed in the worker's transaction does not say its packshot was made")
		}

		archived := f.recordJob(t, db)
		testdb.MustExec(t, db, "UPDATE jobs SET record_archived_at = ? WHERE id = ?", time.Now().UTC(), archived.ID)
		if _, err := models.CompleteJob(db, archived.ID, archived.Run, f.outputs(archived, 1)); err != nil {
			t.Fatal(err)
		}
		if !recordMade(t, db, archived.ID) {
			t.Error("a packshot job whose record was archived does not say its packshot was made")
		}

		// A job completed before packshot candidates existed has none until it is rated.
		rated := f.recordJob(t, db)
		if _, err := models.CompleteJob(db, rated.ID, rated.Run, f.outputs(rated, 1)); err != nil {
			t.Fatal(err)
		}
		testdb.MustExec(t, db, "DELETE FROM packshots WHERE id = ?", *rated.RecordID)
		testdb.MustExec(t, db, "UPDATE jobs SET record_made_at = NULL WHERE id = ?", rated.ID)
		read, err := models.GetJob(db, rated.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.RateJob(ctx, read, models.VotingAccepted, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if !recordMade(t, db, rated.ID) {
			t.Error("a packshot job whose packshot its rating made does not say so")
		}

		withoutFile := f.recordJob(t, db)
		if _, err := models.CompleteJob(db, withoutFile.ID, withoutFile.Run, nil); err != nil {
			t.Fatal(err)
		}
		failed := f.recordJob(t, db)
		if _, err := models.EndJob(db, failed.ID, failed.Run, status.JobFailed, "CONTENT_POLICY", "hint", "raw"); err != nil {
			t.Fatal(err)
		}
		running := f.recordJob(t, db)
		plugin := f.job(t, db, jobtype.Packshot, true)
		if _, err := models.CompleteJob(db, plugin.ID, plugin.Run, f.outputs(plugin, 1)); err != nil {
			t.Fatal(err)
		}
		for name, j := range map[string]models.Job{"completed without a file": withoutFile, "failed": failed,
			"running": running, "without a record ID": plugin} {
			if !recordNotMade(t, db, j.ID) {
				t.Errorf("a packshot job %s says its record was made", name)
			}
		}

		// GET /packshots lists the jobs whose packshot was not made, each once, and the packshots.
		recs, err := store.ListAccountPackshots(ctx, f.acc.ID, false, models.RecordPage{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range recs {
			got[r.ID] = string(r.Status)
		}
		want := map[string]string{
			*completed.RecordID: models.RefStatusDone, *finished.RecordID: models.RefStatusDone, *rated.RecordID: models.RefStatusDone,
			*withoutFile.RecordID: models.RefStatusFailed, *failed.RecordID: models.RefStatusFailed,
			*running.RecordID: models.RefStatusInProgress, models.PackshotCandidateID(plugin.ID, plugin.Run): models.RefStatusDone,
		}
		if len(recs) != len(want) || len(got) != len(want) {
			t.Errorf("GET /packshots lists %v, want %v", got, want)
		}
		for id, st := range want {
			if got[id] != st {
				t.Errorf("record %s is listed %q, want %q", id, got[id], st)
			}
		}
	})
}

// jobsUpdate is an UPDATE of jobs as gorm sends it to either database.
var jobsUpdate = regexp.MustCompile("^UPDATE [\"`]jobs[\"`] ")

// jobsUpdates are the UPDATEs of jobs among statements.
func jobsUpdates(statements []string) []string {
	var updates []string
	for _, s := range statements {
		if jobsUpdate.MatchString(s) {
			updates = append(updates, s)
		}
	}
	return updates
}

// jobsRowVersions is how many row versions of jobs the current transaction wrote by UPDATE
// (PostgreSQL's count, which sees every UPDATE, a trigger's included).
func jobsRowVersions(t *testing.T, tx *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := tx.Raw(`SELECT pg_stat_get_xact_tuples_updated('jobs'::regclass)`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Completing an external API's packshot job writes the job's row once: finish's UPDATE, which
// makes the job completed, also says its packshot is made (record_made_at) when the transaction
// makes it, and reads the record_archived_at the packshot inherits, so the candidate's creation
// does not update the row again. That holds with the job's file passed in or already stored, for a
// record archived while its job ran, and in the worker's transaction; a job completed without a
// file is written once as well and stays without its record (listed FAILED), and a repeated
// completion writes nothing. On PostgreSQL the transaction's own count of the row versions of jobs
// it wrote says the same.
func TestCompletingAPackshotJobWritesItsRowOnce(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newCandidateFixture(t, db)
		postgres := db.Dialector.Name() == "postgres"

		// complete completes the job run in a transaction and returns whether it completed it,
		// checking that it sent one UPDATE of jobs and, on PostgreSQL, that it wrote one row version
		// of jobs, none when the job was already terminal.
		complete := func(t *testing.T, j models.Job, outputs []models.Asset) bool {
			t.Helper()
			var completed bool
			var versions int64
			stop := testdb.RecordStatements(db)
			err := db.Transaction(func(tx *gorm.DB) error {
				var before int64
				if postgres {
					before = jobsRowVersions(t, tx)
				}
				var err error
				completed, err = models.CompleteJob(tx, j.ID, j.Run, outputs)
				if postgres {
					versions = jobsRowVersions(t, tx) - before
				}
				return err
			})
			statements := stop()
			if err != nil {
				t.Fatal(err)
			}
			if updates := jobsUpdates(statements); len(updates) != 1 {
				t.Errorf("completing the job sent %d UPDATEs of jobs, want 1:\n%s", len(updates), strings.Join(updates, "\n"))
			}
			want := int64(1)
			if !completed { // the UPDATE of a terminal job matches no row
				want = 0
			}
			if postgres && versions != want {
				t.Errorf("completing the job wrote %d row versions of jobs, want %d", versions, want)
			}
			return completed
		}

		withFile := f.recordJob(t, db)
		if !complete(t, withFile, f.outputs(withFile, 2)) {
			t.Fatal("the job was not completed")
		}
		if !recordMade(t, db, withFile.ID) {
			t.Error("a packshot job completed with its file does not say its packshot was made")
		}

		stored := f.recordJob(t, db)
		files := f.outputs(stored, 1)
		if err := db.Create(&files).Error; err != nil {
			t.Fatal(err)
		}
		complete(t, stored, nil)
		if !recordMade(t, db, stored.ID) {
			t.Error("a packshot job whose file was stored before its completion does not say its packshot was made")
		}

		archived := f.recordJob(t, db)
		archivedAt := time.Now().UTC().Truncate(time.Microsecond)
		testdb.MustExec(t, db, "UPDATE jobs SET record_archived_at = ? WHERE id = ?", archivedAt, archived.ID)
		complete(t, archived, f.outputs(archived, 1))
		if !recordMade(t, db, archived.ID) {
			t.Error("a packshot job whose record was archived does not say its packshot was made")
		}
		var p models.Packshot
		if err := db.Take(&p, "id = ?", *archived.RecordID).Error; err != nil {
			t.Fatal(err)
		}
		if p.ArchivedAt == nil || !p.ArchivedAt.Equal(archivedAt) {
			t.Errorf("the packshot of a record archived while its job ran is archived at %v, want %v", p.ArchivedAt, archivedAt)
		}

		withoutFile := f.recordJob(t, db)
		complete(t, withoutFile, nil)
		if !recordNotMade(t, db, withoutFile.ID) {
			t.Error("a packshot job completed without a file says its record was made")
		}

		done, err := models.GetJob(db, withFile.ID)
		if err != nil {
			t.Fatal(err)
		}
		if complete(t, withFile, f.outputs(withFile, 2)) {
			t.Error("a repeated completion completed the job again")
		}
		again, err := models.GetJob(db, withFile.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !again.UpdatedAt.Equal(done.UpdatedAt) || again.RecordMadeAt == nil || !again.RecordMadeAt.Equal(*done.RecordMadeAt) {
			t.Errorf("a repeated completion changed the job: updated_at %v, record_made_at %v, were %v, %v",
				again.UpdatedAt, again.RecordMadeAt, done.UpdatedAt, done.RecordMadeAt)
		}
		if !recordMade(t, db, withFile.ID) {
			t.Error("a repeated completion leaves the job's record_made_at apart from its packshot")
		}

		// The worker's path: CompleteJob of the store in its transaction (FinishJob's).
		store := models.NewStore(db)
		worker := f.recordJob(t, db)
		stop := testdb.RecordStatements(db)
		err = store.Tx(ctx, func(tx *models.Store) error {
			_, _, err := tx.CompleteJob(ctx, worker.ID, worker.Run, f.outputs(worker, 1))
			return err
		})
		statements := stop()
		if err != nil {
			t.Fatal(err)
		}
		if updates := jobsUpdates(statements); len(updates) != 1 {
			t.Errorf("completing the job in the store's transaction sent %d UPDATEs of jobs, want 1:\n%s", len(updates), strings.Join(updates, "\n"))
		}
		if !recordMade(t, db, worker.ID) {
			t.Error("a packshot job completed in the worker's transaction does not say its packshot was made")
		}

		recs, err := store.ListAccountPackshots(ctx, f.acc.ID, false, models.RecordPage{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range recs {
			got[r.ID] = string(r.Status)
		}
		want := map[string]string{*withFile.RecordID: models.RefStatusDone, *stored.RecordID: models.RefStatusDone,
			*withoutFile.RecordID: models.RefStatusFailed, *worker.RecordID: models.RefStatusDone}
		if len(got) != len(want) {
			t.Errorf("GET /packshots lists %v, want %v", got, want)
		}
		for id, st := range want {
			if got[id] != st {
				t.Errorf("record %s is listed %q, want %q", id, got[id], st)
			}
		}
	})
}

// 0030's backfill sets record_made_at of every packshot job whose packshot existed before it, to
// the packshot's created_at, and of no other job. The rows are written as a release before 0030
// left them (record_made_at NULL), then the migration's UPDATE runs over them, as at the upgrade.
func TestMigrationMarksPackshotJobsWhosePackshotExists(t *testing.T) {
	t.Parallel()
	backfill := migrationStatement(t, "0030_packshot_record_made.sql", "UPDATE jobs SET record_made_at")
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		made, deleted, archived := f.recordJob(t, db), f.recordJob(t, db), f.recordJob(t, db)
		for _, j := range []models.Job{made, deleted, archived} {
			if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 1)); err != nil {
				t.Fatal(err)
			}
		}
		// A packshot removed from the catalog, or archived, still exists: its job stays made.
		testdb.MustExec(t, db, "UPDATE packshots SET deleted_at = ? WHERE id = ?", time.Now().UTC(), *deleted.RecordID)
		testdb.MustExec(t, db, "UPDATE packshots SET archived_at = ? WHERE id = ?", time.Now().UTC(), *archived.RecordID)
		withoutFile, running := f.recordJob(t, db), f.recordJob(t, db)
		if _, err := models.CompleteJob(db, withoutFile.ID, withoutFile.Run, nil); err != nil {
			t.Fatal(err)
		}
		plugin := f.job(t, db, jobtype.Packshot, true)
		if _, err := models.CompleteJob(db, plugin.ID, plugin.Run, f.outputs(plugin, 1)); err != nil {
			t.Fatal(err)
		}
		testdb.MustExec(t, db, "UPDATE jobs SET record_made_at = NULL")

		testdb.MustExec(t, db, backfill)
		for name, j := range map[string]models.Job{"made": made, "deleted": deleted, "archived": archived} {
			if !recordMade(t, db, j.ID) {
				t.Errorf("the backfill leaves the job of the %s packshot without record_made_at", name)
			}
		}
		for name, j := range map[string]models.Job{"completed without a file": withoutFile, "running": running,
			"without a record ID": plugin} {
			if !recordNotMade(t, db, j.ID) {
				t.Errorf("the backfill sets record_made_at of the job %s", name)
			}
		}
	})
}
