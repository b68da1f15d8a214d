// Package prefer holds requests that ask to wait (RFC 7240 `Prefer: wait=N`): a request that
// creates or reads an order or a job is answered once everything it concerns has ended, or N
// seconds have passed, exactly as it would be answered at that moment without the header.
//
// The header is read as RFC 7240 asks: preferences are separated by commas (in one header or
// several), the first `wait` wins, its value is a whole number of seconds, quoted or not, and
// anything else (a negative, zero or non-numeric value, a malformed preference) is ignored, so
// the request is answered at once. N above MaxWait is held for MaxWait, and the answer's
// Preference-Applied says so.
package prefer

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
)

// The headers of a waiting request and its answer.
const (
	HeaderPrefer            = "Prefer"
	HeaderPreferenceApplied = "Preference-Applied"
)

// MaxWait is the longest a request is held.
const MaxWait = 60 * time.Second

// Wait returns the wait the request prefers, clamped to MaxWait, and whether it asks for one.
func Wait(h http.Header) (time.Duration, bool) {
	for _, line := range h.Values(HeaderPrefer) {
		for pref := range strings.SplitSeq(line, ",") {
			token, value, found := strings.Cut(pref, "=")
			if !strings.EqualFold(strings.TrimSpace(token), "wait") {
				continue
			}
			// The first wait preference is the one that counts, valid or not (RFC 7240 §2).
			if !found {
				return 0, false
			}
			value, _, _ = strings.Cut(value, ";") // parameters of a preference: none is defined for wait
			value = strings.TrimSpace(value)
			if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
				value = value[1 : len(value)-1]
			}
			if value == "" || strings.TrimLeft(value, "0123456789") != "" {
				return 0, false
			}
			if digits := strings.TrimLeft(value, "0"); len(digits) > 9 {
				return MaxWait, true // a whole number of any length: far above MaxWait
			}
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return 0, false
			}
			return min(time.Duration(n)*time.Second, MaxWait), true
		}
	}
	return 0, false
}

// Read is one read of what a held request answers: the value to answer, the order whose events
// tell when to read again and the number of the latest event the read has seen (read before the
// value, so that a change between the two wakes the request), and whether it has ended.
type Read[T any] struct {
	Value   T
	OrderID string
	Seen    int64
	Ended   bool
}

// Feed wakes a held request when its order changes (engine.Feed): Wait returns true on a change,
// false once ctx ends or the process stops.
type Feed interface {
	Wait(ctx context.Context, orderID string, seen int64) bool
}

// Hold answers the request's read once it has ended or wait has passed, reading again each time
// the feed reports a change of its order. It extends the request's deadline by wait (its own
// deadline is never what ends it), and sets Preference-Applied on an answer it read. When the
// process stops, the state of that moment is answered at once.
func Hold[T any](c *gin.Context, feed Feed, wait time.Duration, read func(ctx context.Context) (Read[T], error)) (T, error) {
	until := time.Now().Add(wait)
	reqctx.ExtendDeadline(c, wait)
	ctx := c.Request.Context()
	read = applied(c, wait, read)
	for {
		r, err := read(ctx)
		if err != nil || r.Ended || !time.Now().Before(until) {
			return r.Value, err
		}
		wctx, cancel := context.WithDeadline(ctx, until)
		changed := feed.Wait(wctx, r.OrderID, r.Seen)
		cancel()
		if ctx.Err() != nil {
			return r.Value, ctx.Err()
		}
		if !changed { // the wait is over, or the process stops: the state of now
			r, err = read(ctx)
			return r.Value, err
		}
	}
}

// applied wraps read so that a successful read marks the answer Preference-Applied.
func applied[T any](c *gin.Context, wait time.Duration, read func(ctx context.Context) (Read[T], error)) func(ctx context.Context) (Read[T], error) {
	return func(ctx context.Context) (Read[T], error) {
		r, err := read(ctx)
		if err == nil {
			SetApplied(c, wait)
		}
		return r, err
	}
}

// SetApplied marks the answer of a request whose wait was honoured without holding it (what it
// concerns had already ended): Preference-Applied: wait=N.
func SetApplied(c *gin.Context, wait time.Duration) {
	c.Header(HeaderPreferenceApplied, "wait="+strconv.Itoa(int(wait/time.Second)))
}

// MaxHeldPerKey is how many requests one API key may have held at once, across API processes
// when Redis is configured (ratelimit.Slots).
const MaxHeldPerKey = 100

// RetryAfterBusy is the Retry-After of a request refused because its key holds MaxHeldPerKey.
const RetryAfterBusy = 5

// Held is a request's wait with the slot it holds while it waits: Wait is zero when the request
// does not ask to wait.
type Held struct {
	Wait time.Duration
	slot *ratelimit.Slot
}

// Release frees the slot; safe on a Held without one.
func (h *Held) Release() {
	if h != nil && h.slot != nil {
		_ = h.slot.Release()
	}
}

// heldLease is the lease of a held request's slot: the wait, then the request's work after it
// (REQUEST_TIMEOUT, reqctx.Timeout, at least 2 minutes), then a minute: the longest the request can
// hold the slot, whose lease must not end first (another request could take it meanwhile).
func heldLease(c *gin.Context, wait time.Duration) time.Duration {
	return wait + max(2*time.Minute, reqctx.Timeout(c)) + time.Minute
}

// Take reads the request's wait and, when it asks for one, takes one of its key's MaxHeldPerKey
// slots (key names the API key, e.g. "plugin:<id>"), before the request does anything: busy is
// true, and Retry-After set, when they are all taken, and the caller answers 429 having changed
// nothing. A slot store that fails admits the request (as the rate limit does).
func Take(c *gin.Context, slots ratelimit.Slots, key string, log *zap.Logger) (held *Held, busy bool) {
	wait, ok := Wait(c.Request.Header)
	if !ok {
		return &Held{}, false
	}
	slot, ok, err := slots.Acquire(c.Request.Context(), "wait:"+key, MaxHeldPerKey, heldLease(c, wait))
	if err != nil {
		reqctx.Log(c, log).Warn("shared request slots unavailable; the wait holds one of the process's own, or none", zap.Error(err))
	}
	if !ok {
		c.Header("Retry-After", strconv.Itoa(RetryAfterBusy))
		return nil, true
	}
	return &Held{Wait: wait, slot: slot}, false
}
