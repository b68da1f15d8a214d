package models_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// recordDatedBy counts the packshot id whose record_created_at equals, in SQL, the column of
// the packshot's own row (p) or of its job's (j) that dateColumn names: on SQLite the stored texts
// are then the same, so the packshot sorts in GET /packshots exactly where that date would.
func recordDatedBy(t *testing.T, db *gorm.DB, id, dateColumn string) bool {
	t.Helper()
	var n int64
	err := db.Raw(`SELECT COUNT(*) FROM packshots p LEFT JOIN jobs j ON j.id = p.job_id
		WHERE p.id = ? AND p.record_created_at = `+dateColumn, id).Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// Every packshot is dated in GET /packshots by its column record_created_at (migration 0029's
// triggers), set when it is inserted: a packshot a job made, of a packshot job of the plugin API
// (no record ID) or of the external API (under the job's record ID), carries its job's created_at
// as the job's row holds it, not its own later created_at; a packshot registered directly (the
// plugin API's POST /packshots, Store.CreatePackshot) carries its own created_at; one given a job
// after its insert is dated by that job from then on.
func TestPackshotsCarryTheirRecordDate(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		// A fraction whose text sorts otherwise than its value ("05.5" after "05.123456789").
		jobAt := time.Date(2026, 3, 1, 9, 30, 5, 123456789, time.UTC)
		for _, external := range []bool{false, true} {
			j := f.job(t, db, jobtype.Packshot, true)
			id := models.PackshotCandidateID(j.ID, j.Run)
			var recordID *string
			if external {
				id = models.NewID()
				recordID = &id
			}
			testdb.MustExec(t, db, "UPDATE jobs SET created_at = ?, record_id = ? WHERE id = ?", jobAt, recordID, j.ID)
			if _, err := models.CompleteJob(db, j.ID, j.Run, f.outputs(j, 1)); err != nil {
				t.Fatal(err)
			}
			if !recordDatedBy(t, db, id, "j.created_at") || recordDatedBy(t, db, id, "p.created_at") {
				t.Errorf("the packshot of a packshot job (record ID: %v) is not dated by its job", external)
			}
		}

		store := models.NewStore(db)
		output := f.outputs(f.job(t, db, jobtype.Packshot, true), 1)[0]
		if err := db.Create(&output).Error; err != nil {
			t.Fatal(err)
		}
		registered := &models.Packshot{ID: models.NewID(), AccountID: f.acc.ID, InstallationID: &f.inst.ID, ProductID: f.product.ID,
			AssetID: output.ID, ExternalRef: "front", Voting: models.VotingAccepted, CreatedAt: jobAt.Add(time.Hour)}
		if err := store.CreatePackshot(t.Context(), registered); err != nil {
			t.Fatal(err)
		}
		if !recordDatedBy(t, db, registered.ID, "p.created_at") {
			t.Error("a registered packshot is not dated by its creation")
		}

		j := f.job(t, db, jobtype.Packshot, true)
		testdb.MustExec(t, db, "UPDATE jobs SET created_at = ? WHERE id = ?", jobAt, j.ID)
		testdb.MustExec(t, db, "UPDATE packshots SET job_id = ? WHERE id = ?", j.ID, registered.ID)
		if !recordDatedBy(t, db, registered.ID, "j.created_at") {
			t.Error("a packshot given a job is not dated by its job")
		}
		var read models.Packshot
		if err := db.Take(&read, "id = ?", registered.ID).Error; err != nil {
			t.Fatal(err)
		}
		if !read.RecordCreatedAt.Equal(jobAt.Truncate(time.Microsecond)) && !read.RecordCreatedAt.Equal(jobAt) {
			t.Errorf("the packshot reads record date %v, want its job's %v", read.RecordCreatedAt, jobAt)
		}
	})
}

// 0029's backfill dates every packshot that existed before it by its job's created_at, copied as
// the job's row holds it, else by its own created_at (a registered packshot). The rows are written
// and then given a wrong date (the triggers of 0029 date an insert themselves, and PostgreSQL
// refuses none), then the migration's UPDATE runs over them, as it did at the upgrade.
func TestMigrationDatesExistingPackshotRecords(t *testing.T) {
	t.Parallel()
	backfill := migrationStatement(t, "0029_record_list_indexes.sql", "UPDATE packshots SET record_created_at")
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCandidateFixture(t, db)
		jobAt := time.Date(2026, 3, 1, 9, 30, 5, 500000000, time.UTC)
		j := f.job(t, db, jobtype.Packshot, true)
		testdb.MustExec(t, db, "UPDATE jobs SET created_at = ?, status = ? WHERE id = ?", jobAt, status.JobCompleted, j.ID)
		output := f.outputs(j, 1)[0]
		if err := db.Create(&output).Error; err != nil {
			t.Fatal(err)
		}
		wrong := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		insert := func(id string, jobID *string, at time.Time) {
			testdb.MustExec(t, db, `INSERT INTO packshots (id, account_id, product_id, asset_id, external_ref, voting, job_id, created_at, record_created_at)
				VALUES (?, ?, ?, ?, '', 'pending', ?, ?, ?)`, id, f.acc.ID, f.product.ID, output.ID, jobID, at, wrong)
		}
		insert("made", &j.ID, jobAt.Add(time.Hour))
		insert("registered", nil, jobAt.Add(2*time.Hour))
		testdb.MustExec(t, db, "UPDATE packshots SET record_created_at = ?", wrong)
		if recordDatedBy(t, db, "made", "j.created_at") || recordDatedBy(t, db, "registered", "p.created_at") {
			t.Fatal("the packshots are dated before the backfill")
		}

		testdb.MustExec(t, db, backfill)
		if !recordDatedBy(t, db, "made", "j.created_at") {
			t.Error("a packshot a job made is not dated by its job")
		}
		if !recordDatedBy(t, db, "registered", "p.created_at") {
			t.Error("a registered packshot is not dated by its creation")
		}
	})
}
