package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/reqctx"
)

// served is what the test handler saw of one request.
type served struct {
	readErr  error         // the body read's error
	readTook time.Duration // from the start of the request to the end of the body read
	liveRead bool          // the context was live when the body had been read
	doneTook time.Duration // from the start of the request to the end of its context
}

// timeoutServer serves POST / over a real connection: the handler reads the body, then waits for
// the request's context to end, and reports what it saw.
func timeoutServer(t *testing.T, timeout, limit time.Duration) (string, <-chan served) {
	t.Helper()
	seen := make(chan served, 1)
	r := gin.New()
	r.Use(api.RequestTimeout(timeout, limit))
	r.POST("/", func(c *gin.Context) {
		start := time.Now()
		ctx := c.Request.Context()
		_, err := io.ReadAll(c.Request.Body)
		s := served{readErr: err, readTook: time.Since(start), liveRead: ctx.Err() == nil}
		<-ctx.Done()
		s.doneTook = time.Since(start)
		seen <- s
		c.Status(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL, seen
}

// post sends a body written by write to url in the background.
func post(t *testing.T, url string, write func(w *io.PipeWriter)) {
	t.Helper()
	pr, pw := io.Pipe()
	go write(pw)
	go func() {
		req, err := http.NewRequest(http.MethodPost, url, pr)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
}

func wait(t *testing.T, seen <-chan served) served {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not return within 10 s")
		return served{}
	}
}

func TestRequestTimeoutEndsTheContext(t *testing.T) {
	url, seen := timeoutServer(t, 150*time.Millisecond, time.Minute)
	post(t, url, func(w *io.PipeWriter) { _, _ = w.Write([]byte(`{}`)); _ = w.Close() })
	s := wait(t, seen)
	if s.readErr != nil || !s.liveRead {
		t.Fatalf("a small body: read error %v, live %v", s.readErr, s.liveRead)
	}
	if s.doneTook < 140*time.Millisecond || s.doneTook > time.Second {
		t.Errorf("the context ended after %v, want about 150 ms", s.doneTook)
	}
}

// An upload whose bytes keep coming is not cut off by the timeout; its work then gets the timeout
// from its last byte.
func TestRequestTimeoutWaitsForABodyThatKeepsComing(t *testing.T) {
	url, seen := timeoutServer(t, 150*time.Millisecond, time.Minute)
	post(t, url, func(w *io.PipeWriter) {
		for i := range 8 {
			if i > 0 {
				time.Sleep(60 * time.Millisecond)
			}
			_, _ = w.Write([]byte(strings.Repeat("x", 1024)))
		}
		_ = w.Close()
	})
	s := wait(t, seen)
	if s.readErr != nil || !s.liveRead {
		t.Fatalf("a body arriving over %v: read error %v, context live %v", s.readTook, s.readErr, s.liveRead)
	}
	if s.readTook < 400*time.Millisecond {
		t.Fatalf("the body took only %v: the test did not outlast the timeout", s.readTook)
	}
	if after := s.doneTook - s.readTook; after < 100*time.Millisecond || after > time.Second {
		t.Errorf("the context ended %v after the last byte, want about 150 ms", after)
	}
}

// A body that stalls ends the request after the timeout: the blocked read is interrupted.
func TestRequestTimeoutInterruptsAStalledBody(t *testing.T) {
	url, seen := timeoutServer(t, 150*time.Millisecond, time.Minute)
	release := make(chan struct{})
	defer close(release)
	post(t, url, func(w *io.PipeWriter) {
		_, _ = w.Write([]byte("partial"))
		<-release
		_ = w.CloseWithError(io.ErrUnexpectedEOF)
	})
	s := wait(t, seen)
	if s.readErr == nil {
		t.Fatal("the read of a stalled body succeeded")
	}
	if s.readTook < 140*time.Millisecond || s.readTook > 2*time.Second {
		t.Errorf("the stalled read returned after %v, want about 150 ms", s.readTook)
	}
}

// A trickling body cannot outlast the limit. A trickle that pauses for the idle timeout (a
// loaded machine can hold the writer that long) ends the request by that timeout instead, which
// says nothing of the limit: such a run is tried again.
func TestRequestTimeoutLimitsTheWholeRequest(t *testing.T) {
	const idle, limit = 300 * time.Millisecond, 800 * time.Millisecond
	for attempt := 1; ; attempt++ {
		url, seen := timeoutServer(t, idle, limit)
		release := make(chan struct{})
		var maxGap atomic.Int64
		post(t, url, func(w *io.PipeWriter) {
			last := time.Now()
			for {
				select {
				case <-release:
					_ = w.Close()
					return
				case <-time.After(20 * time.Millisecond):
					if gap := time.Since(last); gap > time.Duration(maxGap.Load()) {
						maxGap.Store(int64(gap))
					}
					if _, err := w.Write([]byte("x")); err != nil {
						return
					}
					last = time.Now()
				}
			}
		})
		s := wait(t, seen)
		close(release)
		if s.readErr == nil {
			t.Fatal("a body trickling past the limit was read in full")
		}
		if s.doneTook < limit-50*time.Millisecond && time.Duration(maxGap.Load()) >= idle-50*time.Millisecond && attempt < 5 {
			t.Logf("attempt %d: the trickle paused for %v, ending the request by the idle timeout; again", attempt, time.Duration(maxGap.Load()))
			continue
		}
		if s.doneTook < limit-50*time.Millisecond || s.doneTook > limit+1500*time.Millisecond {
			t.Errorf("the request ended after %v (longest pause of the trickle %v), want about the %v limit",
				s.doneTook, time.Duration(maxGap.Load()), limit)
		}
		return
	}
}

func TestRequestTimeoutZeroLeavesRequestsUnbounded(t *testing.T) {
	r := gin.New()
	r.Use(api.RequestTimeout(0, 0))
	var ctx context.Context
	r.GET("/", func(c *gin.Context) { ctx = c.Request.Context() })
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if _, ok := ctx.Deadline(); ok || ctx.Err() != nil {
		t.Errorf("a zero timeout bounded the request")
	}
}

// A handler that holds its request on purpose (Prefer: wait, an event stream) extends its
// deadline: the context ends the request timeout after the hold, past the usual cap.
func TestExtendedDeadlineEndsTheTimeoutAfterTheHold(t *testing.T) {
	const timeout, limit, hold = 100 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond
	took := make(chan time.Duration, 1)
	r := gin.New()
	r.Use(api.RequestTimeout(timeout, limit))
	r.GET("/", func(c *gin.Context) {
		start := time.Now()
		reqctx.ExtendDeadline(c, hold)
		<-c.Request.Context().Done()
		took <- time.Since(start)
		c.Status(http.StatusOK)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-took; got < hold+timeout || got > hold+timeout+2*time.Second {
		t.Fatalf("the extended request's context ended after %v, want %v", got, hold+timeout)
	}
}

// ctxReader reads r until ctx ends, as the blob store's reader of a file does.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// downloadServer serves GET / over a real connection: the handler streams size bytes read as a
// stored file is (until the request's context ends), and reports each time it returned.
func downloadServer(t *testing.T, timeout, limit time.Duration, size int) (string, <-chan struct{}) {
	t.Helper()
	returned := make(chan struct{}, 1)
	r := gin.New()
	r.Use(api.RequestTimeout(timeout, limit))
	r.GET("/", func(c *gin.Context) {
		defer func() { returned <- struct{}{} }()
		file := ctxReader{ctx: c.Request.Context(), r: bytes.NewReader(make([]byte, size))}
		c.DataFromReader(http.StatusOK, int64(size), "video/mp4", file, nil)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL, returned
}

// A download whose bytes keep going to its client is not cut off by the timeout: a slow client
// gets the whole file (a file of the store, read under the request's context, was cut after
// REQUEST_TIMEOUT, leaving the client a short body).
func TestRequestTimeoutWaitsForADownloadThatKeepsGoing(t *testing.T) {
	const size, timeout = 32 << 20, time.Second
	url, returned := downloadServer(t, timeout, time.Minute, size)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := resp.Body.Read(buf)
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the download broke after %d of %d bytes, %v in: %v", n, size, time.Since(start), err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if took := time.Since(start); took < 2*timeout {
		t.Fatalf("the download took only %v: the test did not outlast the timeout", took)
	}
	if n != size {
		t.Fatalf("got %d of %d bytes", n, size)
	}
	<-returned
}

// A download whose client stops reading ends after the timeout: the write blocked on the client is
// interrupted, so the handler returns and lets go of the file (it stayed blocked for as long as the
// client kept its connection open).
func TestRequestTimeoutInterruptsADownloadItsClientStoppedReading(t *testing.T) {
	const size = 64 << 20
	url, returned := downloadServer(t, 200*time.Millisecond, time.Minute, size)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of a download nobody reads had not returned 10 s after its 200 ms timeout")
	}
	if n, _ := io.Copy(io.Discard, resp.Body); n >= size {
		t.Fatalf("the interrupted download sent all %d bytes", n)
	}
}

// A download cannot outlast the limit, however its bytes keep going.
func TestRequestTimeoutLimitsADownload(t *testing.T) {
	const size = 32 << 20
	url, returned := downloadServer(t, 200*time.Millisecond, 500*time.Millisecond, size)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := resp.Body.Read(buf)
		n += k
		if err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n >= size {
		t.Fatalf("a download trickling past the limit sent all %d bytes", n)
	}
	<-returned
}
