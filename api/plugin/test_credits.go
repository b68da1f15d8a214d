package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// TestCreditsRequest is the body of PUT /test/credits: the test balance to set.
type TestCreditsRequest struct {
	Available *int64 `json:"available" binding:"required"`
}

// TestCreditsResponse answers PUT /test/credits: the test balance as it now is.
type TestCreditsResponse struct {
	Credits  CreditBalance `json:"credits"`
	Livemode bool          `json:"livemode"`
}

// setTestCredits answers PUT /test/credits: a test key sets its installation's test balance
// (docs/test-mode.md); a live key's well-formed request is refused 403.
func (h *Handler) setTestCredits(c *gin.Context) {
	who := caller(c)
	var req TestCreditsRequest
	if !h.bindJSON(c, &req) {
		return
	}
	acc, err := h.Engine.Accounts.SetTestCredits(c.Request.Context(), who.Installation.AccountID, who.Key.Test, *req.Available)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, TestCreditsResponse{
		Credits: CreditBalance{Available: acc.CreditBalance, Reserved: acc.CreditsReserved}, Livemode: !acc.Test,
	})
}
