package plugin

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/internal/engine"
)

// GET /orders/{id}/events: the order's event stream (api/eventstream): one event per change of
// one of its jobs, named job.started, job.retrying, job.completed, ... with the job as
// GET /jobs/{id} shows it, then order.completed with the order as GET /orders/{id} shows it.
func (h *Handler) orderEvents(c *gin.Context) {
	inst := caller(c).Installation
	scope := engine.OrderScope{AccountID: inst.AccountID, InstallationID: inst.ID}
	orderID := c.Param("id")
	source := func(ctx context.Context, after int64) (eventstream.Page, error) {
		return h.orderEventPage(ctx, scope, orderID, after)
	}
	eventstream.Handle(c, h.Slots, h.Engine.Feed, h.Log, "plugin:"+caller(c).Key.ID, orderID, source, eventstream.Refusals{
		BadLastEventID: func(c *gin.Context, err error) { h.Fail(c, http.StatusBadRequest, CodeInvalidInput, err.Error()+".") },
		Busy:           func(c *gin.Context, message string) { h.Fail(c, http.StatusTooManyRequests, CodeRateLimited, message) },
		Failed:         h.fail,
	})
}

// orderEventPage reads the order's events after a number and renders them.
func (h *Handler) orderEventPage(ctx context.Context, scope engine.OrderScope, orderID string, after int64) (eventstream.Page, error) {
	p, err := h.Engine.Feed.OrderEvents(ctx, scope, orderID, after, eventstream.PageSize)
	if err != nil {
		return eventstream.Page{}, err
	}
	page := eventstream.Page{Latest: p.Order.EventSeq, Ended: p.Ended, Events: make([]eventstream.Event, 0, len(p.Events))}
	for _, e := range p.Events {
		ev := eventstream.Event{ID: e.Seq, Name: e.Type}
		switch {
		case e.Job != nil:
			ev.Data = h.jobResponse(*e.Job)
		case e.Type == eventstream.OrderCompletedEvent:
			d, err := h.Engine.Jobs.FindOrder(ctx, scope.InstallationID, orderID)
			if err != nil {
				return eventstream.Page{}, err
			}
			ev.Data = h.orderResponse(d)
		}
		page.Events = append(page.Events, ev)
	}
	return page, nil
}
