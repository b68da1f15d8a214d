package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// Spend limits (docs/api-guide.md, "Spend limits"): the installation's monthly cap of credits.
// GET answers 200 whether or not a limit is set (monthly_credits null when none), because the
// month's use and its reset exist either way and a client reads them to show them.

// SpendLimitRequest is the body of PUT /spend-limit. alert_at_percent may be omitted: 80.
type SpendLimitRequest struct {
	MonthlyCredits *int64 `json:"monthly_credits" binding:"required"`
	AlertAtPercent *int   `json:"alert_at_percent"`
}

// SpendLimitResponse answers GET and PUT /spend-limit: the limit (null: none), its alert threshold,
// the credits the current UTC month has used (reserved less released) and when the month resets.
type SpendLimitResponse struct {
	MonthlyCredits *int64    `json:"monthly_credits"`
	AlertAtPercent int       `json:"alert_at_percent"`
	Used           int64     `json:"used"`
	ResetsAt       time.Time `json:"resets_at"`
}

func spendLimitResponse(l engine.SpendLimit) SpendLimitResponse {
	return SpendLimitResponse{MonthlyCredits: l.MonthlyCredits, AlertAtPercent: l.AlertAtPercent, Used: l.Used, ResetsAt: l.ResetsAt.UTC()}
}

func spendScope(c *gin.Context) engine.SpendScope {
	return engine.SpendScope{InstallationID: caller(c).Installation.ID}
}

// getSpendLimit answers GET /spend-limit.
func (h *Handler) getSpendLimit(c *gin.Context) {
	l, err := h.Engine.Accounts.SpendLimit(c.Request.Context(), spendScope(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, spendLimitResponse(l))
}

// setSpendLimit answers PUT /spend-limit: sets the limit and its alert threshold.
func (h *Handler) setSpendLimit(c *gin.Context) {
	var req SpendLimitRequest
	if !h.bindJSON(c, &req) {
		return
	}
	l, err := h.Engine.Accounts.SetSpendLimit(c.Request.Context(), spendScope(c), *req.MonthlyCredits, req.AlertAtPercent)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, spendLimitResponse(l))
}

// clearSpendLimit answers DELETE /spend-limit: 204, with or without a limit before it.
func (h *Handler) clearSpendLimit(c *gin.Context) {
	if err := h.Engine.Accounts.ClearSpendLimit(c.Request.Context(), spendScope(c)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// spendLimitExceeded is the details of spend_limit_exceeded: the limit, what the month had used
// before the request, when it resets and whose limit it is ("installation" or "account").
func spendLimitExceeded(e *engine.Error) any {
	sl := e.SpendLimit
	if sl == nil {
		return creditsRequired(e)
	}
	scope := "account"
	if sl.Installation {
		scope = "installation"
	}
	return gin.H{"limit": sl.Limit, "used": sl.Used, "resets_at": sl.ResetsAt.UTC(), "scope": scope}
}
