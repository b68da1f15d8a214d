package external

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/internal/engine"
)

// JobEvent is the data of a job's event in an order's stream: the job's record as the record
// lists show it (with its kind; as the record.* webhooks carry it), and the job as
// GET /orders/{id} lists it (its attempts, error and cancel reason).
type JobEvent struct {
	Record *engine.RecordItem `json:"record"`
	Job    OrderJob           `json:"job"`
}

// GET /orders/{id}/events: the order's event stream (api/eventstream): one event per change of
// one of its jobs, named job.started, job.retrying, job.completed, ... (JobEvent), then
// order.completed with the order as GET /orders/{id} shows it.
func (h *Handler) orderEvents(c *gin.Context) {
	id, ok := h.orderID(c)
	if !ok {
		return
	}
	scope := engine.OrderScope{AccountID: key(c).AccountID}
	source := func(ctx context.Context, after int64) (eventstream.Page, error) {
		return h.orderEventPage(ctx, scope, id, after)
	}
	eventstream.Handle(c, h.Slots, h.Engine.Feed, h.Log, "external:"+key(c).ID, id, source, eventstream.Refusals{
		BadLastEventID: func(c *gin.Context, err error) { h.fail(c, http.StatusBadRequest, err.Error()+".") },
		Busy:           func(c *gin.Context, message string) { h.fail(c, http.StatusTooManyRequests, message) },
		Failed:         h.answer,
	})
}

// orderEventPage reads the order's events after a number and renders them.
func (h *Handler) orderEventPage(ctx context.Context, scope engine.OrderScope, orderID string, after int64) (eventstream.Page, error) {
	p, err := h.Engine.Feed.OrderEvents(ctx, scope, orderID, after, eventstream.PageSize)
	if err != nil {
		return eventstream.Page{}, err
	}
	expires := h.now().Add(h.DownloadTTL)
	page := eventstream.Page{Latest: p.Order.EventSeq, Ended: p.Ended, Events: make([]eventstream.Event, 0, len(p.Events))}
	for _, e := range p.Events {
		ev := eventstream.Event{ID: e.Seq, Name: e.Type}
		switch {
		case e.Job != nil:
			ev.Data = JobEvent{Record: e.Record, Job: h.orderJob(*e.Job, expires)}
		case e.Type == eventstream.OrderCompletedEvent:
			o, err := h.Engine.Orders.FindAccountOrder(ctx, scope.AccountID, orderID)
			if err != nil {
				return eventstream.Page{}, err
			}
			ev.Data = h.orderDetail(o)
		}
		page.Events = append(page.Events, ev)
	}
	return page, nil
}
