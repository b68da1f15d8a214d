package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/jsonbody"
)

// Alerts (docs/api-guide.md, "Alerts"): the installation's credits.low threshold on its
// account's available balance. The events themselves (credits.low, spend_limit.alert,
// spend_limit.reached) go to the installation's webhook endpoints that subscribe to them.

// AlertsRequest is the body of PUT /alerts: low_balance_threshold is required, an integer, or
// null for no credits.low alert.
type AlertsRequest struct {
	LowBalanceThreshold *int64 `json:"low_balance_threshold" nullable:"true"`
}

// AlertsResponse answers GET and PUT /alerts.
type AlertsResponse struct {
	LowBalanceThreshold *int64 `json:"low_balance_threshold"`
}

// getAlerts answers GET /alerts.
func (h *Handler) getAlerts(c *gin.Context) {
	s, err := h.Engine.Alerts.Settings(c.Request.Context(), spendScope(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AlertsResponse{LowBalanceThreshold: s.LowBalanceThreshold})
}

// setAlerts answers PUT /alerts: sets or (null) clears the credits.low threshold.
func (h *Handler) setAlerts(c *gin.Context) {
	body, ok := h.readBody(c)
	if !ok {
		return
	}
	var req AlertsRequest
	if err := decodeJSON(body, &req); err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, describeBindError(err))
		return
	}
	if members, err := jsonbody.Members(body); err != nil || members["low_balance_threshold"] == nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput,
			"low_balance_threshold is required: an integer from 1 to 1000000000, or null for no credits.low alert")
		return
	}
	s, err := h.Engine.Alerts.SetLowBalanceThreshold(c.Request.Context(), spendScope(c), req.LowBalanceThreshold)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, AlertsResponse{LowBalanceThreshold: s.LowBalanceThreshold})
}
