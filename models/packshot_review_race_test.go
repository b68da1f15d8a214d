package models_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A review that archives a record whose job still runs, sent with a vote, waits for the job's row
// when the job is completing. If the completion makes the packshot while the review waits, the
// review applies to the packshot as a whole, as it would have a moment later: archived AND voted,
// with the job carrying the same verdict. (On SQLite, writers run one at a time, so the packshot
// is either made before the review reads or after it commits; PostgreSQL runs them side by side.)
func TestAReviewWaitingOnACompletingJobAppliesItsVoteToThePackshotMadeMeanwhile(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	ctx := context.Background()
	f := newCandidateFixture(t, db)
	store := models.NewStore(db)
	j := f.recordJob(t, db)
	record := *j.RecordID

	// The completion holds the job's row, as FinishJob's transaction does from its first statement.
	completion := db.Begin()
	defer completion.Rollback()
	testdb.MustExec(t, completion, "SELECT id FROM jobs WHERE id = ? FOR UPDATE", j.ID)

	reviewed := make(chan error, 1)
	go func() {
		reviewed <- store.ReviewAccountPackshot(ctx, f.acc.ID, record,
			models.PackshotReview{Voting: models.RefVotingApproved, Archive: true}, time.Now().UTC())
	}()
	waitForLockWait(t, db)

	if _, err := models.CompleteJob(completion, j.ID, j.Run, f.outputs(j, 1)); err != nil {
		t.Fatal(err)
	}
	if err := completion.Commit().Error; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reviewed:
		if err != nil {
			t.Fatalf("the review: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the review did not end after the completion committed")
	}

	var p models.Packshot
	if err := db.Take(&p, "id = ?", record).Error; err != nil {
		t.Fatal(err)
	}
	if p.ArchivedAt == nil || p.Voting != models.VotingAccepted || p.VotingAt == nil {
		t.Errorf("the packshot made while the review waited: archived %v, voting %q at %v; want archived and accepted",
			p.ArchivedAt, p.Voting, p.VotingAt)
	}
	read, err := models.GetJob(db, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Voting != models.VotingAccepted {
		t.Errorf("the job of the packshot approved while it completed has voting %q; want %s", read.Voting, models.VotingAccepted)
	}
}

// waitForLockWait returns once a session of db's database other than db's own waits for a lock.
func waitForLockWait(t *testing.T, db *gorm.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := db.Raw(`SELECT COUNT(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no session waited for a lock within 10 s")
}
