package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models/status"
)

// JobResponse is a job as the plugin API shows it (the same view a job webhook carries).
type JobResponse = jobview.Job

// Output is a generated file with a signed download URL.
type Output = jobview.Output

// fileURLs makes the download URLs of the handler's answers.
func (h *Handler) fileURLs() *fileurl.Maker { return fileurl.Of(h.Files, h.Signer) }

// downloadExpiry is at least DownloadTTL from now: for the API's URLs rounded up to the hour, so
// that polling clients see the same URL for an hour (fileurl.Maker.Expiry).
func (h *Handler) downloadExpiry() time.Time {
	return h.fileURLs().Expiry(h.DownloadTTL)
}

func (h *Handler) jobResponse(j engine.Job) JobResponse {
	return jobview.Render(j.Record, j.Outputs, h.fileURLs(), h.downloadExpiry())
}

func (h *Handler) outputs(files []jobview.File) []Output {
	return jobview.Outputs(files, h.fileURLs(), h.downloadExpiry())
}

func (h *Handler) getJob(c *gin.Context) {
	held, ok := h.takeWait(c)
	if !ok {
		return
	}
	defer held.Release()
	inst := caller(c).Installation
	j, err := h.Engine.Jobs.JobWithOutputs(c.Request.Context(), inst.ID, c.Param("id"))
	if held.Wait > 0 && err == nil {
		if status.IsTerminalJob(j.Status) {
			prefer.SetApplied(c, held.Wait)
		} else {
			j, err = h.holdJob(c, held.Wait, j)
		}
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.jobResponse(j))
}

// takeWait reads Prefer: wait and takes one of the key's slots of held requests (prefer.Take);
// false when they are all taken and the request was answered 429.
func (h *Handler) takeWait(c *gin.Context) (*prefer.Held, bool) {
	held, busy := prefer.Take(c, h.Slots, "plugin:"+caller(c).Key.ID, h.Log)
	if busy {
		h.Fail(c, http.StatusTooManyRequests, CodeRateLimited, fmt.Sprintf(
			"This API key already has %d requests waiting (Prefer: wait); retry after the Retry-After delay, or without the header.", prefer.MaxHeldPerKey))
		return nil, false
	}
	return held, true
}

// holdJob holds GET /jobs/{id} with Prefer: wait until the job has ended or the wait is over, and
// returns the job as it is then. Each read takes the number of its order's latest event before
// the job, so a change in between wakes it.
func (h *Handler) holdJob(c *gin.Context, wait time.Duration, j engine.Job) (engine.Job, error) {
	inst := caller(c).Installation
	scope := engine.OrderScope{AccountID: inst.AccountID, InstallationID: inst.ID}
	return prefer.Hold(c, h.Engine.Feed, wait, func(ctx context.Context) (prefer.Read[engine.Job], error) {
		o, err := h.Engine.Feed.Order(ctx, scope, j.OrderID)
		if err != nil {
			return prefer.Read[engine.Job]{}, err
		}
		j, err := h.Engine.Jobs.JobWithOutputs(ctx, inst.ID, j.ID)
		return prefer.Read[engine.Job]{Value: j, OrderID: j.OrderID, Seen: o.EventSeq, Ended: status.IsTerminalJob(j.Status)}, err
	})
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
	Livemode      bool            `json:"livemode"` // false for a test key's order
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
	held, ok := h.takeWait(c)
	if !ok {
		return
	}
	defer held.Release()
	inst := caller(c).Installation
	d, err := h.Engine.Jobs.FindOrder(c.Request.Context(), inst.ID, c.Param("id"))
	if held.Wait > 0 && err == nil {
		if d.Order.Status != status.OrderInProgress {
			prefer.SetApplied(c, held.Wait)
		} else {
			orderID := d.Order.ID
			d, err = prefer.Hold(c, h.Engine.Feed, held.Wait, func(ctx context.Context) (prefer.Read[engine.OrderDetail], error) {
				d, err := h.Engine.Jobs.FindOrder(ctx, inst.ID, orderID)
				return prefer.Read[engine.OrderDetail]{Value: d, OrderID: orderID, Seen: d.Order.EventSeq,
					Ended: d.Order.Status != status.OrderInProgress}, err
			})
		}
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.orderResponse(d))
}

// orderResponse is the plugin's view of an order with its jobs and their files.
func (h *Handler) orderResponse(d engine.OrderDetail) OrderResponse {
	o := d.Order
	resp := OrderResponse{
		ID: o.ID, Status: o.Status, JobType: o.JobType, SessionConfig: o.SessionConfig, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, JobsCancelled: o.JobsCancelled, JobsExpired: o.JobsExpired,
		Products: []OrderProduct{}, Images: []OrderImage{}, SourceOrderID: o.SourceOrderID,
		Summary: CreditSummary{CreditsReserved: o.CreditsReserved, CreditsConsumed: o.CreditsConsumed, CreditsReleased: o.CreditsReleased,
			CreditsHeld: o.CreditsReserved - o.CreditsConsumed - o.CreditsReleased},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CompletedAt: o.CompletedAt, Livemode: !o.TestMode,
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
	return resp
}
