package contract

import "time"

// ApplicationError types of the webhook activities; both are non-retryable.
const (
	// ErrTypeWebhookJobNotTerminal: RecordJobWebhook was asked about a job run that has not
	// ended (or has been superseded by a newer run).
	ErrTypeWebhookJobNotTerminal = "WEBHOOK_JOB_NOT_TERMINAL"
	// ErrTypeWebhookDeliveryNotFound: DeliverWebhook was given an unknown delivery ID.
	ErrTypeWebhookDeliveryNotFound = "WEBHOOK_DELIVERY_NOT_FOUND"
)

// RecordWebhookInput names a job run that reached a terminal status.
type RecordWebhookInput struct {
	JobID string
	Run   int
}

// RecordWebhookResult is the delivery of a job run's event that the workflow starts as a child.
// Deliver is false when the workflow has nothing to start: since endpoints (issue 24) the
// activity that records a job's events starts their deliveries itself after its commit, so every
// new result says false; histories recorded before hold true and replay their child starts. The
// IDs feed the delivery workflow's search attributes.
type RecordWebhookResult struct {
	DeliveryID     string
	Deliver        bool
	AccountID      string
	InstallationID string
	OrderID        string
}

// DeliverInput is one attempt of a delivery.
type DeliverInput struct {
	DeliveryID string
	// Attempt is the number of this attempt within its workflow run (1 is the first).
	Attempt int
	// Replay is set for attempts of a run started by POST /webhooks/{id}/replay.
	Replay bool
	// NextDelay is the scheduled wait before the next attempt should this one fail (at least
	// the receiver's Retry-After is waited); 0 means this is the run's last attempt.
	NextDelay time.Duration
}

// DeliverResult is how an attempt went. An attempt that got no 2xx is a result, not an error:
// the workflow decides what happens next.
type DeliverResult struct {
	Delivered bool
	// Stopped: no attempt was made and none will be: the endpoint is disabled (the delivery is
	// held) or deleted (it failed). The run ends.
	Stopped    bool          `json:",omitempty"`
	StatusCode int           // 0 when no HTTP answer arrived
	RetryAfter time.Duration // the receiver's Retry-After, if any
}
