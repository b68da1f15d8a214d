package external

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/jsonbody"
)

// Alerts (docs/api-guide.md, "Alerts"): the account's credits.low threshold on its available
// balance. The member is named low_balance_threshold on both APIs, as issue 27 fixed it for
// clients of both. The events (credits.low, spend_limit.alert, spend_limit.reached) go to the
// account's webhook endpoints that subscribe to them.

// AlertsRequest is the body of PUT /alerts: low_balance_threshold is required, an integer, or null
// for no credits.low alert.
type AlertsRequest struct {
	LowBalanceThreshold *int64 `json:"low_balance_threshold" nullable:"true"`
}

// AlertsResponse answers GET and PUT /alerts.
type AlertsResponse struct {
	LowBalanceThreshold *int64 `json:"low_balance_threshold"`
}

// registerAlerts mounts GET and PUT /alerts (scope content.billing).
func (h *Handler) registerAlerts(add route) {
	add(http.MethodGet, "/alerts", inputcheck.NoBody, ScopeBilling, h.getAlerts)
	add(http.MethodPut, "/alerts", inputcheck.JSONBody(maxJSONBody), ScopeBilling, h.setAlerts)
}

// getAlerts answers GET /alerts.
func (h *Handler) getAlerts(c *gin.Context) {
	s, err := h.Engine.Alerts.Settings(c.Request.Context(), accountScope(c))
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AlertsResponse{LowBalanceThreshold: s.LowBalanceThreshold})
}

// setAlerts answers PUT /alerts: sets or (null) clears the credits.low threshold.
func (h *Handler) setAlerts(c *gin.Context) {
	var req AlertsRequest
	raw, err := readJSON(c, &req)
	if err != nil {
		h.answer(c, err)
		return
	}
	if members, err := jsonbody.Members(raw); err != nil || members["low_balance_threshold"] == nil {
		h.fail(c, http.StatusBadRequest, "low_balance_threshold is required: an integer from 1 to 1000000000, or null for no credits.low alert.")
		return
	}
	s, err := h.Engine.Alerts.SetLowBalanceThreshold(c.Request.Context(), accountScope(c), req.LowBalanceThreshold)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AlertsResponse{LowBalanceThreshold: s.LowBalanceThreshold})
}
