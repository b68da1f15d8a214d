// Package idempotency is the Idempotency-Key mechanism both APIs share: the plugin API's
// mutating routes (api/plugin, keys scoped per installation) and the external API's POST routes
// (api/external, keys scoped per team account). A façade wraps a route's handler with Keys.Wrap,
// supplying the key's scope and its error envelope; everything else is here, and the documents
// (api/openapi.yaml and api/external/openapi.yaml, "Idempotency") describe it to clients.
//
//   - Keys are scoped per tenant (Keys.Scope): two installations, or two accounts, may use the
//     same key independently.
//   - A key is bound to the SHA-256 of its canonical request (PayloadHash): method, path (path
//     parameters included, so DELETE /jobs/A and /jobs/B are different requests), the query string
//     when there is one, and for a route that takes a JSON body the body re-encoded with sorted
//     keys and no insignificant whitespace (RequestHash), so formatting and key order do not
//     matter but any value does. A multipart body counts as its fields and files (formHash), not
//     its bytes, so a retry with another boundary is the same request. A route that takes no body
//     ignores one, and so does the hash. Headers other than the key are not part of it: the API
//     key's tenant scopes the key, and its permission is checked before the key is looked at.
//   - The first request claims the key by inserting a row (engine.Idempotency.RunOnce); the unique
//     index of the scope decides which of concurrent requests wins. The winner runs the route with
//     its answer held back (answerWriter).
//   - Only successes are remembered: a 2xx answer is recorded (status, the headers the route set,
//     body) before it is sent. Any other answer (400, 402, 404, 409, 410, 422, 5xx, a panic)
//     deletes the claim, so a corrected retry may use the same key at once.
//   - The same key with the same payload within 24 hours of the answer replays that answer: the
//     same status, headers and body, byte for byte, plus Idempotent-Replayed: true. A route may
//     replay with another status (Rule.ReplayStatus): the plugin's sessions replay their 201 as
//     200, and the external generation routes answer, and replay, 200.
//   - The same key with a different payload answers 409 (the plugin's idempotency_conflict, the
//     external API's errors.idempotencyConflict).
//   - A request that arrives while the first one with its key and payload is still running waits
//     for it (up to Timing.Wait, 10 s) and then replays its answer; should the first still run
//     after that, it answers 409 saying so, with Retry-After: 1. It never runs the route a second
//     time.
//   - A claim whose request died before recording (the process crashed) is taken over by the next
//     request with that key once it has been idle for Timing.Lease (1 min; every request ends
//     within the 30 s request timeout, so only a dead one leaves a claim that long).
//   - Records expire 24 hours (Timing.TTL) after the answer: an expired key is used afresh, and
//     the worker's retention sweep deletes expired records.
//   - An answer that carries a secret (Rule.Sealed) is recorded sealed (Keys.Secrets), like the
//     secret itself, and opened to be replayed.
//
// Exactly once, and the crash window. A route that creates an order records its answer inside
// the transaction that creates it (Claim: the plugin's sessions, engine.KeyClaim.SessionRecord;
// the external generation routes, engine.KeyClaim.SubmittedRecord), so the order exists exactly
// when its key names it, crash or not. The other routes record their answer right after their
// effect commits, in a statement of its own. A crash (or a lost database) between the two leaves
// the claim unfinished: a retry within the lease is answered 409 with Retry-After, and after it
// the retry runs the route again, whose second effect is then what the key remembers; what that
// second run does is the route's own repeat behaviour (each façade's document says it).
package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
)

// Header is the request header that makes a mutation idempotent.
const Header = "Idempotency-Key"

// ReplayedHeader marks an answer replayed for a key ("true").
const ReplayedHeader = "Idempotent-Replayed"

// MaxKeyLength is the longest Idempotency-Key accepted, in characters.
const MaxKeyLength = 200

// JSONContentType is the Content-Type of a JSON answer, as gin writes it.
const JSONContentType = "application/json; charset=utf-8"

// DefaultTiming is the timing of both APIs: a repeat waits up to 10 s for the first request,
// looking every 50 ms; an unfinished claim is taken over after 1 min (a request that creates an
// order commits within a second or two, so only a dead request leaves one); an answer is replayed
// for 24 hours (TTL 0: the store's).
var DefaultTiming = engine.KeyTiming{Wait: 10 * time.Second, Poll: 50 * time.Millisecond, Lease: time.Minute}

// Rule is how a route takes its Idempotency-Key.
type Rule struct {
	Required     bool // the header is required; otherwise it is optional
	ReplayStatus int  // the status of a replay; 0 replays the first answer's status
	Sealed       bool // the answer holds a secret: recorded sealed with Keys.Secrets
}

// Conflict is why a keyed request is answered 409.
type Conflict int

const (
	// ConflictPayload: the key was used with a different request.
	ConflictPayload Conflict = iota
	// ConflictBusy: the first request with the key and payload is still running (Retry-After: 1).
	ConflictBusy
)

// Keys is the mechanism as one façade uses it: its engine, secrets and logger, the tenant that
// scopes a request's key, its timing, and its error envelope.
type Keys struct {
	Engine  *engine.Engine
	Secrets engine.Sealer // opens and seals the answers of Sealed routes
	Log     *zap.Logger
	// Scope is the tenant whose keys the request's key is one of (the request is authenticated).
	Scope func(c *gin.Context) engine.KeyScope
	// Timing is the timing of this request (DefaultTiming outside tests).
	Timing engine.KeyTiming
	// Invalid answers 400 in the façade's envelope: a missing (when required), empty, too long or
	// repeated header, or a body that could not be read.
	Invalid func(c *gin.Context, message string)
	// Conflicted answers 409 in the façade's envelope.
	Conflicted func(c *gin.Context, why Conflict, message string)
	// Internal answers an error of the store (500, or 503 when the database is unavailable).
	Internal func(c *gin.Context, err error)
}

// claimContextKey is the gin context key of the *engine.KeyClaim a keyed request runs under.
const claimContextKey = "idempotency.claim"

// Run runs handler for a request under rule: without an Idempotency-Key as it is; with one at
// most once per scope and key, replaying its remembered answer (the rules at the top of this
// file). takesBody says whether the route's body is part of the payload.
func (k Keys) Run(c *gin.Context, rule Rule, takesBody bool, handler gin.HandlerFunc) {
	key, present, ok := k.key(c, rule.Required)
	if !ok {
		return
	}
	if !present {
		handler(c)
		return
	}
	if rule.Sealed && k.Secrets == nil { // before the effect, which could not be recorded
		k.Internal(c, errors.New("idempotency key: the route's answer is recorded sealed, and the API has no sealer"))
		return
	}
	raw, ok := k.readBody(c)
	if !ok {
		return
	}
	hash, err := k.hash(c, raw, takesBody)
	if err != nil {
		k.Internal(c, err)
		return
	}
	var answer *answerWriter
	res, err := k.Engine.Idempotency.RunOnce(c.Request.Context(), k.Scope(c), key, hash, k.Timing,
		func(claim *engine.KeyClaim) bool {
			var committed bool
			answer, committed = k.runClaimed(c, claim, rule, raw, handler)
			return committed
		})
	if err != nil {
		k.Internal(c, err)
		return
	}
	k.answer(c, rule, res, answer)
}

// key reads the Idempotency-Key header. present is false when there is none; ok is false when the
// request was answered 400 (missing though required, empty, too long, or sent twice).
func (k Keys) key(c *gin.Context, required bool) (key string, present, ok bool) {
	values := c.Request.Header.Values(Header)
	switch {
	case len(values) == 0 && !required:
		return "", false, true
	case len(values) == 0:
		k.Invalid(c, fmt.Sprintf(
			"The %s header is required on this route: send a unique client token of 1 to %d characters, and the same one when you retry.",
			Header, MaxKeyLength))
		return "", false, false
	case len(values) > 1:
		k.Invalid(c, fmt.Sprintf("Send one %s header, not %d.", Header, len(values)))
		return "", false, false
	}
	key = values[0]
	if n := utf8.RuneCountInString(key); n < 1 || n > MaxKeyLength {
		k.Invalid(c, fmt.Sprintf("The %s header must have 1 to %d characters; it has %d.", Header, MaxKeyLength, n))
		return "", false, false
	}
	return key, true, true
}

// readBody is the body the input check read (not a copy), or what is left of it: nothing for a
// multipart body, which the input check parsed into the request's form.
func (k Keys) readBody(c *gin.Context) ([]byte, bool) {
	if body, ok := inputcheck.Bytes(c); ok {
		return body, true
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		k.Invalid(c, "The request body could not be read.")
		return nil, false
	}
	return body, true
}

// hash is the payload hash of the request: formHash for a multipart body, else PayloadHash of raw
// (of nothing when the route takes no body).
func (k Keys) hash(c *gin.Context, raw []byte, takesBody bool) (string, error) {
	if !takesBody {
		return PayloadHash(c, nil), nil
	}
	if form := c.Request.MultipartForm; form != nil {
		return formHash(c, form)
	}
	return PayloadHash(c, raw), nil
}

// answer writes what RunOnce made of a keyed request: the route's own answer, a replay, or a
// conflict.
func (k Keys) answer(c *gin.Context, rule Rule, res engine.KeyResult, answer *answerWriter) {
	switch res.Outcome {
	case engine.KeyRan:
		answer.writeTo(c.Writer)
	case engine.KeyReplayed:
		k.replay(c, rule, res.Answer)
	case engine.KeyConflict:
		k.Conflicted(c, ConflictPayload, fmt.Sprintf(
			"This %s was already used with a different request; use a new key for a different request.", Header))
	case engine.KeyBusy:
		c.Header("Retry-After", "1")
		k.Conflicted(c, ConflictBusy, fmt.Sprintf(
			"The first request with this %s is still being processed; retry shortly to get its answer.", Header))
	}
}

// runClaimed runs the handler under the claim with its answer held back, and records a success
// that the route has not recorded in its own transaction. committed reports whether the route's
// effect committed (its answer is 2xx), so that RunOnce keeps the claim; a route whose
// in-transaction record found the claim taken over committed nothing, and its answer is dropped.
func (k Keys) runClaimed(c *gin.Context, claim *engine.KeyClaim, rule Rule, raw []byte, handler gin.HandlerFunc) (answer *answerWriter, committed bool) {
	client := c.Writer
	answer = newAnswerWriter(client)
	c.Writer = answer
	c.Set(claimContextKey, claim)
	defer func() { // also when the handler panics: Recover answers the client
		c.Writer = client
		c.Set(claimContextKey, (*engine.KeyClaim)(nil))
	}()
	c.Request.Body = io.NopCloser(bytes.NewReader(raw))
	handler(c)
	if claim.Lost() {
		return nil, false
	}
	if answer.status < 200 || answer.status > 299 {
		return answer, false
	}
	if !claim.Recorded() {
		k.complete(c, claim, rule, answer)
	}
	return answer, true
}

// complete records a success whose route committed its effect on its own. Should that fail, the
// answer is still sent (the effect happened) and the claim is left to its lease.
func (k Keys) complete(c *gin.Context, claim *engine.KeyClaim, rule Rule, answer *answerWriter) {
	recorded := answer.recorded()
	if rule.Sealed {
		recorded.Body = []byte(k.Secrets.Seal(string(recorded.Body)))
	}
	if err := claim.Complete(c.Request.Context(), recorded); err != nil {
		reqctx.Log(c, k.Log).Error("idempotency key: the answer of a committed request was not recorded; a retry after the lease runs it again",
			zap.String("path", c.Request.URL.Path), zap.Error(err))
	}
}

// replay writes a recorded answer with Idempotent-Replayed: true.
func (k Keys) replay(c *gin.Context, rule Rule, answer engine.Answer) {
	if rule.Sealed {
		body, err := k.Secrets.Open(string(answer.Body))
		if err != nil {
			k.Internal(c, fmt.Errorf("open the recorded answer of an idempotency key: %w", err))
			return
		}
		answer.Body = []byte(body)
	}
	if answer.Headers == nil && len(answer.Body) > 0 {
		// Recorded before migration 0011 (a plugin session): JSON.
		answer.Headers = map[string][]string{"Content-Type": {JSONContentType}}
	}
	if rule.ReplayStatus != 0 {
		answer.Status = rule.ReplayStatus
	}
	c.Header(ReplayedHeader, "true")
	writeAnswer(c.Writer, answer)
}

// Claim is the claim the request runs under, or nil when it has no Idempotency-Key: a route that
// commits its effect in a transaction records its answer there with it (engine.KeyClaim.Record,
// SessionRecord, SubmittedRecord).
func Claim(c *gin.Context) *engine.KeyClaim {
	v, _ := c.Get(claimContextKey)
	claim, _ := v.(*engine.KeyClaim)
	return claim
}

// JSONAnswer is the answer of status with v as its JSON body, encoded as gin's PureJSON writes it
// (no HTML escaping, a trailing newline): what a route that records its answer in its own
// transaction records, and then sends with PureJSON, byte for byte.
func JSONAnswer(status int, v any) (engine.Answer, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return engine.Answer{}, err
	}
	return engine.Answer{Status: status, Headers: map[string][]string{"Content-Type": {JSONContentType}}, Body: buf.Bytes()}, nil
}
