package external

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/instant"
)

// The account's webhooks (api/external/openapi.yaml, tag Webhooks): its endpoints, the log of
// their deliveries and its events, each scoped to the key's account and its own endpoints (those
// of no plugin installation). The answers are the engine's webhook views, as in the plugin API; refusals are the external {error} body. The engine checks the values (URL, event types,
// statuses, limits, cursors) for both APIs alike; the handlers check the body's shape and the
// path's ids.

// CreatedEndpoint answers POST /webhook-endpoints: the endpoint and its signing secret, which no
// other answer shows.
type CreatedEndpoint struct {
	engine.WebhookEndpoint
	Secret string `json:"secret"`
}

// RotatedSecret answers POST /webhook-endpoints/{id}/rotate-secret.
type RotatedSecret struct {
	ID                       string    `json:"id"`
	Secret                   string    `json:"secret"`
	PreviousSecretValidUntil time.Time `json:"previous_secret_valid_until"`
}

// EndpointsPage answers GET /webhook-endpoints; NextCursor is null on the last page.
type EndpointsPage struct {
	Endpoints  []engine.WebhookEndpoint `json:"webhook_endpoints"`
	NextCursor *string                  `json:"next_cursor"`
}

// DeliveriesPage answers GET /webhook-deliveries.
type DeliveriesPage struct {
	Deliveries []engine.WebhookDelivery `json:"webhook_deliveries"`
	NextCursor *string                  `json:"next_cursor"`
}

// EventsPage answers GET /events.
type EventsPage struct {
	Events     []engine.WebhookEvent `json:"events"`
	NextCursor *string               `json:"next_cursor"`
}

// TestSent answers POST /webhook-endpoints/{id}/test.
type TestSent struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
}

// Recovered answers POST /webhook-endpoints/{id}/recover.
type Recovered struct {
	DeliveriesQueued int `json:"deliveries_queued"`
}

// registerWebhooks mounts the webhook routes, all under ScopeWebhooks.
func (h *Handler) registerWebhooks(add route) {
	none, body := inputcheck.NoBody, inputcheck.JSONBody(maxJSONBody)
	add(http.MethodPost, "/webhook-endpoints", body, ScopeWebhooks, h.createEndpoint)
	add(http.MethodGet, "/webhook-endpoints", none, ScopeWebhooks, h.listEndpoints)
	add(http.MethodGet, "/webhook-endpoints/:id", none, ScopeWebhooks, h.getEndpoint)
	add(http.MethodPatch, "/webhook-endpoints/:id", body, ScopeWebhooks, h.updateEndpoint)
	add(http.MethodDelete, "/webhook-endpoints/:id", none, ScopeWebhooks, h.deleteEndpoint)
	add(http.MethodPost, "/webhook-endpoints/:id/rotate-secret", none, ScopeWebhooks, h.rotateEndpointSecret)
	add(http.MethodPost, "/webhook-endpoints/:id/test", body, ScopeWebhooks, h.testEndpoint)
	add(http.MethodPost, "/webhook-endpoints/:id/recover", body, ScopeWebhooks, h.recoverEndpoint)
	add(http.MethodGet, "/webhook-deliveries", none, ScopeWebhooks, h.listDeliveries)
	add(http.MethodGet, "/webhook-deliveries/:id", none, ScopeWebhooks, h.getDelivery)
	add(http.MethodPost, "/webhook-deliveries/:id/replay", none, ScopeWebhooks, h.replayDelivery)
	add(http.MethodGet, "/events", none, ScopeWebhooks, h.listEvents)
	add(http.MethodGet, "/events/:id", none, ScopeWebhooks, h.getEvent)
}

// webhookScope is the key's account's own webhooks: no installation's; in the key's mode.
func webhookScope(c *gin.Context) engine.WebhookScope {
	return engine.WebhookScope{AccountID: key(c).AccountID, Test: key(c).Test}
}

// endpointBody is the body of PATCH /webhook-endpoints: nil is a field not given.
type endpointBody struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Status      *string   `json:"status"`
}

// createEndpoint answers POST /webhook-endpoints {url, events?, description?}: 201 with the
// endpoint and its secret.
func (h *Handler) createEndpoint(c *gin.Context) {
	var body struct {
		URL         *string   `json:"url"`
		Events      *[]string `json:"events"`
		Description *string   `json:"description"`
	}
	if !h.decodeWebhookBody(c, &body, false) {
		return
	}
	in := engine.EndpointInput{URL: body.URL, Events: body.Events, Description: body.Description}
	created, err := h.Engine.Webhooks.CreateEndpoint(c.Request.Context(), webhookScope(c), in)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.Header("Cache-Control", "no-store") // the answer shows the secret
	c.PureJSON(http.StatusCreated, CreatedEndpoint{WebhookEndpoint: created.Endpoint, Secret: created.Secret})
}

// listEndpoints answers GET /webhook-endpoints?limit&cursor.
func (h *Handler) listEndpoints(c *gin.Context) {
	limit, cursor, err := engine.EndpointListQuery(c.Request.URL.Query())
	if err != nil {
		h.answer(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListEndpoints(c.Request.Context(), webhookScope(c), limit, cursor)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, EndpointsPage{Endpoints: nonNil(list), NextCursor: cursorOf(next)})
}

// getEndpoint answers GET /webhook-endpoints/{id}.
func (h *Handler) getEndpoint(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	ep, err := h.Engine.Webhooks.GetEndpoint(c.Request.Context(), webhookScope(c), id)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ep)
}

// updateEndpoint answers PATCH /webhook-endpoints/{id} {url?, events?, description?, status?}.
func (h *Handler) updateEndpoint(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	var body endpointBody
	if !h.decodeWebhookBody(c, &body, false) {
		return
	}
	in := engine.EndpointInput{URL: body.URL, Description: body.Description, Status: body.Status, Events: body.Events}
	ep, err := h.Engine.Webhooks.UpdateEndpoint(c.Request.Context(), webhookScope(c), id, in)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ep)
}

// deleteEndpoint answers DELETE /webhook-endpoints/{id}: 204; its deliveries and events stay in
// the log.
func (h *Handler) deleteEndpoint(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	if err := h.Engine.Webhooks.DeleteEndpoint(c.Request.Context(), webhookScope(c), id); err != nil {
		h.answer(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// rotateEndpointSecret answers POST /webhook-endpoints/{id}/rotate-secret: a new secret; the
// previous one keeps signing until previous_secret_valid_until.
func (h *Handler) rotateEndpointSecret(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	r, err := h.Engine.Webhooks.RotateEndpointSecret(c.Request.Context(), webhookScope(c), id)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, RotatedSecret{ID: id, Secret: r.Secret, PreviousSecretValidUntil: r.PreviousSecretValidUntil.UTC()})
}

// testEndpoint answers POST /webhook-endpoints/{id}/test {event?}: 202 with the test delivery and
// its event; the body may be left out (webhook.test).
func (h *Handler) testEndpoint(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	var body struct {
		Event *string `json:"event"`
	}
	if !h.decodeWebhookBody(c, &body, true) {
		return
	}
	sent, err := h.Engine.Webhooks.SendTest(c.Request.Context(), webhookScope(c), id, body.Event) // nil: webhook.test
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, TestSent{DeliveryID: sent.DeliveryID, EventID: sent.EventID})
}

// recoverEndpoint answers POST /webhook-endpoints/{id}/recover {since, until?}: 202 with how many
// failed or held deliveries of the window were queued again.
func (h *Handler) recoverEndpoint(c *gin.Context) {
	id, ok := h.webhookID(c, "endpoint")
	if !ok {
		return
	}
	var body struct {
		Since *string `json:"since"`
		Until *string `json:"until"`
	}
	if !h.decodeWebhookBody(c, &body, false) {
		return
	}
	if body.Since == nil {
		h.fail(c, http.StatusBadRequest, "since is required: an RFC 3339 date-time at most 14 days ago.")
		return
	}
	since, bad := parseDateTime("since", *body.Since, "2026-11-20T00:00:00Z")
	if bad != "" {
		h.fail(c, http.StatusBadRequest, bad)
		return
	}
	var until *time.Time
	if body.Until != nil {
		t, bad := parseDateTime("until", *body.Until, "2026-11-21T00:00:00Z")
		if bad != "" {
			h.fail(c, http.StatusBadRequest, bad)
			return
		}
		until = &t
	}
	n, err := h.Engine.Webhooks.RecoverEndpoint(c.Request.Context(), webhookScope(c), id, since, until)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, Recovered{DeliveriesQueued: n})
}

// listDeliveries answers GET /webhook-deliveries?endpoint_id&event&event_id&status&created_after&
// created_before&limit&cursor.
func (h *Handler) listDeliveries(c *gin.Context) {
	f, err := engine.DeliveryListQuery(c.Request.URL.Query())
	if err != nil {
		h.answer(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListDeliveries(c.Request.Context(), webhookScope(c), f)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, DeliveriesPage{Deliveries: nonNil(list), NextCursor: cursorOf(next)})
}

// getDelivery answers GET /webhook-deliveries/{id}.
func (h *Handler) getDelivery(c *gin.Context) {
	id, ok := h.webhookID(c, "delivery")
	if !ok {
		return
	}
	d, err := h.Engine.Webhooks.GetDelivery(c.Request.Context(), webhookScope(c), id)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, d)
}

// replayDelivery answers POST /webhook-deliveries/{id}/replay: 202 with the delivery as
// GET /webhook-deliveries/{id} shows it once the replay is queued (pending until the new run's
// first attempt). It is the plugin API's replay (engine.ReplayWebhook): the stored body is sent
// now with the same webhook-id and a new timestamp, and retried on the usual schedule; 404 for
// another account's or an unknown delivery, 409 for one whose endpoint is disabled or deleted or
// that has no endpoint.
func (h *Handler) replayDelivery(c *gin.Context) {
	id, ok := h.webhookID(c, "delivery")
	if !ok {
		return
	}
	d, err := h.Engine.Webhooks.ReplayWebhook(c.Request.Context(), webhookScope(c), id)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, d)
}

// listEvents answers GET /events?type&created_after&created_before&limit&cursor.
func (h *Handler) listEvents(c *gin.Context) {
	f, err := engine.EventListQuery(c.Request.URL.Query())
	if err != nil {
		h.answer(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListEvents(c.Request.Context(), webhookScope(c), f)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, EventsPage{Events: nonNil(list), NextCursor: cursorOf(next)})
}

// getEvent answers GET /events/{id}.
func (h *Handler) getEvent(c *gin.Context) {
	id, ok := h.webhookID(c, "event")
	if !ok {
		return
	}
	ev, err := h.Engine.Webhooks.GetEvent(c.Request.Context(), webhookScope(c), id)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ev)
}

// webhookID reads the :id path parameter: 400 unless a UUID (in either case; it returns it as
// the store keeps it).
func (h *Handler) webhookID(c *gin.Context, what string) (string, bool) {
	raw := c.Param("id")
	if !ids.IsUUID(raw) {
		h.fail(c, http.StatusBadRequest, "id must be a UUID (the id of the "+what+").")
		return "", false
	}
	return ids.Canonical(raw), true
}

// decodeWebhookBody reads a JSON object body into dst strictly (jsonbody.Decode: a member sent as
// null is refused naming it, since every field is either given a value or left out). With
// optional, an empty body is no fields at all.
func (h *Handler) decodeWebhookBody(c *gin.Context, dst any, optional bool) bool {
	raw, err := io.ReadAll(c.Request.Body) // Input held it to maxJSONBody
	if err != nil {
		h.fail(c, http.StatusBadRequest, "The body could not be read.")
		return false
	}
	if optional && len(strings.TrimSpace(string(raw))) == 0 {
		return true
	}
	if err := jsonbody.Decode(raw, dst); err != nil {
		h.fail(c, http.StatusBadRequest, err.Error()+".")
		return false
	}
	return true
}

// parseDateTime reads the RFC 3339 date-time of the field named field; when it is not one, or
// falls outside the years the store compares (models/instant), it answers the refusal's message,
// with example as the example of a good value.
func parseDateTime(field, raw, example string) (time.Time, string) {
	t, err := instant.Parse(raw)
	switch {
	case errors.Is(err, instant.ErrOutOfRange):
		return t, field + " " + instant.OutOfRangeText + "."
	case err != nil:
		return t, field + " must be an RFC 3339 date-time such as " + example + instant.PlusHint(raw) + "."
	}
	return t, ""
}

// cursorOf is the next_cursor of a page: null on the last one.
func cursorOf(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// nonNil is list, or an empty list for none, so that a page answers [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
