package webhooks

import (
	"slices"

	"github.com/shotflow/shotflow/models"
)

// Event types beside the job ends (payload.go), docs/webhooks.md.
const (
	// EventJobStarted: the first attempt of a job run began (plugin API).
	EventJobStarted = "job.started"
	// EventJobRetrying: an attempt failed with a retryable category and another is scheduled.
	EventJobRetrying = "job.retrying"
	// EventOrderCompleted: every job of an order is terminal (both APIs).
	EventOrderCompleted = "order.completed"
	// EventRecordDone and EventRecordFailed: a record of the external API reached DONE or FAILED.
	EventRecordDone   = "record.done"
	EventRecordFailed = "record.failed"
	// EventEndpointDisabled: an endpoint was disabled after failing for WEBHOOK_DISABLE_AFTER.
	EventEndpointDisabled = "endpoint.disabled"
	// EventWebhookTest: a test send (POST /webhook-endpoints/{id}/test).
	EventWebhookTest = "webhook.test"
)

// PluginEvents are the event types a plugin installation's endpoint may subscribe to.
var PluginEvents = []string{
	EventJobStarted, EventJobRetrying, EventJobCompleted, EventJobFailed, EventJobCancelled,
	EventOrderCompleted, EventEndpointDisabled, EventWebhookTest,
	EventCreditsLow, EventSpendLimitAlert, EventSpendLimitReached,
}

// ExternalEvents are the event types a team account's endpoint may subscribe to.
var ExternalEvents = []string{
	EventRecordDone, EventRecordFailed, EventOrderCompleted, EventEndpointDisabled, EventWebhookTest,
	EventCreditsLow, EventSpendLimitAlert, EventSpendLimitReached,
}

// DefaultPluginEvents are the subscriptions of a plugin endpoint created without events: the job
// ends, what a callback URL received before endpoints existed.
var DefaultPluginEvents = models.CallbackEvents

// DefaultExternalEvents are the subscriptions of a team account's endpoint created without events.
var DefaultExternalEvents = []string{EventRecordDone, EventRecordFailed, EventOrderCompleted}

// EventsOf returns the event types of an API: the plugin's when plugin is set, else the external API's.
func EventsOf(plugin bool) []string {
	if plugin {
		return PluginEvents
	}
	return ExternalEvents
}

// IsEvent reports whether name is an event type of the API (EventsOf).
func IsEvent(plugin bool, name string) bool { return slices.Contains(EventsOf(plugin), name) }
