package plugin

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models/status"
)

// JobResponse is a job as the plugin API shows it (the same view a job webhook carries).
type JobResponse = jobview.Job

// Output is a generated file with a signed download URL.
type Output = jobview.Output

// downloadExpiry is at least DownloadTTL from now, rounded up to the hour so that polling clients
// see the same URL for an hour.
func (h *Handler) downloadExpiry() time.Time {
	return time.Now().UTC().Add(h.DownloadTTL + time.Hour).Truncate(time.Hour)
}

func (h *Handler) jobResponse(j engine.Job) JobResponse {
	return jobview.Render(j.Record, j.Outputs, h.Signer, h.downloadExpiry())
}

func (h *Handler) outputs(files []jobview.File) []Output {
	return jobview.Outputs(files, h.Signer, h.downloadExpiry())
}

func (h *Handler) getJob(c *gin.Context) {
	j, err := h.Engine.Jobs.JobWithOutputs(c.Request.Context(), caller(c).Installation.ID, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.jobResponse(j))
}

// OrderResponse is GET /orders/{id}.
type OrderResponse struct {
	ID            string          `json:"id"`
	Status        string          `json:"status"`
	JobType       string          `json:"job_type"`
	SessionConfig json.RawMessage `json:"session_config"`
	JobsTotal     int             `json:"jobs_total"`
	JobsCompleted int             `json:"jobs_completed"`
	JobsFailed    int             `json:"jobs_failed"`
	JobsCancelled int             `json:"jobs_cancelled"`
	JobsExpired   int             `json:"jobs_expired"`
	Products      []OrderProduct  `json:"products"`
	Images        []OrderImage    `json:"images"`
	Summary       CreditSummary   `json:"summary"`
	SourceOrderID *string         `json:"source_order_id"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	CompletedAt   *time.Time      `json:"completed_at"`
}

// OrderProduct holds the per-product counters of an order.
type OrderProduct struct {
	ProductRef    string   `json:"product_ref"`
	ProductLabel  string   `json:"product_label"`
	JobsTotal     int      `json:"jobs_total"`
	JobsCompleted int      `json:"jobs_completed"`
	JobsFailed    int      `json:"jobs_failed"`
	JobIDs        []string `json:"job_ids"`
}

// OrderImage is one generated image of an order.
type OrderImage struct {
	JobID      string `json:"job_id"`
	ProductRef string `json:"product_ref"`
	Voting     string `json:"voting"`
	Output
}

// CreditSummary is the credit movement of an order.
type CreditSummary struct {
	CreditsReserved int64 `json:"credits_reserved"`
	CreditsConsumed int64 `json:"credits_consumed"`
	CreditsReleased int64 `json:"credits_released"`
	CreditsHeld     int64 `json:"credits_held"`
}

func (h *Handler) getOrder(c *gin.Context) {
	d, err := h.Engine.Jobs.FindOrder(c.Request.Context(), caller(c).Installation.ID, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	o := d.Order
	resp := OrderResponse{
		ID: o.ID, Status: o.Status, JobType: o.JobType, SessionConfig: o.SessionConfig, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, JobsCancelled: o.JobsCancelled, JobsExpired: o.JobsExpired,
		Products: []OrderProduct{}, Images: []OrderImage{}, SourceOrderID: o.SourceOrderID,
		Summary: CreditSummary{CreditsReserved: o.CreditsReserved, CreditsConsumed: o.CreditsConsumed, CreditsReleased: o.CreditsReleased,
			CreditsHeld: o.CreditsReserved - o.CreditsConsumed - o.CreditsReleased},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CompletedAt: o.CompletedAt,
	}
	index := map[string]int{}
	for _, j := range d.Jobs {
		i, ok := index[j.ProductRef]
		if !ok {
			i = len(resp.Products)
			index[j.ProductRef] = i
			resp.Products = append(resp.Products, OrderProduct{ProductRef: j.ProductRef, ProductLabel: j.ProductLabel})
		}
		p := &resp.Products[i]
		p.JobsTotal++
		p.JobIDs = append(p.JobIDs, j.ID)
		switch j.Status {
		case status.JobCompleted:
			p.JobsCompleted++
			for _, out := range h.outputs(j.Outputs) {
				resp.Images = append(resp.Images, OrderImage{JobID: j.ID, ProductRef: j.ProductRef, Voting: j.Voting, Output: out})
			}
		case status.JobFailed:
			p.JobsFailed++
		}
	}
	c.PureJSON(http.StatusOK, resp)
}
