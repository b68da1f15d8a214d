package external

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
)

// UsageResponse answers GET /usage: the account's usage over [from, to), its totals and its
// groups (api/external/openapi.yaml, Usage).
type UsageResponse struct {
	From   string       `json:"from"`
	To     string       `json:"to"`
	Totals UsageFigures `json:"totals"`
	Groups []UsageGroup `json:"groups"`
}

// UsageFigures are a range's ledger sums, in the external API's camelCase.
type UsageFigures struct {
	CreditsReserved int64 `json:"creditsReserved"`
	CreditsConsumed int64 `json:"creditsConsumed"`
	CreditsReleased int64 `json:"creditsReleased"`
	JobsCompleted   int64 `json:"jobsCompleted"`
	JobsFailed      int64 `json:"jobsFailed"`
	JobsCancelled   int64 `json:"jobsCancelled"`
}

// UsageGroup is one group: its key (null for the orders of a key grouping whose key was not
// recorded) and its figures.
type UsageGroup struct {
	Key *string `json:"key"`
	UsageFigures
}

// registerUsage mounts GET /usage.
func (h *Handler) registerUsage(add route) {
	add(http.MethodGet, "/usage", inputcheck.NoBody, ScopeRead, h.usage)
}

// usage answers GET /usage: the credit ledger of the key's account, summed.
func (h *Handler) usage(c *gin.Context) {
	query := c.Request.URL.Query()
	for _, name := range []string{"from", "to", "group_by"} {
		if len(query[name]) > 1 {
			h.fail(c, http.StatusBadRequest, name+": may be given only once.")
			return
		}
		if v, ok := query[name]; ok && v[0] == "" {
			h.fail(c, http.StatusBadRequest, name+": must not be empty; leave it out for its default.")
			return
		}
	}
	r, err := h.Engine.Usage.Report(c.Request.Context(), engine.UsageScope{AccountID: key(c).AccountID, ByKey: true},
		engine.UsageQuery{From: query.Get("from"), To: query.Get("to"), GroupBy: query.Get("group_by")})
	if err != nil {
		h.answer(c, err)
		return
	}
	out := UsageResponse{From: r.From.Format(time.RFC3339Nano), To: r.To.Format(time.RFC3339Nano),
		Totals: UsageFigures(r.Totals), Groups: make([]UsageGroup, len(r.Groups))}
	for i, g := range r.Groups {
		out.Groups[i] = UsageGroup{UsageFigures: UsageFigures(g.UsageFigures)}
		if g.Key != "" || r.GroupBy != engine.UsageByKey {
			out.Groups[i].Key = &g.Key
		}
	}
	c.PureJSON(http.StatusOK, out)
}
