// Package status names the states of jobs, orders and uploaded assets. It is a leaf: the
// workflows, which must not link the store or a database driver, and both APIs use these names.
package status

// Job statuses: one state machine for both APIs (docs/job-states.md).
const (
	JobPending      = "pending"
	JobInProgress   = "in_progress"
	JobRetryPending = "retry_pending"
	JobCompleted    = "completed"
	JobFailed       = "failed"
	JobCancelled    = "cancelled"
	JobExpired      = "expired"
)

// Cancel reasons: why a cancelled job was cancelled (jobs.cancel_reason, the plugin job's
// cancel_reason, the external API's cancelReason). A job that was not cancelled has none.
const (
	// CancelRequested: a client asked (the plugin API's DELETE /jobs/{id}, the external API's
	// DELETE /orders/{id}).
	CancelRequested = "requested"
	// CancelDeadline: the job had not started by the deadline its request's Cancel-After header set.
	CancelDeadline = "deadline"
)

// IsTerminalJob reports whether a job in status s will never change again on its own.
func IsTerminalJob(s string) bool {
	switch s {
	case JobCompleted, JobFailed, JobCancelled, JobExpired:
		return true
	}
	return false
}

// Order statuses.
const (
	OrderInProgress = "in_progress"
	OrderCompleted  = "completed"
	OrderFailed     = "failed"
	OrderCancelled  = "cancelled"
)

// Asset statuses: where an upload or an output stands.
const (
	AssetAwaitingUpload = "awaiting_upload"
	AssetUploading      = "uploading"
	AssetProcessing     = "processing" // stored; PrepareInputWorkflow is checking and preparing it
	AssetReady          = "ready"
	AssetInvalid        = "invalid" // stored but unusable: Problem says why
)
