package webhooks

import (
	"encoding/json"
	"time"

	"github.com/shotflow/shotflow/models"
)

// The client representations of endpoints, deliveries and events (api/openapi.yaml and
// api/external/openapi.yaml: WebhookEndpoint, WebhookDelivery, Event). Both APIs answer them as
// they are, and the endpoint.disabled payload carries an Endpoint, so the three cannot drift apart.
// None of the three rows has a mode of its own: each is of its scope's (an installation's or an
// account's own), which a test twin's is in test mode, so the caller says which (livemode).

// Endpoint is a webhook endpoint as GET /webhook-endpoints/{id} shows it (never its secret).
type Endpoint struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Description    string     `json:"description"`
	Status         string     `json:"status"`
	DisabledReason *string    `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	FailingSince   *time.Time `json:"failing_since"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Livemode       bool       `json:"livemode"` // false for a test key's endpoint
}

// EndpointOf is the representation of a stored endpoint of a scope in live mode (livemode) or in
// test mode.
func EndpointOf(e *models.WebhookEndpoint, livemode bool) Endpoint {
	v := Endpoint{ID: e.ID, URL: e.URL, Events: append([]string{}, e.Events...), Description: e.Description,
		Status: e.Status, DisabledAt: utc(e.DisabledAt), FailingSince: utc(e.FailingSince),
		CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(), Livemode: livemode}
	if e.DisabledReason != "" && e.Status == models.EndpointDisabled {
		reason := e.DisabledReason
		v.DisabledReason = &reason
	}
	return v
}

// Delivery is one event sent to one endpoint, with its latest attempts (at most
// models.MaxKeptAttempts) and the count of all, as GET /webhook-deliveries/{id} shows it.
type Delivery struct {
	ID         string    `json:"id"`
	EventID    string    `json:"event_id"` // the webhook-id
	EndpointID *string   `json:"endpoint_id"`
	Event      string    `json:"event"`
	Status     string    `json:"status"`
	URL        string    `json:"url"`
	Attempts   []Attempt `json:"attempts"` // the latest, oldest first
	// AttemptCount is how many attempts the delivery made, over every run (replays and recovers
	// included): more than len(Attempts) once the oldest were dropped.
	AttemptCount  int        `json:"attempt_count"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	Livemode      bool       `json:"livemode"` // false for a delivery of a test key's event
}

// Attempt is one HTTP request of a delivery.
type Attempt struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	DurationMS int64     `json:"duration_ms"`
}

// DeliveryOf is the representation of a stored delivery and its latest attempts (oldest first, as
// the store keeps them: models.MaxKeptAttempts). Its livemode is the delivery's own mode
// (test_mode, its account's: migration 0028), the mode of any scope that lists it.
func DeliveryOf(d *models.WebhookDelivery, attempts []models.WebhookAttempt) Delivery {
	v := Delivery{ID: d.ID, EventID: d.EventID, EndpointID: d.EndpointID, Event: d.Event, Status: d.Status,
		URL: d.CallbackURL, Attempts: make([]Attempt, 0, len(attempts)), AttemptCount: d.Attempts,
		NextAttemptAt: utc(d.NextAttemptAt), CreatedAt: d.CreatedAt.UTC(), DeliveredAt: utc(d.DeliveredAt), Livemode: !d.TestMode}
	if v.EventID == "" {
		v.EventID = d.ID
	}
	for _, a := range attempts {
		at := Attempt{At: a.StartedAt.UTC(), StatusCode: a.StatusCode, DurationMS: a.LatencyMS}
		if a.Error != "" {
			msg := a.Error
			at.Error = &msg
		}
		v.Attempts = append(v.Attempts, at)
	}
	return v
}

// Event is an event as GET /events/{id} shows it: Data is the body its webhooks carry.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
	Livemode  bool            `json:"livemode"` // false for a test key's event
}

// EventOf is the representation of a stored event of a scope in live mode (livemode) or in test
// mode. The body of an event recorded in an earlier shape (the job under "data", or without
// livemode) is shown as its deliveries send it now (CurrentPayload).
func EventOf(e *models.WebhookEvent, livemode bool) Event {
	data := json.RawMessage(e.Payload)
	if current, err := CurrentPayload(e.Payload, func() (bool, error) { return livemode, nil }); err == nil {
		data = current
	}
	return Event{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt.UTC(), Data: data, Livemode: livemode}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
