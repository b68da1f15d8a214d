// Package support holds what support staff do through `shotflow admin`: list jobs by status and
// error category, run a failed or expired job again as a new run inside its order, replay a
// webhook, and show an order with its jobs, credit ledger, webhook deliveries, retry audit trail
// and the Temporal UI link of every workflow. Results are plain structs the admin command prints
// as JSON.
package support

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Errors of the support operations; each is wrapped with the detail an operator needs.
var (
	// ErrInvalidFilter: a jobs list filter has a value that does not exist (a usage mistake).
	ErrInvalidFilter = errors.New("invalid filter")
	// ErrNotRetryable: the job is not failed or expired, or changed while it was being retried.
	ErrNotRetryable = engine.ErrNotRetryable
	// ErrReservationNotReleased: the ledger has no release of the current run's reservation, so
	// a new reservation would hold the job's credits twice.
	ErrReservationNotReleased = engine.ErrReservationNotReleased
)

// JobStatuses are the statuses of the job state machine (docs/job-states.md).
var JobStatuses = []string{
	status.JobPending, status.JobInProgress, status.JobRetryPending,
	status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired,
}

// ValidJobStatus reports whether s is a job status.
func ValidJobStatus(s string) bool { return slices.Contains(JobStatuses, s) }

// UI builds links into the Temporal Web UI.
type UI struct {
	BaseURL   string // TEMPORAL_UI_URL, e.g. http://localhost:8233
	Namespace string // TEMPORAL_NAMESPACE
}

// WorkflowURL is the UI page of the workflow with the given ID (it shows the latest run); empty
// when no UI is configured.
func (u UI) WorkflowURL(workflowID string) string {
	if u.BaseURL == "" {
		return ""
	}
	ns := u.Namespace
	if ns == "" {
		ns = "default"
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimRight(u.BaseURL, "/"), url.PathEscape(ns), url.PathEscape(workflowID))
}

// notFound is models.ErrNotFound (for errors.Is) saying what was looked for.
func notFound(what, id string) error { return notFoundError{what: what, id: id} }

type notFoundError struct{ what, id string }

func (e notFoundError) Error() string        { return fmt.Sprintf("%s %s does not exist", e.what, e.id) }
func (e notFoundError) Is(target error) bool { return target == models.ErrNotFound }
