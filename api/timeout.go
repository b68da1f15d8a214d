package api

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/reqctx"
)

// RequestTimeout bounds every request. Its context ends once the request has waited timeout for
// anything, and at the latest limit after it began:
//
//   - a request without a body (or with a small JSON one) gets timeout for its work, the database,
//     Temporal and blob store calls it makes included;
//   - each chunk of a request body that arrives restarts the wait, so a long upload (the signed
//     PUT of an asset, a multipart form) is not cut off while its bytes keep coming, whereas one
//     that stalls for timeout ends, and so does the work after its last byte;
//   - each chunk of an answer's body that the client takes restarts the wait too, so a long
//     download (a signed /files URL streaming a file from the store) is not cut off while its
//     bytes keep going, whereas one whose client stops reading ends;
//   - limit caps any request, a trickling upload or download included.
//
// When the context ends, a read of the body still blocked on the client is interrupted too, so the
// handler returns and answers (503 in the API's error body, see internal/platform/unavailable), and
// so is a write of an answer whose body had begun: its client gets the body cut short, and the
// handler returns and lets go of what it was sending (a file read from the store). A
// handler that holds its request on purpose (Prefer: wait, an event stream) extends its deadline
// with reqctx.ExtendDeadline: the context then ends timeout after the time it holds it for. A zero
// timeout disables the middleware.
func RequestTimeout(timeout, limit time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if timeout <= 0 {
			c.Next()
			return
		}
		ctx, cancel := context.WithCancelCause(c.Request.Context())
		defer cancel(nil)
		d := &deadline{timeout: timeout, cancel: cancel}
		d.waited = time.AfterFunc(timeout, d.expire)
		d.limit = time.AfterFunc(max(limit, timeout), d.expire)
		defer d.stop()
		reqctx.SetDeadlineExtender(c, d.extend, timeout)
		req := c.Request.WithContext(ctx)
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = &progressBody{ReadCloser: req.Body, progress: d.progress}
			defer interruptBodyOnDone(ctx, c.Writer)()
		}
		c.Request = req
		w := &progressWriter{ResponseWriter: c.Writer, progress: d.progress}
		c.Writer = w
		defer w.interruptOnDone(ctx)()
		c.Next()
		c.Writer = w.ResponseWriter
	}
}

// deadline is the end of one request's context: after timeout without progress, at the latest
// after limit, or, once a handler extended it (a request held by Prefer: wait, an event stream),
// at the time it set.
type deadline struct {
	timeout time.Duration
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	waited   *time.Timer // timeout after the last progress
	limit    *time.Timer // the cap
	extended bool
}

func (d *deadline) expire() { d.cancel(context.DeadlineExceeded) }

// progress restarts the wait for timeout: bytes of the body arrived.
func (d *deadline) progress() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.extended {
		d.waited.Reset(d.timeout)
	}
}

// extend makes the context end timeout after `after` from now, whatever the cap: the request's own
// deadline plus the time the handler is allowed to hold it.
func (d *deadline) extend(after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.extended = true
	d.waited.Stop()
	d.limit.Reset(after + d.timeout)
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waited.Stop()
	d.limit.Stop()
}

// progressBody calls progress whenever bytes of the body arrive.
type progressBody struct {
	io.ReadCloser
	progress func()
}

// Read reads from the body and reports progress.
func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.progress()
	}
	return n, err
}

// interruptBodyOnDone makes a body read blocked on the client return once ctx ends, by setting the
// connection's read deadline. The returned function must run before the handler returns: after it,
// the connection (and gin's writer) may serve another request and must not be touched.
func interruptBodyOnDone(ctx context.Context, w http.ResponseWriter) (stop func()) {
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	finished := false
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			_ = rc.SetReadDeadline(time.Now()) // unsupported by test recorders: nothing to interrupt there
		}
	})
	return func() {
		stopAfter()
		mu.Lock()
		finished = true
		mu.Unlock()
	}
}

// progressWriter is an answer whose body bytes report progress as they go to the client, and
// whose writes end with the request's context once its body has begun.
type progressWriter struct {
	gin.ResponseWriter
	progress func()

	mu       sync.Mutex
	began    bool // bytes of the body were written (or are being written)
	finished bool // the handler returned: the connection is no longer the request's
}

// Write writes body bytes and reports progress when some went out.
func (w *progressWriter) Write(p []byte) (int, error) {
	w.start()
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.progress()
	}
	return n, err
}

// WriteString writes body bytes and reports progress when some went out.
func (w *progressWriter) WriteString(s string) (int, error) {
	w.start()
	n, err := w.ResponseWriter.WriteString(s)
	if n > 0 {
		w.progress()
	}
	return n, err
}

func (w *progressWriter) start() {
	w.mu.Lock()
	w.began = true
	w.mu.Unlock()
}

// Unwrap returns the writer underneath (http.ResponseController reaches the connection through it).
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// interruptOnDone makes a write of the body blocked on the client return once ctx ends, by setting
// the connection's write deadline, when the body began before the end: an answer begun after it
// (the 503 of a request whose dependency was too slow) is written as usual. The returned function
// must run before the handler returns, as interruptBodyOnDone's.
func (w *progressWriter) interruptOnDone(ctx context.Context) (stop func()) {
	rc := http.NewResponseController(w.ResponseWriter)
	stopAfter := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.began && !w.finished {
			_ = rc.SetWriteDeadline(time.Now()) // unsupported by test recorders: nothing to interrupt there
		}
	})
	return func() {
		stopAfter()
		w.mu.Lock()
		w.finished = true
		w.mu.Unlock()
	}
}
