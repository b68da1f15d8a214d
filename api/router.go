// Package api builds shotflow's HTTP server: the gin router with its middleware (request IDs,
// access logs, metrics, recovery), the plugin and external APIs, signed file downloads, health
// checks, Prometheus metrics and error documentation.
package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
)

// Deps are what the router needs beyond the API handlers.
type Deps struct {
	// Engine looks up the assets the signed /files URLs name.
	Engine *engine.Engine
	Blobs  *blobstore.Store
	Signer *urlsign.Signer
	Log    *zap.Logger
	// Ready reports whether the process can serve (database, blob store and Temporal reachable);
	// its error is an *unavailable.DependencyError naming the first dependency that is not.
	Ready func(ctx context.Context) error
	// External serves /api/external when set.
	External *external.Handler
	// RequestTimeout and UploadTimeout bound every request (see RequestTimeout); a zero
	// RequestTimeout leaves requests unbounded (tests that build the router by hand).
	RequestTimeout time.Duration
	UploadTimeout  time.Duration
	// Metrics records every request and is served on GET /metrics; nil gives the router its own.
	Metrics *metrics.Metrics
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Router is the HTTP handler of the whole API: gin's engine, which also answers HEAD wherever it
// answers GET (RFC 9110, 9.1), as the GET would, without its body, and the CORS preflights of the
// routes of signed URLs (files.SignedRoutes), which browsers reach (servePreflight), and the
// request-target "*" (serveAsteriskTarget). No route registers HEAD itself (ServeHTTP).
type Router struct {
	*gin.Engine
}

// ServeHTTP serves every HEAD as the GET of its path (reqctx.HeadAsGet), which gin routes as it
// routes a GET, at a GET's cost: a path that takes GET answers as that GET, one that takes only
// other methods reaches the NoMethod handler (405) and an unknown one the NoRoute handler (404),
// whose answers name the HEAD the client sent (reqctx.Method). No route registers HEAD itself,
// which this would hide. The handlers see a GET (a signed URL is signed for GET); net/http, which
// holds the HEAD, sends the headers and Content-Length and drops the body.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodHead {
		req = reqctx.HeadAsGet(req)
	}
	r.Engine.ServeHTTP(w, req)
}

// NewRouter returns the HTTP handler of the whole API.
func NewRouter(d Deps, p *plugin.Handler) *Router {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// Routes match the path as sent, and parameters are decoded after matching, so that a
	// percent-encoded "/" (%2F) in a merchant reference stays inside {id_or_ref} instead of
	// splitting the path (merchantref.Problem says which references exist).
	r.UseRawPath = true
	r.UnescapePathValues = true
	// Unknown paths get the JSON envelope, never an HTML redirect.
	r.RedirectTrailingSlash = false
	if d.Metrics == nil {
		d.Metrics = metrics.New()
	}
	r.Use(Instrument(d.Metrics), RequestID, AccessLog(d.Log), RequestTimeout(d.RequestTimeout, d.UploadTimeout), gin.CustomRecovery(func(c *gin.Context, err any) {
		if d.External != nil && isExternal(c) {
			d.External.Recover(c, err)
			return
		}
		p.Recover(c, err)
	}), limitHeaders(d.External, p))
	p.Register(r)
	if d.External != nil {
		d.External.Register(r)
	}
	// The routes outside both APIs take no body and answer in the plugin envelope.
	in := p.Input(inputcheck.NoBody)
	r.GET(OpenAPIPath, in.Head, in.Content, serveOpenAPI)
	fh := &files.Handler{Signer: d.Signer, Blobs: d.Blobs, Errors: p, Asset: d.Engine.Uploads.FileAsset}
	fh.Register(r, in.Head, in.Content)
	r.GET("/healthz", in.Head, in.Content, func(c *gin.Context) { c.PureJSON(http.StatusOK, gin.H{"status": "ok"}) })
	// Prometheus scrapes this without a key and without a rate limit: firewall it from the internet.
	r.GET(MetricsPath, in.Head, in.Content, gin.WrapH(d.Metrics.APIHandler()))
	r.GET("/readyz", in.Head, in.Content, func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
		defer cancel()
		if err := d.Ready(ctx); err != nil {
			// The detail (addresses, user and database names) is for the logs; the unauthenticated
			// answer names the dependency alone.
			name := "unknown"
			var dep *unavailable.DependencyError
			if errors.As(err, &dep) {
				name = dep.Dependency
			}
			d.Log.Warn("not ready", zap.String("dependency", name), zap.Error(err))
			c.Header("Retry-After", strconv.Itoa(unavailable.RetryAfterSeconds))
			c.PureJSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "dependency": name})
			return
		}
		c.PureJSON(http.StatusOK, gin.H{"status": "ready"})
	})
	r.GET("/docs/plugin-api/errors/:code", in.Head, in.Content, func(c *gin.Context) {
		text, ok := plugin.ErrorDocs[c.Param("code")]
		if !ok {
			p.NotFound(c)
			return
		}
		c.PureJSON(http.StatusOK, gin.H{"code": c.Param("code"), "description": text})
	})
	// Unknown routes and methods answer in the error body of the API whose prefix they carry.
	// An OPTIONS matches no route (none is registered), so it reaches these two through the
	// middleware of every request; so does a request of the target "*" (an OPTIONS of the server
	// itself, or a malformed request), which no route pattern matches.
	r.NoRoute(func(c *gin.Context) {
		if serveAsteriskTarget(c, r.Routes, p) || servePreflight(c) {
			return
		}
		if d.External != nil && isExternal(c) {
			d.External.NotFound(c)
			return
		}
		p.NotFound(c)
	})
	r.NoMethod(func(c *gin.Context) {
		if servePreflight(c) {
			return
		}
		// A 405 names the methods the path takes (RFC 9110, 15.5.6). gin (since v1.10), before it
		// calls this handler, sets Allow to the methods whose routes match the path as it routed
		// it (on the path as sent, where a %2F stays inside its segment), looking the path up in
		// each method's tree rather than listing every route; allowMethods completes it.
		c.Header("Allow", allowMethods(c.Writer.Header().Get("Allow"), c.Request.URL.EscapedPath()))
		if d.External != nil && isExternal(c) {
			d.External.MethodNotAllowed(c)
			return
		}
		p.Fail(c, http.StatusMethodNotAllowed, plugin.CodeMethodNotAllowed, "Method "+reqctx.Method(c)+" is not allowed on this route.")
	})
	return &Router{Engine: r}
}

// servePreflight answers an OPTIONS of a signed route as its CORS preflight (files.Preflight),
// and reports whether it did; an OPTIONS of any other route is a 405 naming its methods. The
// router's NoRoute and NoMethod handlers call it, behind the middleware of every request (request
// ID, access log, metrics, deadline), which log and count it under the route's template.
func servePreflight(c *gin.Context) bool {
	if c.Request.Method != http.MethodOptions {
		return false
	}
	pattern, ok := signedRoute(segmentsOf(c.Request.URL.EscapedPath()))
	if !ok {
		return false
	}
	c.Set(routeKey{}, pattern)
	files.Preflight(c.Writer, files.SignedRoutes[pattern])
	return true
}

// MaxHeaderBytes is the most a request's line and header fields may take (headBytes); a longer
// head answers 431 in the error body of its API (headers_too_large in the plugin's), behind the
// middleware of every request. The HTTP server reads heads up to ServerMaxHeaderBytes, so that
// every head between the two reaches the router instead of net/http's plain-text 431.
const MaxHeaderBytes = 64 << 10

// ServerMaxHeaderBytes is the API server's http.Server.MaxHeaderBytes (internal/app): net/http's
// default, well past MaxHeaderBytes. Only a head past it (and net/http's few kilobytes of slack)
// is refused by net/http itself, in plain text, before the router.
const ServerMaxHeaderBytes = http.DefaultMaxHeaderBytes

// limitHeaders refuses a request whose head is longer than MaxHeaderBytes with 431 in the error
// body of the API whose prefix it carries, before any route's handlers (the key check included)
// run; x is nil when the router serves no external API. It measures the request as sent
// (reqctx.Sent): a HEAD with its method and its Prefer, which the GET it is served as lacks.
func limitHeaders(x *external.Handler, p *plugin.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		n := headBytes(reqctx.Sent(c))
		if n <= MaxHeaderBytes {
			c.Next()
			return
		}
		message := fmt.Sprintf("The request line and headers take %d bytes; at most %d are accepted.", n, MaxHeaderBytes)
		if x != nil && isExternal(c) {
			x.HeadersTooLarge(c, message)
			return
		}
		p.Fail(c, http.StatusRequestHeaderFieldsTooLarge, plugin.CodeHeadersTooLarge, message)
	}
}

// headBytes is what the request's line and header fields took as HTTP/1.1 sent them ("Name: value"
// lines ending in CRLF, then an empty line), less the spaces net/http's parser trims: the bytes
// MaxHeaderBytes bounds.
func headBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2 // net/http moves Host out of Header
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// asteriskTarget is the request-target of an OPTIONS of the server as a whole (RFC 9110, 9.3.7),
// and the route a request of it is logged and counted under.
const asteriskTarget = "*"

// serveAsteriskTarget answers a request whose target is "*", and reports whether it did. "OPTIONS
// *" asks which methods the server takes: 204 with an Allow naming every method some route of the
// API takes (HEAD where GET is one, OPTIONS for this and the preflights of signed URLs). net/http
// answers it itself, before any handler, unless the server disables that
// (http.Server.DisableGeneralOptionsHandler, set by internal/app). The target "*" is OPTIONS's
// alone (RFC 9112, 3.2.4), so any other method with it is a malformed request: 400 invalid_input
// in the plugin API's envelope, the one of a path without the external API's prefix. The router's
// NoRoute handler calls it, behind the middleware of every request (request ID, access log,
// metrics), which log and count either under the route "*". routes is called for an OPTIONS *
// alone, so that an unknown path (a scanner's) does not pay for a list of every route.
func serveAsteriskTarget(c *gin.Context, routes func() gin.RoutesInfo, p *plugin.Handler) bool {
	if c.Request.RequestURI != asteriskTarget {
		return false
	}
	c.Set(routeKey{}, asteriskTarget)
	if c.Request.Method != http.MethodOptions {
		p.Fail(c, http.StatusBadRequest, plugin.CodeInvalidInput,
			"The request-target * is only for OPTIONS, which asks what the service takes; "+reqctx.Method(c)+" needs a route's path.")
		return true
	}
	methods := []string{http.MethodOptions}
	for _, rt := range routes() {
		if !slices.Contains(methods, rt.Method) {
			methods = append(methods, rt.Method)
		}
	}
	if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
		methods = append(methods, http.MethodHead) // served as the GET (Router.ServeHTTP)
	}
	slices.Sort(methods)
	c.Header("Allow", strings.Join(methods, ", "))
	c.Status(http.StatusNoContent)
	c.Writer.WriteHeaderNow()
	return true
}

// signedRoute is the pattern of the signed route (files.SignedRoutes) a path's segments match.
func signedRoute(segments []string) (pattern string, ok bool) {
	for pattern := range files.SignedRoutes {
		if matchesPattern(segmentsOf(pattern), segments) {
			return pattern, true
		}
	}
	return "", false
}

// routeKey is the gin context key of the route template of a request that matched no gin route
// but is served as one of them (a preflight, servePreflight; the target "*", serveAsteriskTarget).
type routeKey struct{}

// isExternal tells whether a request is the external API's: its base path, or a path under it.
func isExternal(c *gin.Context) bool {
	path := c.Request.URL.Path
	return path == external.Base || strings.HasPrefix(path, external.Base+"/")
}

// allowMethods is the Allow of a 405 of path, sorted: matched, the methods gin found routes of
// for the path (a comma-separated list, its 405's Allow), with HEAD where GET is one (served as
// the GET, Router.ServeHTTP) and OPTIONS on a signed route (its CORS preflight, servePreflight).
func allowMethods(matched, path string) string {
	var methods []string
	if matched != "" {
		methods = strings.Split(matched, ", ")
	}
	if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
		methods = append(methods, http.MethodHead)
	}
	if _, signed := signedRoute(segmentsOf(path)); signed && len(methods) > 0 && !slices.Contains(methods, http.MethodOptions) {
		methods = append(methods, http.MethodOptions)
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}

// segmentsOf splits a path or a route pattern into its segments.
func segmentsOf(path string) []string { return strings.Split(strings.Trim(path, "/"), "/") }

// matchesPattern reports whether a path's segments match a gin pattern's.
func matchesPattern(pattern, segments []string) bool {
	for i, p := range pattern {
		if strings.HasPrefix(p, "*") {
			return true
		}
		if i >= len(segments) || (!strings.HasPrefix(p, ":") && p != segments[i]) || segments[i] == "" {
			return false
		}
	}
	return len(pattern) == len(segments)
}

// MetricsPath serves the API's metrics in the Prometheus text format.
const MetricsPath = "/metrics"

// Instrument records every request in m: its route template ("unmatched" for unknown paths and
// methods), method, status class and latency.
func Instrument(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		m.Request(routeLabel(c), methodLabel(reqctx.Method(c)), c.Writer.Status(), time.Since(start))
	}
}

// routeLabel is the request's route template, "unmatched" for unknown paths and methods.
func routeLabel(c *gin.Context) string {
	if route := c.FullPath(); route != "" {
		return route
	}
	if route := c.GetString(routeKey{}); route != "" {
		return route
	}
	return "unmatched"
}

// methodLabel keeps the method label to the standard methods, so arbitrary ones cannot grow the
// number of series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// RequestID gives every request its ID (reqctx.AssignRequestID) before anything else runs.
func RequestID(c *gin.Context) {
	reqctx.AssignRequestID(c)
	c.Next()
}

// AccessLog logs one line per request: method, route, status, latency, request ID and the
// installation or account that made it.
func AccessLog(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		// The connection's own context, read before RequestTimeout puts the request's deadline in
		// its place (which it cancels when the request ends): it ends only when the client leaves.
		conn := c.Request.Context()
		c.Next()
		fields := append([]zap.Field{
			zap.String("method", reqctx.Method(c)),
			zap.String("route", routeLabel(c)),
			zap.Int("status", c.Writer.Status()),
			zap.Duration("latency", time.Since(start)),
		}, reqctx.Fields(c)...)
		for _, err := range c.Errors {
			fields = append(fields, zap.NamedError("error", err.Err))
		}
		switch {
		case c.Writer.Status() >= 500 && errors.Is(conn.Err(), context.Canceled):
			// Whatever failed after the client hung up is no outage an operator must chase.
			log.Warn("request", append(fields, zap.Bool("client_left", true))...)
		case c.Writer.Status() >= 500:
			log.Error("request", fields...)
		default:
			log.Info("request", fields...)
		}
	}
}
