package engine_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// storeJobs stores one job per creation time, pending, of the installation, in one order, and
// returns them; a completed one (status) gets one output file.
func storeJobs(t *testing.T, db *gorm.DB, inst *models.Installation, st string, at ...time.Time) []models.Job {
	t.Helper()
	now := time.Now().UTC()
	o := models.Order{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&o).Error)
	var jobs []models.Job
	for i, created := range at {
		j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: inst.AccountID, InstallationID: &inst.ID,
			JobType: jobtype.PhotoShoot, Position: i, ProductRef: "REF-" + strconv.Itoa(i), ProductLabel: "Label",
			AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, Voting: models.VotingPending,
			CreatedAt: created, UpdatedAt: created}
		require.NoError(t, db.Create(&j).Error)
		if st == status.JobCompleted {
			require.NoError(t, db.Create(&models.Asset{ID: models.OutputAssetID(j.ID, 1, 0), AccountID: inst.AccountID,
				InstallationID: &inst.ID, Kind: models.AssetKindOutput, Status: status.AssetReady, ContentType: "image/png",
				SizeBytes: 4, BlobKey: "outputs/" + j.ID + ".png", JobID: &j.ID, CreatedAt: created, UpdatedAt: created}).Error)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// twoInstallations creates an account with two installations.
func twoInstallations(t *testing.T, db *gorm.DB) (*models.Installation, *models.Installation) {
	t.Helper()
	acc, err := models.CreateAccount(db, "acme", 0)
	require.NoError(t, err)
	box, err := secrets.NewBox(make([]byte, 32))
	require.NoError(t, err)
	created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec")
	require.NoError(t, err)
	other, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "other"}, "whsec")
	require.NoError(t, err)
	return &created.Installation, &other.Installation
}

// newestFirst is the job IDs in (created_at DESC, id DESC) order.
func newestFirst(jobs ...models.Job) []string {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b models.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.ID > b.ID {
			return -1
		}
		return 1
	})
	return jobIDs(sorted)
}

func jobIDs(js []models.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// viewIDs are the IDs of job views, in order.
func viewIDs(js []engine.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

// QueryJobs on both databases: inclusive and exclusive bounds at microsecond precision (what
// PostgreSQL keeps), ties broken by ID, and a cursor that resumes exactly after its job.
func TestQueryJobsOnBothDatabases(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
		inst, other := twoInstallations(t, db)
		base := time.Date(2026, 5, 1, 9, 0, 0, 123456000, time.UTC)
		var at []time.Time
		for i := range 10 {
			at = append(at, base.Add(time.Duration(i/3)*time.Microsecond))
		}
		jobs := storeJobs(t, db, inst, status.JobPending, at...)
		storeJobs(t, db, other, status.JobPending, base)

		all, err := eng.Jobs.QueryJobs(ctx, inst.ID, engine.JobFilter{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, newestFirst(jobs...), jobIDs(all))

		after, before := base.Add(time.Microsecond), base.Add(3*time.Microsecond)
		got, err := eng.Jobs.QueryJobs(ctx, inst.ID, engine.JobFilter{CreatedAfter: &after, CreatedBefore: &before, Limit: 100})
		require.NoError(t, err)
		assert.Equal(t, newestFirst(jobs[3:9]...), jobIDs(got), "created_after inclusive, created_before exclusive")

		// Resume after every position in turn: the rest of the list follows, nothing else.
		want := newestFirst(jobs...)
		for i, j := range all {
			cur := &engine.JobCursor{CreatedAt: j.CreatedAt, ID: j.ID}
			rest, err := eng.Jobs.QueryJobs(ctx, inst.ID, engine.JobFilter{After: cur, Limit: 100})
			require.NoError(t, err)
			assert.Equal(t, want[i+1:], append([]string{}, jobIDs(rest)...), "after position %d", i)
		}
	})
}

// ListJobs pages with one job more than it answers: More tells whether a page follows, and the
// outputs of the page's completed jobs come along; another installation's jobs never show.
func TestListJobsPagesWithOutputs(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
	inst, other := twoInstallations(t, db)
	base := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	jobs := storeJobs(t, db, inst, status.JobCompleted, base, base.Add(time.Second), base.Add(2*time.Second))
	storeJobs(t, db, other, status.JobCompleted, base.Add(time.Hour))

	page, err := eng.Jobs.ListJobs(ctx, inst.ID, engine.JobFilter{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, newestFirst(jobs...)[:2], viewIDs(page.Jobs))
	assert.True(t, page.More, "a third job follows")
	for _, j := range page.Jobs {
		require.Len(t, j.Outputs, 1, "job %s", j.ID)
		assert.Equal(t, models.OutputAssetID(j.ID, 1, 0), j.Outputs[0].AssetID, "the outputs of the page's jobs only")
	}

	last := page.Jobs[1]
	page, err = eng.Jobs.ListJobs(ctx, inst.ID, engine.JobFilter{Limit: 2, After: &engine.JobCursor{CreatedAt: last.CreatedAt, ID: last.ID}})
	require.NoError(t, err)
	assert.Equal(t, []string{jobs[0].ID}, viewIDs(page.Jobs))
	assert.False(t, page.More, "the last page")
}
