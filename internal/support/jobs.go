package support

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Limits of ListJobs.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// JobFilter selects the jobs ListJobs returns.
type JobFilter struct {
	Status         string    // required: a job status (JobStatuses)
	Category       string    // optional: an errorCategory (errorcat.All)
	InstallationID string    // optional
	Since          time.Time // optional: jobs updated at or after it
	Limit          int       // 0 means DefaultListLimit
}

// Validate checks the filter's values; errors wrap ErrInvalidFilter.
func (f JobFilter) Validate() error {
	if !ValidJobStatus(f.Status) {
		return fmt.Errorf("%w: status %q is not one of %v", ErrInvalidFilter, f.Status, JobStatuses)
	}
	if f.Category != "" {
		if _, ok := errorcat.Parse(f.Category); !ok {
			return fmt.Errorf("%w: category %q is not one of %v", ErrInvalidFilter, f.Category, errorcat.All)
		}
	}
	if f.Limit < 0 || f.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit %d is not between 1 and %d", ErrInvalidFilter, f.Limit, MaxListLimit)
	}
	return nil
}

// JobItem is one job of a list.
type JobItem struct {
	JobID          string    `json:"job_id"`
	OrderID        string    `json:"order_id"`
	AccountID      string    `json:"account_id"`
	InstallationID *string   `json:"installation_id"`
	Status         string    `json:"status"`
	Run            int       `json:"run"`
	AttemptCount   int       `json:"attempt_count"`
	ErrorCategory  *string   `json:"error_category"`
	ErrorHint      *string   `json:"error_hint"`
	ProductRef     string    `json:"product_ref"`
	AIModel        string    `json:"ai_model"`
	UpdatedAt      time.Time `json:"updated_at"`
	WorkflowID     string    `json:"workflow_id"`
	TemporalUIURL  string    `json:"temporal_ui_url"`
}

// JobList is the answer of ListJobs.
type JobList struct {
	Jobs  []JobItem `json:"jobs"`
	Count int       `json:"count"`
	Limit int       `json:"limit"` // Count == Limit means there may be more: narrow the filter
}

// ListJobs returns the jobs matching the filter, most recently updated first.
func ListJobs(ctx context.Context, db *gorm.DB, ui UI, f JobFilter) (JobList, error) {
	if err := f.Validate(); err != nil {
		return JobList{}, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	q := db.WithContext(ctx).Where("status = ?", f.Status)
	if f.Category != "" {
		q = q.Where("error_category = ?", f.Category)
	}
	if f.InstallationID != "" {
		q = q.Where("installation_id = ?", f.InstallationID)
	}
	if !f.Since.IsZero() {
		q = q.Where("updated_at >= ?", f.Since.UTC())
	}
	var jobs []models.Job
	if err := q.Order("updated_at DESC, id DESC").Limit(limit).Find(&jobs).Error; err != nil {
		return JobList{}, err
	}
	out := JobList{Jobs: make([]JobItem, 0, len(jobs)), Count: len(jobs), Limit: limit}
	for _, j := range jobs {
		id := workflows.JobWorkflowID(j.ID, j.Run)
		out.Jobs = append(out.Jobs, JobItem{
			JobID: j.ID, OrderID: j.OrderID, AccountID: j.AccountID, InstallationID: j.InstallationID,
			Status: j.Status, Run: j.Run, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory,
			ErrorHint: j.ErrorHint, ProductRef: j.ProductRef, AIModel: j.AIModel, UpdatedAt: j.UpdatedAt.UTC(),
			WorkflowID: id, TemporalUIURL: ui.WorkflowURL(id),
		})
	}
	return out, nil
}
