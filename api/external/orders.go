package external

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/instant"
	"github.com/shotflow/shotflow/models/status"
)

// Orders page limits (api/external/openapi.yaml, listOrders: limit).
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
	Livemode      bool      `json:"livemode"` // false for a test key's order
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
	// CancelReason is why a cancelled job was cancelled: "requested" (DELETE /orders/{id}) or
	// "deadline" (not started by its request's Cancel-After); null otherwise.
	CancelReason *string `json:"cancelReason"`
	// CancelAfterAt is the start deadline its request's Cancel-After set; null without one.
	CancelAfterAt *time.Time `json:"cancelAfterAt"`
	Livemode      bool       `json:"livemode"` // false for a test key's job
}

// OrderDetail is the answer of GET /orders/:id.
type OrderDetail struct {
	OrderSummary
	Jobs []OrderJob `json:"jobs"`
}

var orderStatuses = []string{status.OrderInProgress, status.OrderCompleted, status.OrderFailed, status.OrderCancelled}

func (h *Handler) listOrders(c *gin.Context) {
	f := engine.OrderFilter{AccountID: key(c).AccountID, Limit: DefaultOrdersLimit}
	if s, ok := c.GetQuery("status"); ok {
		if !slices.Contains(orderStatuses, s) {
			h.fail(c, http.StatusBadRequest, "status must be one of "+strings.Join(orderStatuses, ", ")+".")
			return
		}
		f.Status = s
	}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			h.fail(c, http.StatusBadRequest, "limit must be an integer (clamped to 1-50).")
			return
		}
		f.Limit = min(max(n, 1), MaxOrdersLimit)
	}
	if raw := c.Query("since"); raw != "" {
		since, err := instant.Parse(raw)
		switch {
		case errors.Is(err, instant.ErrOutOfRange):
			h.fail(c, http.StatusBadRequest, "since "+instant.OutOfRangeText+".")
			return
		case err != nil:
			h.fail(c, http.StatusBadRequest, "since must be an ISO 8601 timestamp such as 2026-11-01T00:00:00Z"+instant.PlusHint(raw)+".")
			return
		}
		f.Since = &since
	}
	orders, generators, err := h.Engine.Orders.ListAccountOrders(c.Request.Context(), f)
	if err != nil {
		h.answer(c, err)
		return
	}
	page := OrdersPage{Orders: make([]OrderSummary, 0, len(orders)), Limit: f.Limit, Returned: len(orders)}
	for _, o := range orders {
		page.Orders = append(page.Orders, summary(o, generators[o.ID]))
	}
	c.PureJSON(http.StatusOK, page)
}

func (h *Handler) getOrder(c *gin.Context) {
	id, ok := h.orderID(c)
	if !ok {
		return
	}
	held, ok := h.takeWait(c)
	if !ok {
		return
	}
	defer held.Release()
	accountID := key(c).AccountID
	o, err := h.Engine.Orders.FindAccountOrder(c.Request.Context(), accountID, id)
	if held.Wait > 0 && err == nil {
		if o.Order.Status != status.OrderInProgress {
			prefer.SetApplied(c, held.Wait)
		} else {
			o, err = prefer.Hold(c, h.Engine.Feed, held.Wait, func(ctx context.Context) (prefer.Read[engine.AccountOrder], error) {
				o, err := h.Engine.Orders.FindAccountOrder(ctx, accountID, id)
				return prefer.Read[engine.AccountOrder]{Value: o, OrderID: id, Seen: o.Order.EventSeq,
					Ended: o.Order.Status != status.OrderInProgress}, err
			})
		}
	}
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.orderDetail(o))
}

// OrderCancelResponse answers DELETE /orders/{id}: the order as GET /orders/{id} shows it after the
// cancel, how many jobs it cancelled and how many had already started (they run to their end).
type OrderCancelResponse struct {
	Order          OrderDetail `json:"order"`
	Cancelled      int         `json:"cancelled"`
	AlreadyStarted int         `json:"alreadyStarted"`
}

// cancelOrder answers DELETE /orders/{id} (engine.CancelAccountOrder).
func (h *Handler) cancelOrder(c *gin.Context) {
	id, ok := h.orderID(c)
	if !ok {
		return
	}
	out, err := h.Engine.Orders.CancelAccountOrder(c.Request.Context(), key(c).AccountID, id, reqctx.CorrelationID(c))
	if err != nil {
		h.answer(c, err)
		return
	}
	c.PureJSON(http.StatusOK, OrderCancelResponse{Order: h.orderDetail(out.Order), Cancelled: out.Cancelled,
		AlreadyStarted: out.AlreadyStarted})
}

// orderID reads the :id path parameter of an order route: 400 unless a UUID written 8-4-4-4-12
// (in either case), as every ID the API hands out; the braced, urn: and 32-digit forms would
// otherwise pass and be answered 404.
func (h *Handler) orderID(c *gin.Context) (string, bool) {
	id := c.Param("id")
	if !ids.IsUUID(id) {
		h.fail(c, http.StatusBadRequest, "The order id must be a UUID.")
		return "", false
	}
	return ids.Canonical(id), true
}

// orderDetail renders an order with its jobs, as GET /orders/{id} shows it.
func (h *Handler) orderDetail(o engine.AccountOrder) OrderDetail {
	expires := h.now().Add(h.DownloadTTL)
	detail := OrderDetail{Jobs: make([]OrderJob, 0, len(o.Jobs))}
	var generators []string
	for _, j := range o.Jobs {
		generators = append(generators, j.AIModel)
		detail.Jobs = append(detail.Jobs, h.orderJob(j, expires))
	}
	detail.OrderSummary = summary(o.Order, generators)
	return detail
}

// orderJob renders a job of an order as GET /orders/{id} lists it: its first output file's URL,
// valid until expires, once it has completed.
func (h *Handler) orderJob(j engine.Job, expires time.Time) OrderJob {
	provider, model, _ := strings.Cut(j.AIModel, "/")
	oj := OrderJob{JobID: j.ID, Provider: provider, Model: model, Status: j.Status, AttemptCount: j.AttemptCount,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt, CancelAfterAt: j.CancelAfterAt, Livemode: !j.TestMode}
	if j.Status == status.JobCancelled {
		oj.CancelReason = j.CancelReason
	}
	if j.Status == status.JobFailed {
		oj.ErrorCategory, oj.ErrorHint = j.ErrorCategory, j.ErrorHint
	}
	if len(j.Outputs) > 0 && j.Status == status.JobCompleted {
		out := j.Outputs[0]
		u, _ := h.fileURLs().File(fileurl.File{AssetID: out.AssetID, Key: out.Key, ContentType: out.ContentType}, expires)
		oj.OutputURL = &u
	}
	return oj
}

// summary renders an order; provider and model are Mixed when its jobs use different ones.
func summary(o engine.Order, generators []string) OrderSummary {
	s := OrderSummary{OrderID: o.ID, Status: o.Status, JobType: o.JobType, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		Livemode: !o.TestMode}
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

// holdOrderStatus holds a created order's request with Prefer: wait until the order has ended or
// the wait is over, and returns its status of then; the status it had (created) should the database
// fail meanwhile: the order exists, and the answer says so.
func (h *Handler) holdOrderStatus(c *gin.Context, wait time.Duration, orderID, created string) string {
	scope := engine.OrderScope{AccountID: key(c).AccountID}
	st, err := prefer.Hold(c, h.Engine.Feed, wait, func(ctx context.Context) (prefer.Read[string], error) {
		o, err := h.Engine.Feed.Order(ctx, scope, orderID)
		return prefer.Read[string]{Value: o.Status, OrderID: orderID, Seen: o.EventSeq, Ended: o.Status != status.OrderInProgress}, err
	})
	if err != nil {
		reqctx.Log(c, h.Log).Info("a held generation request is answered as it was created: its order could not be read",
			zap.String("order_id", orderID), zap.Error(err))
		return created
	}
	return st
}

// heldContextKey is the gin context key of the *prefer.Held of a generation request.
const heldContextKey = "external.held"

// holding wraps a generation route: with Prefer: wait it takes one of the key's slots of held
// requests before the route creates anything (429 when they are all taken), and the route's
// answer is held (submitted).
func (h *Handler) holding(handler gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		held, ok := h.takeWait(c)
		if !ok {
			return
		}
		defer held.Release()
		c.Set(heldContextKey, held)
		handler(c)
	}
}

// heldOf is the wait the generation request holds (none outside holding).
func heldOf(c *gin.Context) *prefer.Held {
	if v, ok := c.Get(heldContextKey); ok {
		return v.(*prefer.Held)
	}
	return &prefer.Held{}
}

// takeWait reads Prefer: wait and takes one of the key's slots of held requests (prefer.Take);
// false when they are all taken and the request was answered 429.
func (h *Handler) takeWait(c *gin.Context) (*prefer.Held, bool) {
	held, busy := prefer.Take(c, h.Slots, "external:"+key(c).ID, h.Log)
	if busy {
		h.fail(c, http.StatusTooManyRequests, fmt.Sprintf(
			"This API key already has %d requests waiting (Prefer: wait); retry after the Retry-After delay, or without the header.", prefer.MaxHeldPerKey))
		return nil, false
	}
	return held, true
}
