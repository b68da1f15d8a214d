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
