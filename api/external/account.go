package external

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
)

// AccountResponse answers GET /account: the team account, its credits and the calling key.
type AccountResponse struct {
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Credits AccountCredits `json:"credits"`
	Key     AccountKey     `json:"key"`
	// Livemode is false for a test key (mk_test_…): the account and its credits are test mode's
	// (docs/test-mode.md).
	Livemode bool `json:"livemode"`
}

// AccountCredits is the account's credit position: available for new requests, and reserved by
// jobs that have not ended.
type AccountCredits struct {
	Available int64 `json:"available"`
	Reserved  int64 `json:"reserved"`
}

// AccountKey is the calling key's scopes and expiry (null: it does not expire).
type AccountKey struct {
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// TestCreditsRequest is the body of PUT /test/credits: the test balance to set.
type TestCreditsRequest struct {
	Available *int64 `json:"available"`
}

// TestCreditsResponse answers PUT /test/credits: the test balance as it now is.
type TestCreditsResponse struct {
	Credits  AccountCredits `json:"credits"`
	Livemode bool           `json:"livemode"`
}

// registerAccount mounts GET /account and PUT /test/credits.
func (h *Handler) registerAccount(add route) {
	add(http.MethodGet, "/account", inputcheck.NoBody, ScopeRead, h.getAccount)
	add(http.MethodPut, "/test/credits", inputcheck.JSONBody(maxJSONBody), ScopeRegister, h.setTestCredits)
}

// setTestCredits answers PUT /test/credits: a test key (mk_test_…) sets its account's test
// balance (docs/test-mode.md); a live key's well-formed request is refused 403.
func (h *Handler) setTestCredits(c *gin.Context) {
	var req TestCreditsRequest
	if err := decode(c, &req); err != nil {
		h.answer(c, err)
		return
	}
	if req.Available == nil {
		h.fail(c, http.StatusBadRequest, "available is required: an integer from 0 to "+strconv.Itoa(engine.MaxTestCredits)+".")
		return
	}
	k := key(c)
	acc, err := h.Engine.Accounts.SetTestCredits(c.Request.Context(), k.AccountID, k.Test, *req.Available)
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, TestCreditsResponse{
		Credits: AccountCredits{Available: acc.CreditBalance, Reserved: acc.CreditsReserved}, Livemode: !acc.Test,
	})
}

// getAccount answers GET /account.
func (h *Handler) getAccount(c *gin.Context) {
	k := key(c)
	acc, err := h.Engine.Records.Account(c.Request.Context(), k.AccountID)
	if err != nil {
		h.answer(c, err)
		return
	}
	scopes := append([]string{}, k.Scopes...)
	var expires *time.Time
	if k.ExpiresAt != nil {
		at := k.ExpiresAt.UTC()
		expires = &at
	}
	c.PureJSON(http.StatusOK, AccountResponse{ID: acc.ID, Name: acc.Name,
		Credits: AccountCredits{Available: acc.CreditBalance, Reserved: acc.CreditsReserved},
		Key:     AccountKey{Scopes: scopes, ExpiresAt: expires}, Livemode: !k.Test})
}
