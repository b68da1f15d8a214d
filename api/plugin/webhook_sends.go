package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// Test sends and recovers of the installation's endpoints (api/openapi.yaml: Webhooks).

// WebhookTestRequest is the body of POST /webhook-endpoints/{id}/test.
type WebhookTestRequest struct {
	Event *string `json:"event"`
}

// WebhookTestSent answers POST /webhook-endpoints/{id}/test: the delivery and its event's ID (the
// webhook-id the receiver sees).
type WebhookTestSent struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
}

// WebhookRecoverRequest is the body of POST /webhook-endpoints/{id}/recover (RFC 3339 times).
type WebhookRecoverRequest struct {
	Since *string `json:"since" binding:"required"`
	Until *string `json:"until"`
}

// WebhookRecovered answers POST /webhook-endpoints/{id}/recover.
type WebhookRecovered struct {
	DeliveriesQueued int `json:"deliveries_queued"`
}

// testEndpoint answers POST /webhook-endpoints/{id}/test.
func (h *Handler) testEndpoint(c *gin.Context) {
	var req WebhookTestRequest
	if !h.bindJSON(c, &req) {
		return
	}
	sent, err := h.Engine.Webhooks.SendTest(c.Request.Context(), webhookScope(c), c.Param("id"), req.Event)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, WebhookTestSent{DeliveryID: sent.DeliveryID, EventID: sent.EventID})
}

// recoverEndpoint answers POST /webhook-endpoints/{id}/recover.
func (h *Handler) recoverEndpoint(c *gin.Context) {
	var req WebhookRecoverRequest
	if !h.bindJSON(c, &req) {
		return
	}
	since, err := engine.ParseWebhookTime("since", *req.Since)
	if err != nil {
		h.fail(c, err)
		return
	}
	var until *time.Time
	if req.Until != nil {
		if until, err = engine.ParseWebhookTime("until", *req.Until); err != nil {
			h.fail(c, err)
			return
		}
	}
	n, err := h.Engine.Webhooks.RecoverEndpoint(c.Request.Context(), webhookScope(c), c.Param("id"), *since, until)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, WebhookRecovered{DeliveriesQueued: n})
}
