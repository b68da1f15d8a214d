package plugin

import (
	"net/http"

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

// webhookScope is the caller's installation as the scope of the webhook use cases, in the key's mode.
func webhookScope(c *gin.Context) engine.WebhookScope {
	inst := caller(c).Installation
	return engine.WebhookScope{AccountID: inst.AccountID, InstallationID: inst.ID, Test: caller(c).Key.Test}
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
	limit, cursor, err := engine.EndpointListQuery(c.Request.URL.Query())
	if err != nil {
		h.fail(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListEndpoints(c.Request.Context(), webhookScope(c), limit, cursor)
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
	f, err := engine.DeliveryListQuery(c.Request.URL.Query())
	if err != nil {
		h.fail(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListDeliveries(c.Request.Context(), webhookScope(c), f)
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
	f, err := engine.EventListQuery(c.Request.URL.Query())
	if err != nil {
		h.fail(c, err)
		return
	}
	list, next, err := h.Engine.Webhooks.ListEvents(c.Request.Context(), webhookScope(c), f)
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
