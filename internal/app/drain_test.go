package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/config"
)

// A stopping API never cuts a request still within its deadline: the drain lasts at least
// REQUEST_TIMEOUT (and a second to answer), whatever SHUTDOWN_TIMEOUT says.
func TestDrainOutlastsTheRequestDeadline(t *testing.T) {
	for _, c := range []struct{ shutdown, request, want time.Duration }{
		{15 * time.Second, 30 * time.Second, 31 * time.Second},
		{90 * time.Second, 30 * time.Second, 90 * time.Second},
		{time.Second, 2 * time.Second, 3 * time.Second},
	} {
		if got := drainTimeout(config.Config{ShutdownTimeout: c.shutdown, RequestTimeout: c.request}); got != c.want {
			t.Errorf("SHUTDOWN_TIMEOUT %v, REQUEST_TIMEOUT %v: drain %v, want %v", c.shutdown, c.request, got, c.want)
		}
	}

	// A request that takes 1.5 s, under way when the process is told to stop, is answered in full
	// with a SHUTDOWN_TIMEOUT of 100 ms and a REQUEST_TIMEOUT of 2 s.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		time.Sleep(1500 * time.Millisecond)
		_, _ = io.WriteString(w, "done")
	})
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	drain := drainTimeout(config.Config{ShutdownTimeout: 100 * time.Millisecond, RequestTimeout: 2 * time.Second})
	go func() { served <- serveHTTP(ctx, ln, slow, drain, zap.NewNop()) }()
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- string(body)
	}()
	<-started
	stop()
	if got := <-answered; got != "done" {
		t.Fatalf("the request under way got %q, want its answer", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("serveHTTP: %v", err)
	}
}

// The API's server closes lingering (internal/platform/linger): a client that writes a whole
// body the API refused at once reads the refusal, not a connection reset.
func TestServerLingersBeforeClosing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = serveHTTP(ctx, ln, refusing, time.Second, zap.NewNop()) }()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		const size = 8 << 20
		if _, err := io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				t.Fatalf("write after %d bytes: %v", sent, err)
			}
		}
		line := make([]byte, 12)
		if _, err := io.ReadFull(c, line); err != nil || string(line) != "HTTP/1.1 413" {
			t.Fatalf("answer %q (%v), want the 413", line, err)
		}
		c.Close()
	}
}
