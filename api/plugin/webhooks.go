package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ReplayResponse answers POST /webhooks/{delivery_id}/replay.
type ReplayResponse struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"` // always "queued": the first attempt of the new run is under way
}

// RotateResponse answers POST /installations/{id}/rotate-hmac. WebhookSecret is shown only here.
type RotateResponse struct {
	InstallationID           string    `json:"installation_id"`
	WebhookSecret            string    `json:"webhook_secret"`
	PreviousSecretValidUntil time.Time `json:"previous_secret_valid_until"`
}

// replayWebhook starts a new run of the delivery's workflow (engine.ReplayWebhook, which the
// external API's POST /webhook-deliveries/{id}/replay shares): it sends the stored payload now,
// with the same webhook-id and a new timestamp, and retries on the usual schedule if needed.
func (h *Handler) replayWebhook(c *gin.Context) {
	d, err := h.Engine.Webhooks.ReplayWebhook(c.Request.Context(), webhookScope(c), c.Param("delivery_id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, ReplayResponse{DeliveryID: d.ID, Status: "queued"})
}

// rotateHMAC replaces the caller's installation's webhook signing secret
// (engine.RotateWebhookSecret). The previous secret keeps signing, next to the new one, for
// 48 hours (the store's grace period).
func (h *Handler) rotateHMAC(c *gin.Context) {
	inst := caller(c).Installation
	rotated, err := h.Engine.Webhooks.RotateWebhookSecret(c.Request.Context(), h.Secrets, inst.ID, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, RotateResponse{InstallationID: inst.ID, WebhookSecret: rotated.Secret,
		PreviousSecretValidUntil: rotated.PreviousSecretValidUntil})
}
