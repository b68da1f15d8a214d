package app

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shotflow/shotflow/api"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models/testdb"
)

// servedAPI serves the whole API's router as the API process does (serveHTTP, on a real
// http.Server and TCP listener) until the test ends, and returns its address and access log.
func servedAPI(t *testing.T) (addr string, logs *observer.ObservedLogs) {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	d := apitest.NewDeps(t, db, apitest.Options{Log: log})
	p := &plugin.Handler{Engine: d.Engine, Signer: d.Signer, Limiter: d.Limiter, Slots: d.Slots, Log: log,
		DocsURL: "https://docs.example.test", DefaultRateLimit: 60, DownloadTTL: time.Hour, UploadTTL: time.Hour}
	x := &external.Handler{Engine: d.Engine, Limiter: d.Limiter, Slots: d.Slots, Signer: d.Signer, Log: log, DownloadTTL: time.Hour}
	router := api.NewRouter(api.Deps{Engine: d.Engine, Blobs: d.Blobs, Signer: d.Signer, Log: log,
		Ready: func(context.Context) error { return nil }, External: x, RequestTimeout: 5 * time.Second}, p)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, router, time.Second, zap.NewNop()) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	return ln.Addr().String(), logs
}

// sendRaw writes a request as it is over a new TCP connection to addr and reads the answer to it.
func sendRaw(t *testing.T, addr, method, request string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, request)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// "OPTIONS *" asks which methods the server takes (RFC 9110, 9.3.7). net/http answers it itself
// (200, nothing else) before any handler unless told not to; the API answers it through its router
// like every other request: 204 with an Allow naming the methods its routes take, its request ID,
// and its access line under the route "*".
func TestOptionsOfTheServerGoesThroughTheRouter(t *testing.T) {
	t.Parallel()
	addr, logs := servedAPI(t)
	const id = "trace-options-star"
	resp, body := sendRaw(t, addr, http.MethodOptions, "OPTIONS * HTTP/1.1\r\nHost: shotflow.test\r\nX-Request-Id: "+id+"\r\n\r\n")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT", resp.Header.Get("Allow"))
	require.Equal(t, id, resp.Header.Get("X-Request-Id"), "OPTIONS * carries no request ID")
	require.Empty(t, body)

	lines := logs.FilterMessage("request").FilterField(zap.String("request_id", id)).All()
	require.Len(t, lines, 1, "the access line of OPTIONS *")
	fields := lines[0].ContextMap()
	require.Equal(t, http.MethodOptions, fields["method"])
	require.Equal(t, "*", fields["route"])
	require.Equal(t, int64(http.StatusNoContent), fields["status"])

	// Another method with the target "*" names no route: the API's 404, through the router too.
	resp, body = sendRaw(t, addr, http.MethodGet, "GET * HTTP/1.1\r\nHost: shotflow.test\r\nX-Request-Id: trace-get-star\r\n\r\n")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "trace-get-star", resp.Header.Get("X-Request-Id"))
	require.Contains(t, string(body), `"code":"not_found"`)
}

// A side listener (the profiler's, the worker's metrics) answers "OPTIONS *" with its own handler
// too, not net/http's general 200: its ServeMux takes no "*", so 400.
func TestOptionsOfASideListenerIsItsHandlers(t *testing.T) {
	t.Parallel()
	a := &App{Config: config.Config{PprofAddr: "127.0.0.1:0"}, Log: zap.NewNop()}
	addr, stop, err := a.StartProfiler()
	require.NoError(t, err)
	defer stop()
	resp, _ := sendRaw(t, addr.String(), http.MethodOptions, "OPTIONS * HTTP/1.1\r\nHost: shotflow.test\r\n\r\n")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
