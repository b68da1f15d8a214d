package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// The installation's webhook endpoints, delivery log and events (api/openapi.yaml: Webhooks). The
// use cases are engine.Webhooks' with the caller's installation as the scope.

// EndpointCreateRequest is the body of POST /webhook-endpoints.
type EndpointCreateRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
}

// EndpointUpdateRequest is the body of PATCH /webhook-endpoints/{id}: at least one field.
type EndpointUpdateRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Status      *string   `json:"status"`
}

// EndpointsPage answers GET /webhook-endpoints: newest first; NextCursor is null on the last page.
type EndpointsPage struct {
	WebhookEndpoints []engine.WebhookEndpoint `json:"webhook_endpoints"`
	NextCursor       *string                  `json:"next_cursor"`
}

// DeliveriesPage answers GET /webhook-deliveries.
type DeliveriesPage struct {
	WebhookDeliveries []engine.WebhookDelivery `json:"webhook_deliveries"`
	NextCursor        *string                  `json:"next_cursor"`
}

// EventsPage answers GET /events.
type EventsPage struct {
	Events     []engine.WebhookEvent `json:"events"`
	NextCursor *string               `json:"next_cursor"`
}

// webhookScope is the caller's installation as the scope of the webhook use cases.
func webhookScope(c *gin.Context) engine.WebhookScope {
	inst := caller(c).Installation
	return engine.WebhookScope{AccountID: inst.AccountID, InstallationID: inst.ID}
}

// nextCursor is the JSON of a next cursor: null after the last page.
func nextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// createEndpoint answers POST /webhook-endpoints.
func (h *Handler) createEndpoint(c *gin.Context) {
	var req EndpointCreateRequest
	if !h.bindJSON(c, &req) {
		return
	}
	created, err := h.Engine.Webhooks.CreateEndpoint(c.Request.Context(), webhookScope(c),
		engine.EndpointInput{URL: req.URL, Events: req.Events, Description: req.Description})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, created.Endpoint)
}

// listEndpoints answers GET /webhook-endpoints.
func (h *Handler) listEndpoints(c *gin.Context) {
	q, ok := h.webhookQuery(c)
	if !ok {
		return
	}
	list, next, err := h.Engine.Webhooks.ListEndpoints(c.Request.Context(), webhookScope(c), q.limit, q.cursor)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, EndpointsPage{WebhookEndpoints: list, NextCursor: nextCursor(next)})
}

// getEndpoint answers GET /webhook-endpoints/{id}.
func (h *Handler) getEndpoint(c *gin.Context) {
	ep, err := h.Engine.Webhooks.GetEndpoint(c.Request.Context(), webhookScope(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ep)
}

// updateEndpoint answers PATCH /webhook-endpoints/{id}.
func (h *Handler) updateEndpoint(c *gin.Context) {
	var req EndpointUpdateRequest
	if !h.bindJSON(c, &req) {
		return
	}
	ep, err := h.Engine.Webhooks.UpdateEndpoint(c.Request.Context(), webhookScope(c), c.Param("id"),
		engine.EndpointInput{URL: req.URL, Events: req.Events, Description: req.Description, Status: req.Status})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ep)
}

// deleteEndpoint answers DELETE /webhook-endpoints/{id}.
func (h *Handler) deleteEndpoint(c *gin.Context) {
	if err := h.Engine.Webhooks.DeleteEndpoint(c.Request.Context(), webhookScope(c), c.Param("id")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// listDeliveries answers GET /webhook-deliveries.
func (h *Handler) listDeliveries(c *gin.Context) {
	q, ok := h.webhookQuery(c, "endpoint_id", "event", "event_id", "status")
	if !ok {
		return
	}
	list, next, err := h.Engine.Webhooks.ListDeliveries(c.Request.Context(), webhookScope(c), engine.DeliveryFilter{
		EndpointID: q.values["endpoint_id"], Event: q.values["event"], EventID: q.values["event_id"], Status: q.values["status"],
		CreatedAfter: q.createdAfter, CreatedBefore: q.createdBefore, Limit: q.limit, Cursor: q.cursor})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, DeliveriesPage{WebhookDeliveries: list, NextCursor: nextCursor(next)})
}

// getDelivery answers GET /webhook-deliveries/{id}.
func (h *Handler) getDelivery(c *gin.Context) {
	d, err := h.Engine.Webhooks.GetDelivery(c.Request.Context(), webhookScope(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, d)
}

// listEvents answers GET /events.
func (h *Handler) listEvents(c *gin.Context) {
	q, ok := h.webhookQuery(c, "type")
	if !ok {
		return
	}
	list, next, err := h.Engine.Webhooks.ListEvents(c.Request.Context(), webhookScope(c), engine.EventFilter{
		Type: q.values["type"], CreatedAfter: q.createdAfter, CreatedBefore: q.createdBefore, Limit: q.limit, Cursor: q.cursor})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, EventsPage{Events: list, NextCursor: nextCursor(next)})
}

// getEvent answers GET /events/{id}.
func (h *Handler) getEvent(c *gin.Context) {
	ev, err := h.Engine.Webhooks.GetEvent(c.Request.Context(), webhookScope(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ev)
}

// webhookListQuery is the query of a webhook list: the page, the creation window (the endpoint
// list has none) and the list's own filters by name.
type webhookListQuery struct {
	limit                       int
	cursor                      string
	createdAfter, createdBefore *time.Time
	values                      map[string]string
}

// webhookQuery reads the query of a webhook list: limit and cursor, created_after and
// created_before when the list has filters, and the filters named; a parameter given twice or
// malformed is answered 400 naming it.
func (h *Handler) webhookQuery(c *gin.Context, filters ...string) (webhookListQuery, bool) {
	out := webhookListQuery{values: map[string]string{}}
	query := c.Request.URL.Query()
	names := []string{"limit", "cursor"}
	if len(filters) > 0 {
		names = append(names, "created_after", "created_before")
	}
	for _, name := range append(names, filters...) {
		if len(query[name]) > 1 {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, name+" may be given only once.")
			return out, false
		}
	}
	if raw, ok := c.GetQuery("limit"); ok {
		n, err := engine.ParseWebhookLimit(raw)
		if err != nil {
			h.fail(c, err)
			return out, false
		}
		out.limit = n
	}
	if raw, ok := c.GetQuery("cursor"); ok {
		if raw == "" {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "cursor must not be empty; omit it to start from the newest.")
			return out, false
		}
		out.cursor = raw
	}
	if len(filters) > 0 {
		for _, p := range []struct {
			name string
			dst  **time.Time
		}{{"created_after", &out.createdAfter}, {"created_before", &out.createdBefore}} {
			if raw, ok := c.GetQuery(p.name); ok {
				t, err := engine.ParseWebhookTime(p.name, raw)
				if err != nil {
					h.fail(c, err)
					return out, false
				}
				*p.dst = t
			}
		}
	}
	for _, name := range filters {
		if raw, ok := c.GetQuery(name); ok {
			if raw == "" {
				h.Fail(c, http.StatusBadRequest, CodeInvalidInput, name+" must not be empty; omit it to list every one.")
				return out, false
			}
			out.values[name] = raw
		}
	}
	return out, true
}
