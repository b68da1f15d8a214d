package plugin

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// UsageResponse is GET /usage: the installation's usage over [from, to), its totals and its
// groups (api/openapi.yaml, Usage).
type UsageResponse struct {
	From   string              `json:"from"`
	To     string              `json:"to"`
	Totals engine.UsageFigures `json:"totals"`
	Groups []engine.UsageGroup `json:"groups"`
}

// usage answers GET /usage: the credit ledger of the installation's orders, summed.
func (h *Handler) usage(c *gin.Context) {
	query := c.Request.URL.Query()
	for _, name := range []string{"from", "to", "group_by"} {
		if len(query[name]) > 1 {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, name+" may be given only once.")
			return
		}
		if v, ok := query[name]; ok && v[0] == "" {
			h.Fail(c, http.StatusBadRequest, CodeInvalidInput, name+" must not be empty; leave it out for its default.")
			return
		}
	}
	inst := caller(c).Installation
	r, err := h.Engine.Usage.Report(c.Request.Context(), engine.UsageScope{AccountID: inst.AccountID, InstallationID: inst.ID},
		engine.UsageQuery{From: query.Get("from"), To: query.Get("to"), GroupBy: query.Get("group_by")})
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, UsageResponse{From: r.From.Format(time.RFC3339Nano), To: r.To.Format(time.RFC3339Nano),
		Totals: r.Totals, Groups: r.Groups})
}
