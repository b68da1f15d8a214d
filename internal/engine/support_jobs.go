package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// ErrInvalidFilter: a support list's filter has a value that does not exist (a usage mistake).
var ErrInvalidFilter = errors.New("invalid filter")

// JobStatuses are the statuses of the job state machine (docs/job-states.md).
var JobStatuses = []string{
	status.JobPending, status.JobInProgress, status.JobRetryPending,
	status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired,
}

// ValidJobStatus reports whether s is a job status.
func ValidJobStatus(s string) bool { return slices.Contains(JobStatuses, s) }

// Limits of the support lists (Support.ListJobs, Support.FindStragglers).
const (
	DefaultSupportListLimit = 100
	MaxSupportListLimit     = 1000
)

// SupportJobFilter selects the jobs Support.ListJobs returns.
type SupportJobFilter struct {
	Status         string    // required: a job status (JobStatuses)
	Category       string    // optional: an errorCategory (errorcat.All)
	InstallationID string    // optional
	Since          time.Time // optional: jobs updated at or after it
	Mode           Mode      // optional: live or test-mode jobs alone ("" is DefaultMode)
	Limit          int       // 0 means DefaultSupportListLimit
}

// Validate checks the filter's values; errors wrap ErrInvalidFilter.
func (f SupportJobFilter) Validate() error {
	if !ValidJobStatus(f.Status) {
		return fmt.Errorf("%w: status %q is not one of %v", ErrInvalidFilter, f.Status, JobStatuses)
	}
	if f.Category != "" {
		if _, ok := errorcat.Parse(f.Category); !ok {
			return fmt.Errorf("%w: category %q is not one of %v", ErrInvalidFilter, f.Category, errorcat.All)
		}
	}
	if !f.Mode.valid() {
		return fmt.Errorf("%w: mode %q is not one of %v", ErrInvalidFilter, f.Mode, Modes)
	}
	if f.Limit < 0 || f.Limit > MaxSupportListLimit {
		return fmt.Errorf("%w: limit %d is not between 1 and %d", ErrInvalidFilter, f.Limit, MaxSupportListLimit)
	}
	return nil
}

// SupportJobItem is one job of a support list.
type SupportJobItem struct {
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
	Livemode       bool      `json:"livemode"` // false for a test key's job
}

// SupportJobList is the answer of Support.ListJobs.
type SupportJobList struct {
	Jobs  []SupportJobItem `json:"jobs"`
	Count int              `json:"count"`
	Limit int              `json:"limit"` // Count == Limit means there may be more: narrow the filter
}

// ListJobs returns the jobs of every account matching the filter (live and test-mode ones alike
// unless its Mode says which), most recently updated first;
// a filter with a value that does not exist is refused with ErrInvalidFilter, and an installation
// that does not exist is KindNotFound.
func (e *Support) ListJobs(ctx context.Context, f SupportJobFilter) (SupportJobList, error) {
	if err := f.Validate(); err != nil {
		return SupportJobList{}, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultSupportListLimit
	}
	var installations []string
	if f.InstallationID != "" {
		// An installation that does not exist is said so (KindNotFound), as by every command that
		// names one, rather than answered with an empty list that reads as "no such jobs".
		if _, err := e.store.GetInstallation(ctx, f.InstallationID); errors.Is(err, models.ErrNotFound) {
			return SupportJobList{}, missing("installation", f.InstallationID)
		} else if err != nil {
			return SupportJobList{}, err
		}
		// A live installation's jobs, and its test twin's, as the webhook commands show both; the
		// mode then keeps the ones asked for.
		installations = []string{f.InstallationID}
		twin, err := e.store.FindTestTwinOfInstallation(ctx, f.InstallationID)
		switch {
		case err == nil:
			installations = append(installations, twin.ID)
		case !errors.Is(err, models.ErrNotFound):
			return SupportJobList{}, err
		}
	}
	jobs, err := e.store.JobsByStatus(ctx, models.JobStatusFilter{Status: f.Status, Category: f.Category,
		InstallationIDs: installations, Since: f.Since, TestMode: f.Mode.testMode(), Limit: limit})
	if err != nil {
		return SupportJobList{}, err
	}
	out := SupportJobList{Jobs: make([]SupportJobItem, 0, len(jobs)), Count: len(jobs), Limit: limit}
	for _, j := range jobs {
		id := workflows.JobWorkflowID(j.ID, j.Run)
		out.Jobs = append(out.Jobs, SupportJobItem{
			JobID: j.ID, OrderID: j.OrderID, AccountID: j.AccountID, InstallationID: j.InstallationID,
			Status: j.Status, Run: j.Run, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory,
			ErrorHint: j.ErrorHint, ProductRef: j.ProductRef, AIModel: j.AIModel, UpdatedAt: j.UpdatedAt.UTC(),
			WorkflowID: id, TemporalUIURL: e.workflowURL(id), Livemode: !j.TestMode,
		})
	}
	return out, nil
}
