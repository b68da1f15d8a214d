package plugin

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// SubProcessor is a third party that processes the merchant's data on the service's behalf.
type SubProcessor struct {
	Name     string `json:"name"`
	Purpose  string `json:"purpose"`
	Location string `json:"location"`
}

// MeResponse is the installation identity returned by GET /me.
type MeResponse struct {
	InstallationID   string         `json:"installation_id"`
	InstallationName string         `json:"installation_name"`
	AccountID        string         `json:"account_id"`
	Plan             string         `json:"plan"`
	Credits          CreditBalance  `json:"credits"`
	RequestLimit     RequestLimit   `json:"request_limit"`
	Scopes           []string       `json:"scopes"`
	Permissions      []string       `json:"permissions"`
	SubProcessors    []SubProcessor `json:"sub_processors"`
	// Livemode is false for a test key (pk_test_…): the installation, account and credits are test
	// mode's (docs/test-mode.md).
	Livemode bool `json:"livemode"`
}

// CreditBalance is the account's credit position.
type CreditBalance struct {
	Available int64 `json:"available"`
	Reserved  int64 `json:"reserved"`
}

// RequestLimit is the key's rate limit.
type RequestLimit struct {
	PerMinute int `json:"per_minute"`
}

func (h *Handler) me(c *gin.Context) {
	who := caller(c)
	acc, err := h.Engine.Records.Account(c.Request.Context(), who.Installation.AccountID)
	if err != nil {
		h.fail(c, err)
		return
	}
	limit := who.Installation.RateLimitPerMin
	if limit <= 0 {
		limit = h.DefaultRateLimit
	}
	subs := h.SubProcessors
	if subs == nil {
		subs = []SubProcessor{}
	}
	c.PureJSON(http.StatusOK, MeResponse{
		InstallationID: who.Installation.ID, InstallationName: who.Installation.Name, AccountID: acc.ID,
		Plan: acc.Plan, Credits: CreditBalance{Available: acc.CreditBalance, Reserved: acc.CreditsReserved},
		RequestLimit: RequestLimit{PerMinute: limit}, Scopes: who.Key.Scopes, Permissions: who.Permissions,
		SubProcessors: subs, Livemode: !who.Key.Test,
	})
}

// AIModelItem is an entry of GET /ai-models: a generation model, addressed as provider/model.
type AIModelItem struct {
	ID                    string   `json:"id"`
	Provider              string   `json:"provider"`
	Name                  string   `json:"name"`
	OutputType            string   `json:"output_type"`
	JobTypes              []string `json:"job_types"`
	SupportedAspectRatios []string `json:"supported_aspect_ratios"`
	BaseCreditCost        int64    `json:"base_credit_cost"`
}

// AspectRatioItem is an entry of GET /aspect-ratios: an output shape.
type AspectRatioItem struct {
	ID      string `json:"id"`
	Label   string `json:"label"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Default bool   `json:"default"`
}

func (h *Handler) aiModels(c *gin.Context) {
	offered := h.Engine.Catalog.AIModels(JobTypes...)
	items := make([]AIModelItem, len(offered))
	for i, m := range offered {
		items[i] = AIModelItem{ID: m.ID, Provider: m.Provider, Name: m.Name, OutputType: m.OutputType, JobTypes: m.JobTypes,
			SupportedAspectRatios: m.SupportedAspectRatios, BaseCreditCost: m.BaseCreditCost}
	}
	c.Header("Cache-Control", "private, max-age=300")
	c.Header("Vary", "X-Api-Key")
	c.PureJSON(http.StatusOK, gin.H{"ai_models": items})
}

func (h *Handler) aspectRatios(c *gin.Context) {
	ratios := h.Engine.Catalog.AspectRatios()
	var items []AspectRatioItem
	if ratios != nil {
		items = make([]AspectRatioItem, len(ratios))
	}
	for i, a := range ratios {
		items[i] = AspectRatioItem{ID: a.ID, Label: a.Label, Width: a.Width, Height: a.Height, Default: a.Default}
	}
	c.Header("Cache-Control", "public, max-age=3600")
	c.PureJSON(http.StatusOK, gin.H{"aspect_ratios": items})
}
