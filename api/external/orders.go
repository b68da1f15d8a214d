package external

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/models"
)

// Orders page limits (external-content-api.md, Limits).
const (
	DefaultOrdersLimit = 20
	MaxOrdersLimit     = 50
)

// Mixed is the provider or model of an order whose jobs use different ones.
const Mixed = "mixed"

// OrderSummary is one order of GET /orders.
type OrderSummary struct {
	OrderID       string    `json:"orderId"`
	Status        string    `json:"status"`
	JobType       string    `json:"jobType"`
	Provider      string    `json:"provider"`
	Model         string    `json:"model"`
	JobsTotal     int       `json:"jobsTotal"`
	JobsCompleted int       `json:"jobsCompleted"`
	JobsFailed    int       `json:"jobsFailed"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// OrdersPage is the answer of GET /orders.
type OrdersPage struct {
	Orders   []OrderSummary `json:"orders"`
	Limit    int            `json:"limit"`
	Returned int            `json:"returned"`
}

// OrderJob is one job of GET /orders/:id.
type OrderJob struct {
	JobID         string     `json:"jobId"`
	Provider      string     `json:"provider"`
	Model         string     `json:"model"`
	Status        string     `json:"status"`
	AttemptCount  int        `json:"attemptCount"`
	OutputURL     *string    `json:"outputUrl"`
	ErrorCategory *string    `json:"errorCategory"`
	ErrorHint     *string    `json:"errorHint"`
	StartedAt     *time.Time `json:"startedAt"`
	CompletedAt   *time.Time `json:"completedAt"`
}

// OrderDetail is the answer of GET /orders/:id.
type OrderDetail struct {
	OrderSummary
	Jobs []OrderJob `json:"jobs"`
}

var orderStatuses = []string{models.OrderInProgress, models.OrderCompleted, models.OrderFailed, models.OrderCancelled}

func (h *Handler) listOrders(c *gin.Context) {
	q := h.DB.WithContext(c.Request.Context()).Where("account_id = ?", key(c).AccountID)
	if s, ok := c.GetQuery("status"); ok {
		if !slices.Contains(orderStatuses, s) {
			h.fail(c, http.StatusBadRequest, "status must be one of "+strings.Join(orderStatuses, ", ")+".")
			return
		}
		q = q.Where("status = ?", s)
	}
	limit := DefaultOrdersLimit
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			h.fail(c, http.StatusBadRequest, "limit must be an integer (clamped to 1-50).")
			return
		}
		limit = min(max(n, 1), MaxOrdersLimit)
	}
	if raw := c.Query("since"); raw != "" {
		since, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			h.fail(c, http.StatusBadRequest, "since must be an ISO 8601 timestamp such as 2026-11-01T00:00:00Z.")
			return
		}
		q = q.Where("created_at > ?", since.UTC())
	}
	var orders []models.Order
	if err := q.Order("created_at DESC, id DESC").Limit(limit).Find(&orders).Error; err != nil {
		h.internal(c, err)
		return
	}
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	generators, err := h.orderGenerators(c, ids)
	if err != nil {
		h.internal(c, err)
		return
	}
	page := OrdersPage{Orders: make([]OrderSummary, 0, len(orders)), Limit: limit, Returned: len(orders)}
	for i := range orders {
		page.Orders = append(page.Orders, summary(&orders[i], generators[orders[i].ID]))
	}
	c.PureJSON(http.StatusOK, page)
}

func (h *Handler) getOrder(c *gin.Context) {
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil {
		h.fail(c, http.StatusBadRequest, "The order id must be a UUID.")
		return
	}
	db := h.DB.WithContext(c.Request.Context())
	var order models.Order
	err := db.Where("id = ? AND account_id = ?", id, key(c).AccountID).Take(&order).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		h.fail(c, http.StatusNotFound, "Order not found.")
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	var jobs []models.Job
	if err := db.Where("order_id = ?", id).Order("position").Find(&jobs).Error; err != nil {
		h.internal(c, err)
		return
	}
	var outputs []models.Asset
	if err := db.Where("job_id IN (?) AND kind = ? AND position = 0 AND purged_at IS NULL",
		db.Model(&models.Job{}).Select("id").Where("order_id = ? AND status = ?", id, models.JobCompleted),
		models.AssetKindOutput).Find(&outputs).Error; err != nil {
		h.internal(c, err)
		return
	}
	outputOf := map[string]models.Asset{}
	for _, a := range outputs {
		outputOf[*a.JobID] = a
	}
	expires := h.now().Add(h.DownloadTTL)
	detail := OrderDetail{Jobs: make([]OrderJob, 0, len(jobs))}
	var generators []string
	for i := range jobs {
		j := &jobs[i]
		generators = append(generators, j.AIModel)
		provider, model, _ := strings.Cut(j.AIModel, "/")
		oj := OrderJob{JobID: j.ID, Provider: provider, Model: model, Status: j.Status, AttemptCount: j.AttemptCount,
			StartedAt: j.StartedAt, CompletedAt: j.CompletedAt}
		if j.Status == models.JobFailed {
			oj.ErrorCategory, oj.ErrorHint = j.ErrorCategory, j.ErrorHint
		}
		if a, ok := outputOf[j.ID]; ok && j.Status == models.JobCompleted {
			u := h.Signer.URL(http.MethodGet, jobview.FilePath(a.ID), expires)
			oj.OutputURL = &u
		}
		detail.Jobs = append(detail.Jobs, oj)
	}
	detail.OrderSummary = summary(&order, generators)
	c.PureJSON(http.StatusOK, detail)
}

// orderGenerators lists the distinct provider/model IDs of each order's jobs.
func (h *Handler) orderGenerators(c *gin.Context, orderIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(orderIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		OrderID string
		AIModel string `gorm:"column:ai_model"`
	}
	if err := h.DB.WithContext(c.Request.Context()).Model(&models.Job{}).Distinct("order_id", "ai_model").
		Where("order_id IN ?", orderIDs).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.OrderID] = append(out[r.OrderID], r.AIModel)
	}
	return out, nil
}

// summary renders an order; provider and model are Mixed when its jobs use different ones.
func summary(o *models.Order, generators []string) OrderSummary {
	s := OrderSummary{OrderID: o.ID, Status: o.Status, JobType: o.JobType, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
	if len(generators) == 0 {
		return s
	}
	s.Provider, s.Model, _ = strings.Cut(generators[0], "/")
	for _, g := range generators[1:] {
		provider, _, _ := strings.Cut(g, "/")
		if provider != s.Provider {
			s.Provider = Mixed
		}
		if g != generators[0] {
			s.Model = Mixed
		}
	}
	return s
}
