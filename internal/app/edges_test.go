package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
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

}

// The request-target "*" is OPTIONS's alone (RFC 9112, 3.2.4): any other method with it is a
// malformed request, 400 in the plugin API's envelope (the path carries no API's prefix), through
// the router like every request: its request ID, and its access line under the route "*".
func TestAsteriskTargetOfAnotherMethodIsABadRequest(t *testing.T) {
	t.Parallel()
	addr, logs := servedAPI(t)
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead} {
		id := "trace-" + method + "-star"
		resp, body := sendRaw(t, addr, method, method+" * HTTP/1.1\r\nHost: shotflow.test\r\nX-Request-Id: "+id+"\r\nContent-Length: 0\r\n\r\n")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s *", method)
		require.Equal(t, id, resp.Header.Get("X-Request-Id"), "%s *", method)
		require.Empty(t, resp.Header.Get("Allow"), "%s *", method)
		if method == http.MethodHead {
			require.Empty(t, body, "HEAD *")
		} else {
			var envelope struct {
				Error struct {
					Code        string            `json:"code"`
					MessageI18n map[string]string `json:"message_i18n"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &envelope), "%s *: %s", method, body)
			require.Equal(t, plugin.CodeInvalidInput, envelope.Error.Code, "%s *: %s", method, body)
			require.Contains(t, envelope.Error.MessageI18n["en"], "OPTIONS", "%s *", method)
		}
		lines := logs.FilterMessage("request").FilterField(zap.String("request_id", id)).All()
		require.Len(t, lines, 1, "the access line of %s *", method)
		fields := lines[0].ContextMap()
		require.Equal(t, method, fields["method"])
		require.Equal(t, "*", fields["route"])
		require.Equal(t, int64(http.StatusBadRequest), fields["status"])
	}
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

// A request whose line and headers pass api.MaxHeaderBytes is refused 431 in the error body of its
// API, through the router (its request ID, its access line), not in net/http's plain text: the
// server reads up to api.ServerMaxHeaderBytes, well past it. Only a head past that is net/http's
// own 431.
func TestOversizedHeadersAnswerInTheEnvelope(t *testing.T) {
	t.Parallel()
	addr, logs := servedAPI(t)
	get := func(target, id string, padding int) (*http.Response, []byte) {
		t.Helper()
		return sendRaw(t, addr, http.MethodGet, "GET "+target+" HTTP/1.1\r\nHost: shotflow.test\r\nX-Request-Id: "+id+
			"\r\nX-Padding: "+strings.Repeat("p", padding)+"\r\n\r\n")
	}

	resp, body := get("/healthz", "trace-head-fits", api.MaxHeaderBytes-200)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a head within the limit: %s", body)

	resp, body = get("/healthz", "trace-head-plugin", api.MaxHeaderBytes)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode, "%s", body)
	require.Equal(t, "trace-head-plugin", resp.Header.Get("X-Request-Id"))
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	var envelope struct {
		Error struct {
			Code        string            `json:"code"`
			MessageI18n map[string]string `json:"message_i18n"`
			Retryable   bool              `json:"retryable"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &envelope), "%s", body)
	require.Equal(t, plugin.CodeHeadersTooLarge, envelope.Error.Code)
	require.False(t, envelope.Error.Retryable)
	require.Contains(t, envelope.Error.MessageI18n["en"], strconv.Itoa(api.MaxHeaderBytes))
	lines := logs.FilterMessage("request").FilterField(zap.String("request_id", "trace-head-plugin")).All()
	require.Len(t, lines, 1, "the access line of the 431")
	require.Equal(t, int64(http.StatusRequestHeaderFieldsTooLarge), lines[0].ContextMap()["status"])

	resp, body = get(external.Base+"/products", "trace-head-external", api.MaxHeaderBytes)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode, "%s", body)
	require.Equal(t, "trace-head-external", resp.Header.Get("X-Request-Id"))
	var externalBody struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &externalBody), "%s", body)
	require.Contains(t, externalBody.Error, strconv.Itoa(api.MaxHeaderBytes))

	// Past what the server reads, net/http refuses the request itself.
	resp, _ = get("/healthz", "trace-head-server", api.ServerMaxHeaderBytes+8<<10)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	require.Empty(t, resp.Header.Get("X-Request-Id"))
}
