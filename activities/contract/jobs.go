package contract

import (
	"time"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// ErrTypeJobNotRunnable is the ApplicationError type BeginAttempt returns for a job that is
// already terminal (for example cancelled before it started).
const ErrTypeJobNotRunnable = "JOB_NOT_RUNNABLE"

// AttemptInput names one attempt of one job run.
type AttemptInput struct {
	JobID   string
	Run     int
	Attempt int
}

// OutputFile describes one stored output of a generate attempt.
type OutputFile struct {
	AssetID     string
	BlobKey     string
	ContentType string
	SizeBytes   int64
	Width       int
	Height      int
	SHA256      string
}

// GenerateResult lists the files one successful attempt stored.
type GenerateResult struct {
	Outputs []OutputFile
}

// CompleteInput records a successful job run.
type CompleteInput struct {
	JobID   string
	Run     int
	Outputs []OutputFile
}

// EndInput records a job run ending without output.
type EndInput struct {
	JobID    string
	Run      int
	Status   string // failed, cancelled or expired
	Category errorcat.Category
	Detail   string // raw failure detail, kept internal
}

// RetryPendingInput records a failed attempt that will be retried.
type RetryPendingInput struct {
	JobID    string
	Run      int
	Category errorcat.Category
	Detail   string
	// Attempt is the attempt that failed, and NextAttemptAt when the next one is due, for a
	// retryable failure (job.retrying); NextAttemptAt is nil while the job waits for an input and
	// in histories recorded before the event existed.
	Attempt       int        `json:",omitempty"`
	NextAttemptAt *time.Time `json:",omitempty"`
}

// FinishJobInput ends a job run: exactly one of Complete and End is set.
type FinishJobInput struct {
	Complete *CompleteInput `json:",omitempty"`
	End      *EndInput      `json:",omitempty"`
}
