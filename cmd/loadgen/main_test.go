package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The sessions' client keeps a connection per concurrent request: a second round of 8 requests at
// once opens no new connection (the default transport keeps two, so six would be new again).
func TestKeepAliveClientReusesAConnectionPerConcurrentRequest(t *testing.T) {
	t.Parallel()
	const concurrency = 8
	var opened atomic.Int32
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived.Done()
		<-release // hold every request until all are in flight, so each needs its own connection
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := keepAliveClient(concurrency)
	round := func() {
		arrived.Add(concurrency)
		var done sync.WaitGroup
		for range concurrency {
			done.Go(func() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		arrived.Wait()
		release <- struct{}{} // one at a time: the rest stay in flight
		for range concurrency - 1 {
			release <- struct{}{}
		}
		done.Wait()
		time.Sleep(100 * time.Millisecond) // the transport puts the connections back after the bodies close
	}
	round()
	first := opened.Load()
	round()
	if first != concurrency || opened.Load() != first {
		t.Fatalf("connections opened: %d in the first round, %d in the second; want %d and 0", first, opened.Load()-first, concurrency)
	}
}
