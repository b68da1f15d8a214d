package external

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
)

// AccountResponse answers GET /account: the team account, its credits and the calling key.
type AccountResponse struct {
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Credits AccountCredits `json:"credits"`
	Key     AccountKey     `json:"key"`
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

// registerAccount mounts GET /account.
func (h *Handler) registerAccount(add route) {
	add(http.MethodGet, "/account", inputcheck.NoBody, ScopeRead, h.getAccount)
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
		Key:     AccountKey{Scopes: scopes, ExpiresAt: expires}})
}
