package models_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// orderWithDeadlines places an order of one job per deadline (nil: none), each costing 2 credits.
func orderWithDeadlines(t *testing.T, db *gorm.DB, accountID string, deadlines ...*time.Time) (*models.Order, []models.Job) {
	t.Helper()
	order, jobs := orderOf(accountID, len(deadlines), 2, time.Now().UTC())
	for i, d := range deadlines {
		jobs[i].StartDeadline = d
	}
	require.NoError(t, models.PlaceOrder(db, order, jobs, nil))
	return order, jobs
}

func at(t time.Time) *time.Time { return &t }

// A job whose start deadline has passed before its first attempt is never begun: BeginAttempt
// refuses it (ErrJobNotRunnable) and leaves it pending, and the deadline's cancel ends it cancelled
// with its reason, its reservation released and its order's counters moved, once. A job whose
// deadline is ahead, or that has none, begins, and the deadline's cancel leaves it. A job that
// began before its deadline runs on after it: its next attempts begin and no cancel takes it.
func TestStartDeadline(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 20)
		require.NoError(t, err)
		now := time.Now().UTC()
		past, ahead := at(now.Add(-time.Second)), at(now.Add(time.Hour))
		order, jobs := orderWithDeadlines(t, db, acc.ID, past, ahead, nil, ahead)
		late, early, none, begun := jobs[0], jobs[1], jobs[2], jobs[3]

		// Past its deadline: not begun, and still pending.
		require.ErrorIs(t, s.BeginAttempt(ctx, late.ID, 1, 1), models.ErrJobNotRunnable)
		j, err := s.GetJob(ctx, late.ID)
		require.NoError(t, err)
		require.Equal(t, status.JobPending, j.Status)
		require.Nil(t, j.StartedAt)
		require.Zero(t, j.AttemptCount)
		require.NotNil(t, j.StartDeadline)
		require.WithinDuration(t, *past, *j.StartDeadline, time.Millisecond)

		// Its deadline's cancel: cancelled for the deadline, released, counted; once.
		j, ok, err := s.CancelJobNotBegun(ctx, late.ID, 1, status.CancelDeadline)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, status.JobCancelled, j.Status)
		require.NotNil(t, j.CancelReason)
		require.Equal(t, status.CancelDeadline, *j.CancelReason)
		require.NotNil(t, j.CompletedAt)
		_, ok, err = s.CancelJobNotBegun(ctx, late.ID, 1, status.CancelDeadline)
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.CancelJobNotBegun(ctx, late.ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.False(t, ok, "a job the deadline cancelled was cancelled again")
		stored, err := s.GetJob(ctx, late.ID)
		require.NoError(t, err)
		require.Equal(t, status.CancelDeadline, *stored.CancelReason)

		// A deadline ahead, or none: the deadline's cancel leaves the job, and it begins.
		for _, job := range []models.Job{early, none} {
			_, ok, err = s.CancelJobNotBegun(ctx, job.ID, 1, status.CancelDeadline)
			require.NoError(t, err)
			require.False(t, ok, "job %s was cancelled before any deadline", job.ID)
			require.NoError(t, s.BeginAttempt(ctx, job.ID, 1, 1))
		}

		// Begun before its deadline, then the deadline passes: it runs on.
		require.NoError(t, s.BeginAttempt(ctx, begun.ID, 1, 1))
		require.NoError(t, db.Model(&models.Job{}).Where("id = ?", begun.ID).Update("start_deadline", now.Add(-time.Minute)).Error)
		require.NoError(t, s.MarkRetryPending(ctx, begun.ID, 1, "TRANSIENT_INFRA", "", ""))
		_, ok, err = s.CancelJobNotBegun(ctx, begun.ID, 1, status.CancelDeadline)
		require.NoError(t, err)
		require.False(t, ok, "a job that had begun was cancelled at its deadline")
		require.NoError(t, s.BeginAttempt(ctx, begun.ID, 1, 2), "a started job's next attempt was refused at its deadline")

		// One release of 2 credits, and the order counts one cancelled job.
		var releases []models.LedgerEntry
		require.NoError(t, db.Where("order_id = ? AND kind = ?", order.ID, models.LedgerRelease).Find(&releases).Error)
		require.Len(t, releases, 1)
		require.Equal(t, late.ID, *releases[0].JobID)
		var o models.Order
		require.NoError(t, db.Take(&o, "id = ?", order.ID).Error)
		require.Equal(t, 1, o.JobsCancelled)
		require.Equal(t, int64(2), o.CreditsReleased)
		acct := assertLedgerMatches(t, db, acc.ID)
		require.Equal(t, int64(20-4*2+2), acct.CreditBalance)
		require.Equal(t, int64(3*2), acct.CreditsReserved)

		// Neither a client's cancel nor an unknown reason takes another reason.
		_, _, err = s.CancelJobNotBegun(ctx, early.ID, 1, "bored")
		require.Error(t, err)
	})
}

// A client's cancel records its reason too, whether the database decided it or a workflow of an
// earlier release (EndJob, replaying the cancel-job Update), and an operator's re-run clears the
// deadline.
func TestCancelReasonOfAClientsCancelAndARerun(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 20)
		require.NoError(t, err)
		deadline := at(time.Now().UTC().Add(time.Hour))
		_, jobs := orderWithDeadlines(t, db, acc.ID, deadline, deadline, nil)

		j, ok, err := s.CancelJobNotBegun(ctx, jobs[0].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, status.CancelRequested, *j.CancelReason)
		j, ok, err = s.EndJob(ctx, jobs[2].ID, 1, status.JobCancelled, "", "", "")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, status.CancelRequested, *j.CancelReason)

		// A job that fails and runs again is no longer bound by its request's deadline.
		require.NoError(t, s.BeginAttempt(ctx, jobs[1].ID, 1, 1))
		failed, ended, err := s.EndJob(ctx, jobs[1].ID, 1, status.JobFailed, "CONTENT_POLICY", "", "")
		require.NoError(t, err)
		require.True(t, ended)
		moved, err := s.BeginNextRun(ctx, failed, time.Now().UTC())
		require.NoError(t, err)
		require.True(t, moved)
		j, err = s.GetJob(ctx, jobs[1].ID)
		require.NoError(t, err)
		require.Nil(t, j.StartDeadline)
		require.Nil(t, j.CancelReason)
	})
}

// A client's cancel and the deadline's, racing for jobs past their deadline: each job is cancelled
// once, with the reason of the one that won, and released once.
func TestDeadlineCancelRacesAClientsCancel(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		const n = 30
		acc, err := models.CreateAccount(db, "acme", 2*n)
		require.NoError(t, err)
		deadlines := make([]*time.Time, n)
		for i := range deadlines {
			deadlines[i] = at(time.Now().UTC().Add(-time.Second))
		}
		order, jobs := orderWithDeadlines(t, db, acc.ID, deadlines...)
		byDeadline, byClient := make([]bool, n), make([]bool, n)
		errs := make([]error, 2*n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range jobs {
			wg.Go(func() {
				<-start
				_, byDeadline[i], errs[2*i] = s.CancelJobNotBegun(ctx, jobs[i].ID, 1, status.CancelDeadline)
			})
			wg.Go(func() {
				<-start
				_, byClient[i], errs[2*i+1] = s.CancelJobNotBegun(ctx, jobs[i].ID, 1, status.CancelRequested)
			})
		}
		close(start)
		wg.Wait()
		for i := range jobs {
			require.NoError(t, errs[2*i])
			require.NoError(t, errs[2*i+1])
			require.NotEqual(t, byDeadline[i], byClient[i], "job %d: cancelled by both or by neither", i)
			j, err := s.GetJob(ctx, jobs[i].ID)
			require.NoError(t, err)
			want := status.CancelRequested
			if byDeadline[i] {
				want = status.CancelDeadline
			}
			require.Equal(t, want, *j.CancelReason)
		}
		var o models.Order
		require.NoError(t, db.Take(&o, "id = ?", order.ID).Error)
		require.Equal(t, n, o.JobsCancelled)
		require.Equal(t, status.OrderCancelled, o.Status)
		require.Equal(t, int64(2*n), o.CreditsReleased)
		assertLedgerMatches(t, db, acc.ID)
	})
}

// The deadline sweep's page (JobsPastStartDeadline) is the pending jobs whose deadline has passed,
// earliest first, up to its limit, read through the partial index jobs_pending_start_deadline:
// neither a job without a deadline, nor one whose deadline is ahead, nor one that has begun or
// ended.
func TestJobsPastStartDeadline(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 100)
		require.NoError(t, err)
		now := time.Now().UTC().Truncate(time.Millisecond)
		_, jobs := orderWithDeadlines(t, db, acc.ID,
			at(now.Add(-time.Minute)), at(now.Add(-3*time.Minute)), nil, at(now.Add(time.Minute)),
			at(now.Add(-2*time.Minute)), at(now.Add(-4*time.Minute)), at(now.Add(-5*time.Minute)))
		// jobs[5] began before its deadline; jobs[6] was cancelled by its client.
		require.NoError(t, db.Model(&models.Job{}).Where("id = ?", jobs[5].ID).
			Updates(map[string]any{"status": status.JobInProgress, "started_at": now.Add(-10 * time.Minute), "attempt_count": 1}).Error)
		_, ok, err := s.CancelJobNotBegun(ctx, jobs[6].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.True(t, ok)
		testdb.MustExec(t, db, "ANALYZE")

		stop := testdb.RecordStatements(db)
		due, err := s.JobsPastStartDeadline(ctx, now, 2)
		statements := stop()
		require.NoError(t, err)
		require.Equal(t, []string{jobs[1].ID, jobs[4].ID}, ids(due))
		require.Equal(t, 1, due[0].Run)
		due, err = s.JobsPastStartDeadline(ctx, now, 10)
		require.NoError(t, err)
		require.Equal(t, []string{jobs[1].ID, jobs[4].ID, jobs[0].ID}, ids(due))

		require.Len(t, statements, 1)
		explain := "EXPLAIN "
		if db.Dialector.Name() == "sqlite" {
			explain = "EXPLAIN QUERY PLAN "
		}
		args := []any{now}
		if strings.Contains(statements[0], "LIMIT ?") || strings.Contains(statements[0], "LIMIT $2") {
			args = append(args, 2)
		}
		var plan []map[string]any
		require.NoError(t, db.Raw(explain+statements[0], args...).Scan(&plan).Error)
		var lines []string
		for _, row := range plan {
			for k, v := range row {
				if k == "QUERY PLAN" || k == "detail" {
					lines = append(lines, strings.TrimSpace(toString(v)))
				}
			}
		}
		text := strings.Join(lines, "\n")
		if db.Dialector.Name() == "sqlite" {
			// PostgreSQL's planner may read a table this small in full; SQLite follows the index
			// its WHERE clause matches.
			require.Contains(t, text, "jobs_pending_start_deadline", "the sweep's page does not use its index:\n%s", text)
		}
	})
}

func ids(jobs []models.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// 0018 gives every job cancelled before it the reason its cancel had, a client's request, and
// none to the others; their deadlines are empty.
func TestMigrationGivesEarlierCancelsTheirReason(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 17)
		t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Old', ?, ?)", t0, t0)
		testdb.MustExec(t, db, `INSERT INTO orders (id, account_id, api, job_type, session_config, status, jobs_total, created_at, updated_at)
				VALUES ('order-1', 'acc', 'external', 'photo_shoot', '{}', 'completed', 3, ?, ?)`, t0, t0)
		for _, j := range []struct{ id, status string }{{"job-c", "cancelled"}, {"job-d", "completed"}, {"job-f", "failed"}} {
			testdb.MustExec(t, db, `INSERT INTO jobs (id, order_id, account_id, job_type, position, ai_model, aspect_ratio, credit_cost, status, created_at, updated_at)
					VALUES (?, 'order-1', 'acc', 'photo_shoot', 0, 'local/studio-v1', '1:1', 1, ?, ?, ?)`, j.id, j.status, t0, t0)
		}
		_, err := models.Migrate(t.Context(), db)
		require.NoError(t, err)
		var jobs []models.Job
		require.NoError(t, db.Order("id").Find(&jobs).Error)
		require.Len(t, jobs, 3)
		for _, j := range jobs {
			require.Nil(t, j.StartDeadline, j.ID)
			if j.ID == "job-c" {
				require.NotNil(t, j.CancelReason)
				require.Equal(t, status.CancelRequested, *j.CancelReason)
			} else {
				require.Nil(t, j.CancelReason, j.ID)
			}
		}
	})
}
