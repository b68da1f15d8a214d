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
	q := e.cfg.DB.WithContext(ctx).Where("installation_id = ?", installationID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.CreatedAfter != nil {
		q = q.Where("created_at >= ?", f.CreatedAfter.UTC())
	}
	if f.CreatedBefore != nil {
		q = q.Where("created_at < ?", f.CreatedBefore.UTC())
	}
	if f.After != nil {
		at := f.After.CreatedAt.UTC()
		q = q.Where("(created_at < ? OR (created_at = ? AND id < ?))", at, at, f.After.ID)
	}
	var jobs []models.Job
	err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&jobs).Error
	return jobs, err
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
	outs, err := models.JobOutputs(e.cfg.DB.WithContext(ctx), ids...)
	if err != nil {
		return JobsPage{}, err
	}
	page := JobsPage{Jobs: make([]Job, len(jobs)), More: more}
	for i := range jobs {
		page.Jobs[i] = jobOf(&jobs[i], outs[jobs[i].ID])
	}
	return page, nil
}
