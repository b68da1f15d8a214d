// Package reqctx keeps what a request learns about itself on its gin context, under typed keys:
// its request ID, which is also its correlation ID in both APIs, and the tenant that made it.
//
// Correlation policy: every request has one ID, the client's well-formed X-Request-Id or one the
// service makes. It is echoed in the X-Request-Id header, written on the request's access log line,
// stored on any order the request creates (orders.correlation_id), carried in the order
// workflow's memo, and logged by the activities that work for that order.
package reqctx

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/secrets"
)

type key int

const (
	requestIDKey key = iota
	tenantKey
	deadlineKey
	timeoutKey
)

// Tenant is who made a request: the account, and the plugin installation for plugin keys.
type Tenant struct {
	AccountID      string
	InstallationID string // "" for the external API's account keys
}

// AssignRequestID gives the request its ID, once: the client's X-Request-Id when well-formed (1–128
// printable ASCII characters, no spaces), else a new one. It is echoed in the X-Request-Id header.
func AssignRequestID(c *gin.Context) string {
	if id, ok := c.Get(requestIDKey); ok {
		return id.(string)
	}
	id := c.GetHeader("X-Request-Id")
	if id == "" || len(id) > 128 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		id = secrets.Token(12)
	}
	c.Set(requestIDKey, id)
	c.Header("X-Request-Id", id)
	return id
}

// RequestID is the request's ID (AssignRequestID: every request has one as soon as it is asked).
func RequestID(c *gin.Context) string { return AssignRequestID(c) }

// CorrelationID is the ID that ties a request to the order it creates and to the logs of the
// work done for it: the request ID.
func CorrelationID(c *gin.Context) string { return RequestID(c) }

// SetTenant records who made the request, once its key is authenticated.
func SetTenant(c *gin.Context, t Tenant) { c.Set(tenantKey, t) }

// TenantOf is who made the request; the zero Tenant before authentication.
func TenantOf(c *gin.Context) Tenant {
	t, _ := c.Get(tenantKey)
	tenant, _ := t.(Tenant)
	return tenant
}

// SetDeadlineExtender records how the request's deadline is extended (api.RequestTimeout does),
// and timeout, REQUEST_TIMEOUT: how long the request's work may take after a hold.
func SetDeadlineExtender(c *gin.Context, extend func(hold time.Duration), timeout time.Duration) {
	c.Set(deadlineKey, extend)
	c.Set(timeoutKey, timeout)
}

// Timeout is how long the request's work may take after a hold (ExtendDeadline): REQUEST_TIMEOUT,
// or 0 without a request timeout (a test router).
func Timeout(c *gin.Context) time.Duration {
	d, _ := c.Get(timeoutKey)
	timeout, _ := d.(time.Duration)
	return timeout
}

// ExtendDeadline lets a handler hold its request for hold from now (a `Prefer: wait`, an event
// stream): the request's context then ends REQUEST_TIMEOUT after that, so the work after the hold
// keeps its usual time. Without a request timeout (a test router) it does nothing.
func ExtendDeadline(c *gin.Context, hold time.Duration) {
	if f, ok := c.Get(deadlineKey); ok {
		f.(func(time.Duration))(hold)
	}
}

// Fields are what every log line about a request carries: its request ID, and once its key is
// authenticated, the account and installation that made it.
func Fields(c *gin.Context) []zap.Field {
	fields := []zap.Field{zap.String("request_id", RequestID(c))}
	if t := TenantOf(c); t.AccountID != "" {
		fields = append(fields, zap.String("account_id", t.AccountID))
		if t.InstallationID != "" {
			fields = append(fields, zap.String("installation_id", t.InstallationID))
		}
	}
	return fields
}

// Log is log for a line about the request: with its Fields, so that an operator finds the
// request's access line, its answer's X-Request-Id and its tenant from it.
func Log(c *gin.Context, log *zap.Logger) *zap.Logger { return log.With(Fields(c)...) }

// headKey is the context key of the HEAD a GET is served as (HeadAsGet).
type headKey struct{}

// HeadAsGet is the GET a HEAD request is served as: its handlers run as for a GET (a signed URL is
// signed for GET), and its context remembers the HEAD as sent (IsHead, Method, Sent). It holds
// nothing open: a `Prefer: wait` is dropped, and an event stream answers its headers only
// (eventstream.Serve).
func HeadAsGet(req *http.Request) *http.Request {
	get := req.Clone(context.WithValue(req.Context(), headKey{}, req))
	get.Method = http.MethodGet
	get.Header.Del("Prefer")
	return get
}

// IsHead reports whether the request is a HEAD served as its GET.
func IsHead(c *gin.Context) bool {
	_, head := c.Request.Context().Value(headKey{}).(*http.Request)
	return head
}

// Sent is the request as the client sent it: the HEAD, with its method and every header, of a GET
// it is served as (HeadAsGet), else the request itself.
func Sent(c *gin.Context) *http.Request {
	if head, ok := c.Request.Context().Value(headKey{}).(*http.Request); ok {
		return head
	}
	return c.Request
}

// Method is the method the client sent: HEAD for a HEAD served as its GET.
func Method(c *gin.Context) string {
	if IsHead(c) {
		return http.MethodHead
	}
	return c.Request.Method
}
