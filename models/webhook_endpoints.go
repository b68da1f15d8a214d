package models

import (
	"time"
)

// Webhook endpoint statuses.
const (
	EndpointEnabled  = "enabled"
	EndpointDisabled = "disabled"
)

// Why an endpoint is disabled (WebhookEndpoint.DisabledReason).
const (
	EndpointDisabledManually = "manual"  // PATCH status=disabled
	EndpointDisabledFailing  = "failing" // every attempt failed for WEBHOOK_DISABLE_AFTER
)

// MaxWebhookEndpoints is how many live endpoints an installation or an account may have.
const MaxWebhookEndpoints = 10

// CallbackEvents are the events a callback URL received before endpoints existed: the endpoint
// made of one subscribes to them (and so does a plugin endpoint created without events).
var CallbackEvents = []string{"job.completed", "job.failed", "job.cancelled"}

// WebhookEndpoint is a URL that receives the events it subscribed to, of one installation (plugin
// API) or of one team account (external API, InstallationID nil). Plugin endpoints sign with their
// installation's secret; an account's endpoints have their own (SecretEnc).
type WebhookEndpoint struct {
	ID                       string `gorm:"primaryKey"`
	AccountID                string
	InstallationID           *string
	URL                      string `gorm:"column:url"`
	Events                   StringList
	Description              string
	Status                   string
	DisabledReason           string
	DisabledAt               *time.Time
	FailingSince             *time.Time // the first failed attempt since the last delivered one
	SecretEnc                string
	PreviousSecretEnc        string
	PreviousSecretValidUntil *time.Time
	RecoveringSince          *time.Time // a recover is queueing its deliveries
	CreatedAt                time.Time
	UpdatedAt                time.Time
	DeletedAt                *time.Time
}

// Subscribes reports whether the endpoint receives events of type event.
func (e *WebhookEndpoint) Subscribes(event string) bool {
	for _, name := range e.Events {
		if name == event {
			return true
		}
	}
	return false
}

// WebhookEvent is something that happened to an installation's or an account's orders, jobs or
// endpoints, with the body every delivery of it sends. Its ID is the webhook-id of those deliveries.
type WebhookEvent struct {
	ID             string `gorm:"primaryKey"`
	AccountID      string
	InstallationID *string
	Type           string
	Payload        JSON
	OrderID        *string
	JobID          *string
	Test           bool // a test send (POST /webhook-endpoints/{id}/test): not listed by GET /events
	CreatedAt      time.Time
}
