package external

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
)

// Spend limits (docs/api-guide.md, "Spend limits (both APIs)"): the account's monthly cap of
// credits, which also caps every installation on the account. GET answers 200 whether or not a
// limit is set (monthlyCredits null when none): the month's use and its reset exist either way.

// SpendLimitRequest is the body of PUT /spend-limit. alertAtPercent may be omitted: 80.
type SpendLimitRequest struct {
	MonthlyCredits *int64 `json:"monthlyCredits"`
	AlertAtPercent *int   `json:"alertAtPercent"`
}

// SpendLimitResponse answers GET and PUT /spend-limit: the limit (null: none), its alert
// threshold, the credits the current UTC month has used (reserved less released) and when the
// month resets.
type SpendLimitResponse struct {
	MonthlyCredits *int64    `json:"monthlyCredits"`
	AlertAtPercent int       `json:"alertAtPercent"`
	Used           int64     `json:"used"`
	ResetsAt       time.Time `json:"resetsAt"`
}

// spendLimitFields are the engine's names of the spend limit fields, in this API's spelling.
var spendLimitFields = map[string]string{"monthly_credits": "monthlyCredits", "alert_at_percent": "alertAtPercent"}

// registerSpendLimit mounts GET, PUT and DELETE /spend-limit (scope content.billing).
func (h *Handler) registerSpendLimit(add route) {
	add(http.MethodGet, "/spend-limit", inputcheck.NoBody, ScopeBilling, h.getSpendLimit)
	add(http.MethodPut, "/spend-limit", inputcheck.JSONBody(maxJSONBody), ScopeBilling, h.setSpendLimit)
	add(http.MethodDelete, "/spend-limit", inputcheck.NoBody, ScopeBilling, h.clearSpendLimit)
}

func accountScope(c *gin.Context) engine.SpendScope {
	return engine.SpendScope{AccountID: key(c).AccountID}
}

func (h *Handler) spendLimitAnswer(c *gin.Context, l engine.SpendLimit, err error) {
	if err != nil {
		if e, ok := engine.As(err); ok && spendLimitFields[e.Field] != "" {
			renamed := *e
			renamed.Field = spendLimitFields[e.Field]
			err = &renamed
		}
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, SpendLimitResponse{MonthlyCredits: l.MonthlyCredits, AlertAtPercent: l.AlertAtPercent,
		Used: l.Used, ResetsAt: l.ResetsAt.UTC()})
}

// getSpendLimit answers GET /spend-limit.
func (h *Handler) getSpendLimit(c *gin.Context) {
	l, err := h.Engine.Accounts.SpendLimit(c.Request.Context(), accountScope(c))
	h.spendLimitAnswer(c, l, err)
}

// setSpendLimit answers PUT /spend-limit: {monthlyCredits, alertAtPercent?}.
func (h *Handler) setSpendLimit(c *gin.Context) {
	var req SpendLimitRequest
	if err := decode(c, &req); err != nil {
		h.answer(c, err)
		return
	}
	if req.MonthlyCredits == nil {
		h.fail(c, http.StatusBadRequest, "monthlyCredits is required: an integer from 1 to 1000000000.")
		return
	}
	l, err := h.Engine.Accounts.SetSpendLimit(c.Request.Context(), accountScope(c), *req.MonthlyCredits, req.AlertAtPercent)
	h.spendLimitAnswer(c, l, err)
}

// clearSpendLimit answers DELETE /spend-limit: 204, with or without a limit before it.
func (h *Handler) clearSpendLimit(c *gin.Context) {
	if err := h.Engine.Accounts.ClearSpendLimit(c.Request.Context(), accountScope(c)); err != nil {
		h.answer(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// spendLimitExceeded is errors.spendLimitExceeded of a 402: the limit, what the month had used
// before the request, when it resets and whose limit it is ("account" or "installation").
func spendLimitExceeded(sl *engine.SpendLimitRefusal) gin.H {
	scope := "account"
	if sl.Installation {
		scope = "installation"
	}
	return gin.H{"details": []string{engine.ReasonSpendLimitExceeded}, "limit": sl.Limit, "used": sl.Used,
		"resetsAt": sl.ResetsAt.UTC(), "scope": scope}
}
