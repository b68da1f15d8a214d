// Package eventstream serves the event stream of an order (GET /orders/{id}/events of both APIs)
// as server-sent events (text/event-stream, the WHATWG HTML standard's EventSource format):
//
//	id: 7
//	event: job.completed
//	data: {...the job as GET /jobs/{id} shows it...}
//
// Every event's id is its number in the order's change feed (engine.Feed): a client that
// reconnects with Last-Event-ID: n gets every event after n exactly once. The order's last event,
// order.completed, ends the stream; a client that comes back after it is answered 204 No Content,
// which tells an EventSource to stop reconnecting. A comment line every KeepAlive keeps proxies
// from closing an idle stream. A stream lasts at most MaxDuration (or until the process stops):
// the server then sends `retry:` and closes, and the client resumes with Last-Event-ID.
//
// A client that stops reading cannot grow the server's memory: events are read from the database
// a page at a time, only when the previous page was written, and a write that the client does not
// take within writeTimeout ends the stream.
package eventstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
)

// Stream limits and timings.
var (
	// KeepAlive is how long a stream may be silent before it sends a comment line.
	KeepAlive = 15 * time.Second
	// MaxDuration is how long a stream lasts before the server asks the client to reconnect.
	MaxDuration = 15 * time.Minute
	// Reconnect is the delay the `retry:` field asks of a client the server closes on.
	Reconnect = 2 * time.Second
	// writeTimeout is how long one write may wait for a client that does not read.
	writeTimeout = 10 * time.Second
)

// PageSize is the most events read (and held) at once.
const PageSize = 100

// HeaderLastEventID is the header an EventSource sends when it reconnects.
const HeaderLastEventID = "Last-Event-ID"

// OrderCompletedEvent is the name of an order's last event.
const OrderCompletedEvent = "order.completed"

// ContentType is the media type of a stream.
const ContentType = "text/event-stream"

// Event is one event: its number, its name and its data (encoded as JSON).
type Event struct {
	ID   int64
	Name string
	Data any
}

// Page is what one read of the order's feed found: its events after the number asked, the number
// of the order's latest event when read (Latest), and whether the order had ended.
type Page struct {
	Events []Event
	Latest int64
	Ended  bool
}

// Source reads the page of events after a number (at most PageSize of them).
type Source func(ctx context.Context, after int64) (Page, error)

// Feed wakes a stream when its order changes (engine.Feed).
type Feed interface {
	Wait(ctx context.Context, orderID string, seen int64) bool
	Stopping() <-chan struct{}
}

// LastEventID reads Last-Event-ID: 0 without one; an error (for a 400 naming the header) when it
// is not an event id of this stream (a whole number).
func LastEventID(h http.Header) (int64, error) {
	values := h.Values(HeaderLastEventID)
	if len(values) == 0 {
		return 0, nil
	}
	if len(values) > 1 {
		return 0, fmt.Errorf("send one %s header, not %d", HeaderLastEventID, len(values))
	}
	v := strings.TrimSpace(values[0])
	if v == "" {
		return 0, nil // an EventSource that had no id yet sends none; an empty one means the same
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("%s must be the id of an event of this stream (a whole number), not %q", HeaderLastEventID, v)
	}
	return n, nil
}

// Serve streams the order's events after `after`, starting with first (read by the caller, so that
// a refusal is answered in the API's error envelope before the stream begins), until the order has
// ended, MaxDuration has passed, the process stops or the client leaves.
func Serve(c *gin.Context, feed Feed, orderID string, after int64, first Page, source Source) {
	if first.Ended && len(first.Events) == 0 && after >= first.Latest {
		c.Status(http.StatusNoContent) // the client has every event of an ended order: stop reconnecting
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	if reqctx.IsHead(c) {
		c.Status(http.StatusOK) // a HEAD gets the stream's headers, and holds nothing open
		return
	}
	reqctx.ExtendDeadline(c, MaxDuration)
	ctx := c.Request.Context()
	end := time.Now().Add(MaxDuration)
	w := &writer{rc: http.NewResponseController(c.Writer), w: c.Writer}
	c.Status(http.StatusOK)
	page := first
	for {
		for _, e := range page.Events {
			if err := w.event(e); err != nil {
				return
			}
			after = e.ID
		}
		if err := w.flush(); err != nil {
			return
		}
		if page.Ended && after >= page.Latest {
			return // order.completed was the last event
		}
		if len(page.Events) < PageSize {
			if !wait(ctx, feed, w, orderID, page.Latest, end) {
				return
			}
		}
		var err error
		if page, err = source(ctx, after); err != nil {
			// The database did not answer: the client reconnects and resumes where it was.
			_ = w.retry()
			return
		}
	}
}

// wait holds the stream until the order moves past seen, sending a comment every KeepAlive; it
// returns false when the stream is over (after sending `retry:` when the server ends it).
func wait(ctx context.Context, feed Feed, w *writer, orderID string, seen int64, end time.Time) bool {
	for {
		wake := time.Now().Add(KeepAlive)
		if end.Before(wake) {
			wake = end
		}
		wctx, cancel := context.WithDeadline(ctx, wake)
		changed := feed.Wait(wctx, orderID, seen)
		cancel()
		switch {
		case changed:
			return true
		case ctx.Err() != nil:
			return false // the client left
		case stopping(feed) || !time.Now().Before(end):
			_ = w.retry()
			return false
		}
		if w.keepAlive() != nil {
			return false
		}
	}
}

func stopping(feed Feed) bool {
	select {
	case <-feed.Stopping():
		return true
	default:
		return false
	}
}

// writer writes the stream, each write bounded by writeTimeout.
type writer struct {
	rc  *http.ResponseController
	w   http.ResponseWriter
	buf bytes.Buffer
}

func (w *writer) event(e Event) error {
	w.buf.Reset()
	fmt.Fprintf(&w.buf, "id: %d\nevent: %s\ndata: ", e.ID, e.Name)
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.Data); err != nil { // one line, and its newline ends the data field
		return err
	}
	w.buf.WriteByte('\n')
	return w.write(w.buf.Bytes(), false)
}

func (w *writer) keepAlive() error { return w.write([]byte(": keep-alive\n\n"), true) }

func (w *writer) retry() error {
	return w.write(fmt.Appendf(nil, "retry: %d\n\n", Reconnect.Milliseconds()), true)
}

func (w *writer) write(b []byte, flush bool) error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // unsupported by test recorders
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	if flush {
		return w.flush()
	}
	return nil
}

func (w *writer) flush() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := w.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// MaxStreamsPerKey is how many streams one API key may have open at once, across API processes
// when Redis is configured (ratelimit.Slots).
const MaxStreamsPerKey = 20

// RetryAfterBusy is the Retry-After of a stream refused because its key has MaxStreamsPerKey open.
const RetryAfterBusy = 5

// Take takes one of the key's MaxStreamsPerKey stream slots (key names the API key, e.g.
// "plugin:<id>") for the length of a stream; busy is true, and Retry-After set, when they are all
// taken, and the caller answers 429. A slot store that fails admits the stream (as the rate limit
// does). The caller releases the slot when the stream ends.
func Take(c *gin.Context, slots ratelimit.Slots, key string, log *zap.Logger) (slot *ratelimit.Slot, busy bool) {
	slot, ok, err := slots.Acquire(c.Request.Context(), "stream:"+key, MaxStreamsPerKey, MaxDuration+2*time.Minute)
	if err != nil {
		reqctx.Log(c, log).Warn("shared request slots unavailable; the stream holds one of the process's own, or none", zap.Error(err))
	}
	if !ok {
		c.Header("Retry-After", strconv.Itoa(RetryAfterBusy))
		return nil, true
	}
	return slot, false
}

// Refusals are how a façade answers a stream it refuses before it starts, each in its API's
// error envelope: a Last-Event-ID that is no event id (400), a key with MaxStreamsPerKey streams
// open (429; Retry-After is set), and the first read's error (404 for another tenant's order,
// 503, ...).
type Refusals struct {
	BadLastEventID func(c *gin.Context, err error)
	Busy           func(c *gin.Context, message string)
	Failed         func(c *gin.Context, err error)
}

// Handle answers GET …/orders/{id}/events for the key slotKey names ("plugin:<id>"): it reads
// Last-Event-ID, takes one of the key's stream slots for the stream's length, reads the first page
// and serves the stream (Serve), answering a refusal through refuse.
func Handle(c *gin.Context, slots ratelimit.Slots, feed Feed, log *zap.Logger, slotKey, orderID string, source Source, refuse Refusals) {
	after, err := LastEventID(c.Request.Header)
	if err != nil {
		refuse.BadLastEventID(c, err)
		return
	}
	slot, busy := Take(c, slots, slotKey, log)
	if busy {
		refuse.Busy(c, fmt.Sprintf("This API key already has %d event streams open; close one, or retry after the Retry-After delay.", MaxStreamsPerKey))
		return
	}
	defer func() { _ = slot.Release() }()
	first, err := source(c.Request.Context(), after)
	if err != nil {
		refuse.Failed(c, err)
		return
	}
	Serve(c, feed, orderID, after, first, source)
}
