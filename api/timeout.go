package api

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// RequestTimeout bounds every request. Its context ends once the request has waited timeout for
// anything, and at the latest limit after it began:
//
//   - a request without a body (or with a small JSON one) gets timeout for its work, the database,
//     Temporal and blob store calls it makes included;
//   - each chunk of a request body that arrives restarts the wait, so a long upload (the signed
//     PUT of an asset, a multipart form) is not cut off while its bytes keep coming, whereas one
//     that stalls for timeout ends, and so does the work after its last byte;
//   - limit caps any request, a trickling upload included.
//
// When the context ends, a read of the body still blocked on the client is interrupted too, so the
// handler returns and answers (503 in the API's error body, see internal/platform/unavailable). A zero
// timeout disables the middleware.
func RequestTimeout(timeout, limit time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if timeout <= 0 {
			c.Next()
			return
		}
		limited, cancelLimit := context.WithTimeout(c.Request.Context(), max(limit, timeout))
		defer cancelLimit()
		ctx, cancel := context.WithCancelCause(limited)
		defer cancel(nil)
		waited := time.AfterFunc(timeout, func() { cancel(context.DeadlineExceeded) })
		defer waited.Stop()
		req := c.Request.WithContext(ctx)
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = &progressBody{ReadCloser: req.Body, progress: func() { waited.Reset(timeout) }}
			defer interruptBodyOnDone(ctx, c.Writer)()
		}
		c.Request = req
		c.Next()
	}
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
