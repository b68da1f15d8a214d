package engine

import (
	"context"
	"time"

	"github.com/shotflow/shotflow/models"
)

// JobCursor is a position in the (created_at DESC, id DESC) order of an installation's jobs: the
// last job of a page. The next page starts right after it.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// JobFilter selects a page of an installation's jobs.
type JobFilter struct {
	Status        string     // "": any
	CreatedAfter  *time.Time // inclusive
	CreatedBefore *time.Time // exclusive
	After         *JobCursor // start after this job
	Limit         int
}

// QueryJobs returns up to f.Limit jobs of the installation matching f, newest first by
// (created_at, id). The order is total and the cursor is a position in it (keyset pagination), so
// a client paging through never sees a job twice or misses one, however many jobs are created
// meanwhile: new jobs sort before every cursor handed out earlier. The query walks the index
// jobs_installation_created (installation_id, created_at, id).
func (e *Jobs) QueryJobs(ctx context.Context, installationID string, f JobFilter) ([]models.Job, error) {
	filter := models.InstallationJobFilter{Status: f.Status, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore, Limit: f.Limit}
	if f.After != nil {
		filter.After = &models.JobCursor{CreatedAt: f.After.CreatedAt, ID: f.After.ID}
	}
	return e.store.InstallationJobs(ctx, installationID, filter)
}

// JobsPage is a page of an installation's jobs, newest first, each with its output files; More
// says that jobs follow the last one.
type JobsPage struct {
	Jobs []Job
	More bool
}

// ListJobs returns the page of the installation's jobs that f selects (QueryJobs) with their
// outputs.
func (e *Jobs) ListJobs(ctx context.Context, installationID string, f JobFilter) (JobsPage, error) {
	limit := f.Limit
	f.Limit++ // one more tells whether there is a next page
	jobs, err := e.QueryJobs(ctx, installationID, f)
	if err != nil {
		return JobsPage{}, err
	}
	jobs, more := trimPage(jobs, limit)
	ids := make([]string, len(jobs))
	for i := range jobs {
		ids[i] = jobs[i].ID
	}
	outs, err := e.store.JobOutputs(ctx, ids...)
	if err != nil {
		return JobsPage{}, err
	}
	page := JobsPage{Jobs: make([]Job, len(jobs)), More: more}
	for i := range jobs {
		page.Jobs[i] = jobOf(&jobs[i], outs[jobs[i].ID])
	}
	return page, nil
}
