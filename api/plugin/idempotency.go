package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/internal/engine"
)

// Idempotency-Key on every mutating route (plugin.go mounts them with h.mutation): POST /jobs,
// /orders/{id}/clone (where the key is required), /assets/upload, /images, /packshots,
// /jobs/{id}/accept, /jobs/{id}/reject, /jobs/{id}/refresh-url, /installations/{id}/rotate-hmac,
// /webhooks/{delivery_id}/replay, DELETE /jobs/{id}, /products/{id_or_ref} and
// /packshots/{id_or_ref}. One mechanism, keyed (below), serves them all; api/openapi.yaml
// ("Idempotency") documents it for clients.
//
//   - Keys are scoped per installation: two installations may use the same key independently.
//   - A key is bound to the SHA-256 of its canonical request (payloadHash): method, path (path
//     parameters included, so DELETE /jobs/A and /jobs/B are different requests), the query string
//     when there is one, and for a route that takes a body the JSON body re-encoded with sorted
//     keys and no insignificant whitespace (requestHash), so formatting and key order do not
//     matter but any value does. A route that takes no body ignores one, and so does the hash.
//     Headers other than the key are not part of it: the API key's installation scopes the key,
//     and its permission is checked before the key is looked at.
//   - The first request claims the key by inserting a row (engine.Idempotency.RunOnce); the unique
//     index on (installation_id, idempotency_key) decides which of concurrent requests wins. The
//     winner runs the route with its answer held back (answerWriter).
//   - Only successes are remembered: a 2xx answer is recorded (status, the headers the route set,
//     body) before it is sent. Any other answer (400, 402, 404, 409, 410, 422, 5xx, a panic)
//     deletes the claim, so a corrected retry may use the same key at once.
//   - The same key with the same payload within 24 hours of the answer replays that answer: the
//     same status, headers and body, byte for byte, plus Idempotent-Replayed: true. Sessions
//     (POST /jobs, clone) replay their 201 as 200, as api/openapi.yaml says (Idempotency).
//   - The same key with a different payload answers 409 idempotency_conflict.
//   - A request that arrives while the first one with its key and payload is still running waits
//     for it (up to idempotencyWait, 10 s) and then replays its answer; should the first still run
//     after that, it answers 409 idempotency_conflict saying so, with Retry-After: 1. It never
//     runs the route a second time.
//   - A claim whose request died before recording (the process crashed) is taken over by the next
//     request with that key once it has been idle for idempotencyLease (1 min; every request ends
//     within the 30 s request timeout, so only a dead one leaves a claim that long).
//   - Records expire 24 hours after the answer: an expired key is used afresh, and each keyed
//     request deletes its installation's expired records.
//   - The rotate-hmac answer carries the new webhook secret: it is recorded sealed (h.Secrets),
//     like the secret itself, and opened to be replayed.
//   - POST /jobs/batch does not take the header: each of its sessions is independent.
//
// Exactly once, and the crash window. A session records its answer inside the transaction that
// creates its order (sessionRecord), so the order exists exactly when its key names it, crash or
// not. The other routes record their answer right after their effect commits, in a statement of
// its own. A crash (or a lost database) between the two leaves the claim unfinished: a retry
// within the lease is answered 409 with Retry-After, and after it the retry runs the route again,
// whose second effect is then what the key remembers. What that second run does is the route's
// own repeat behaviour: POST /images and /packshots find their external_refs and answer them
// `existing`; accept and reject set the same rating; refresh-url signs the same files; the DELETEs
// answer 404 (the record is gone) or 409 job_not_cancelable (the job is cancelled); upload
// declares a second asset that expires unused; a webhook replay sends the delivery again with
// the same webhook-id, so receivers deduplicate it; rotate-hmac rotates once more (the secret
// the crash never showed becomes the previous one, still valid for 48 hours, and the answer shows
// the newest).

// HeaderIdempotencyKey is the request header that makes a mutation idempotent.
const HeaderIdempotencyKey = "Idempotency-Key"

// MaxIdempotencyKeyLength is the longest Idempotency-Key accepted, in characters.
const MaxIdempotencyKeyLength = 200

var (
	// idempotencyWait is how long a request waits for the first request with its key to finish.
	idempotencyWait = 10 * time.Second
	// idempotencyPoll is how often a waiting request looks at the key again.
	idempotencyPoll = 50 * time.Millisecond
	// idempotencyLease is how long an unfinished claim is kept before another request may take it
	// over; a session is committed within a second or two, so only a dead request leaves one.
	idempotencyLease = time.Minute
)

// idempotencyKey reads the Idempotency-Key header. present is false when there is none; ok is false
// when the request was answered 400 (missing though required, empty, too long, or sent twice).
func (h *Handler) idempotencyKey(c *gin.Context, required bool) (key string, present, ok bool) {
	values := c.Request.Header.Values(HeaderIdempotencyKey)
	switch {
	case len(values) == 0 && !required:
		return "", false, true
	case len(values) == 0:
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf(
			"The %s header is required on this route: send a unique client token of 1 to %d characters, and the same one when you retry.",
			HeaderIdempotencyKey, MaxIdempotencyKeyLength))
		return "", false, false
	case len(values) > 1:
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf("Send one %s header, not %d.", HeaderIdempotencyKey, len(values)))
		return "", false, false
	}
	key = values[0]
	if n := utf8.RuneCountInString(key); n < 1 || n > MaxIdempotencyKeyLength {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, fmt.Sprintf(
			"The %s header must have 1 to %d characters; it has %d.", HeaderIdempotencyKey, MaxIdempotencyKeyLength, n))
		return "", false, false
	}
	return key, true, true
}

// requestHash is the hex SHA-256 of the canonical request: method, path and canonical JSON body.
func requestHash(method, path string, body []byte) (string, error) {
	canon, err := canonicalJSON(body)
	if err != nil {
		return "", err
	}
	return canonicalHash(method, path, canon), nil
}

// canonicalHash is the hex SHA-256 of method, path and the canonical JSON body canon.
func canonicalHash(method, path string, canon []byte) string {
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n", method, path)
	sum.Write(canon)
	return hex.EncodeToString(sum.Sum(nil))
}

// canonicalJSON re-encodes a JSON document with object keys sorted, no insignificant whitespace and
// numbers in their shortest form (2, 2.0 and 2e0 are the same). An empty body counts as {}. The body
// is parsed once: decoded, then refused if anything but space follows the document.
func canonicalJSON(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical JSON: the body is not one JSON document")
	}
	return canonicalDocument(v)
}

// canonicalDocument encodes a decoded JSON document (json.Number numbers) as canonicalJSON does.
func canonicalDocument(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalizeNumbers(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			return t
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return t
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// keyRule is how a mutating route takes its Idempotency-Key.
type keyRule struct {
	required     bool // the header is required (clone); otherwise it is optional
	replayStatus int  // the status of a replay; 0 replays the first answer's status
	sealed       bool // the answer holds a secret: recorded sealed with h.Secrets
}

// The rules of the plugin routes.
var (
	keyOptional        = keyRule{}
	keySession         = keyRule{replayStatus: http.StatusOK}
	keyRequiredSession = keyRule{required: true, replayStatus: http.StatusOK}
	keySealed          = keyRule{sealed: true}
)

// claimContextKey is the gin context key of the *engine.KeyClaim a keyed request runs under.
const claimContextKey = "plugin.idempotencyClaim"

// keyed wraps the handler of a mutating route: without an Idempotency-Key it runs as it is; with
// one it runs at most once per installation and key, and its remembered answer is replayed (the
// rules at the top of this file). takesBody says whether the route's body is part of the payload.
func (h *Handler) keyed(rule keyRule, takesBody bool, handler gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		key, present, ok := h.idempotencyKey(c, rule.required)
		if !ok {
			return
		}
		if !present {
			handler(c)
			return
		}
		raw, ok := h.readBody(c)
		if !ok {
			return
		}
		payload := raw
		if !takesBody {
			payload = nil
		}
		hash := payloadHash(c, payload)
		var answer *answerWriter
		timing := engine.KeyTiming{Wait: idempotencyWait, Poll: idempotencyPoll, Lease: idempotencyLease}
		res, err := h.Engine.Idempotency.RunOnce(c.Request.Context(), engine.InstallationKeyScope(caller(c).Installation.ID), key, hash, timing,
			func(claim *engine.KeyClaim) bool {
				var committed bool
				answer, committed = h.runClaimed(c, claim, rule, raw, handler)
				return committed
			})
		if err != nil {
			h.internal(c, err)
			return
		}
		h.answerKeyed(c, rule, res, answer)
	}
}

// answerKeyed writes what RunOnce made of a keyed request: the route's own answer, a replay, or a
// conflict.
func (h *Handler) answerKeyed(c *gin.Context, rule keyRule, res engine.KeyResult, answer *answerWriter) {
	switch res.Outcome {
	case engine.KeyRan:
		answer.writeTo(c.Writer)
	case engine.KeyReplayed:
		h.replay(c, rule, res.Answer)
	case engine.KeyConflict:
		h.Fail(c, http.StatusConflict, CodeIdempotencyConflict, fmt.Sprintf(
			"This %s was already used with a different request; use a new key for a different request.", HeaderIdempotencyKey))
	case engine.KeyBusy:
		c.Header("Retry-After", "1")
		h.Fail(c, http.StatusConflict, CodeIdempotencyConflict, fmt.Sprintf(
			"The first request with this %s is still being processed; retry shortly to get its answer.", HeaderIdempotencyKey))
	}
}

// runClaimed runs the handler under the claim with its answer held back, and records a success
// that the route has not recorded in its own transaction. committed reports whether the route's
// effect committed (its answer is 2xx), so that RunOnce keeps the claim; a route whose
// in-transaction record found the claim taken over committed nothing, and its answer is dropped.
func (h *Handler) runClaimed(c *gin.Context, claim *engine.KeyClaim, rule keyRule, raw []byte, handler gin.HandlerFunc) (answer *answerWriter, committed bool) {
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
		h.complete(c, claim, rule, answer)
	}
	return answer, true
}

// complete records a success whose route committed its effect on its own. Should that fail, the
// answer is still sent (the effect happened) and the claim is left to its lease.
func (h *Handler) complete(c *gin.Context, claim *engine.KeyClaim, rule keyRule, answer *answerWriter) {
	recorded := answer.recorded()
	if rule.sealed {
		recorded.Body = []byte(h.Secrets.Seal(string(recorded.Body)))
	}
	if err := claim.Complete(c.Request.Context(), recorded); err != nil {
		h.Log.Error("idempotency key: the answer of a committed request was not recorded; a retry after the lease runs it again",
			zap.String("path", c.Request.URL.Path), zap.Error(err))
	}
}

// replay writes a recorded answer with Idempotent-Replayed: true.
func (h *Handler) replay(c *gin.Context, rule keyRule, answer engine.Answer) {
	if rule.sealed {
		body, err := h.Secrets.Open(string(answer.Body))
		if err != nil {
			h.internal(c, fmt.Errorf("open the recorded answer of an idempotency key: %w", err))
			return
		}
		answer.Body = []byte(body)
	}
	if answer.Headers == nil && len(answer.Body) > 0 {
		// Recorded before migration 0011 (a session): JSON.
		answer.Headers = map[string][]string{"Content-Type": {jsonContentType}}
	}
	if rule.replayStatus != 0 {
		answer.Status = rule.replayStatus
	}
	c.Header("Idempotent-Replayed", "true")
	writeAnswer(c.Writer, answer)
}

// keyClaim is the claim the request runs under, or nil when it has no Idempotency-Key.
func keyClaim(c *gin.Context) *engine.KeyClaim {
	v, _ := c.Get(claimContextKey)
	claim, _ := v.(*engine.KeyClaim)
	return claim
}

// recorder is what a keyed session commits with (sessionRecord); nil for a session without a key.
type recorder = engine.SessionRecord

// sessionRecord is what a session commits with: under a key it records the session response as
// the key's answer (201, JSON) in the transaction that creates the order; nil without a key.
func sessionRecord(c *gin.Context) recorder {
	claim := keyClaim(c)
	if claim == nil {
		return nil
	}
	return claim.SessionRecord(func(s engine.Session) (engine.Answer, error) {
		body, err := encodeJSON(sessionResponse(s))
		return engine.Answer{Status: http.StatusCreated,
			Headers: map[string][]string{"Content-Type": {jsonContentType}}, Body: body}, err
	})
}

// payloadHash is the hash a key is bound to: requestHash of the method, the path with the query
// string when there is one (its parameters sorted), and the body (nil for a route that takes
// none). The body is not parsed again: its document is the one the input check kept while it
// scanned it (inputcheck.Document). A body that is not one JSON document is hashed as it is: the
// route refuses it, which frees the key, and the hash still tells it apart from any other payload.
func payloadHash(c *gin.Context, body []byte) string {
	r := c.Request
	target := r.URL.Path
	if q := r.URL.Query(); len(q) > 0 {
		target += "?" + q.Encode()
	}
	if body != nil {
		if doc, ok := inputcheck.Document(c); ok {
			if canon, err := canonicalDocument(doc); err == nil {
				return canonicalHash(r.Method, target, canon)
			}
		}
	}
	if hash, err := requestHash(r.Method, target, body); err == nil {
		return hash
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\nraw\n", r.Method, target)
	sum.Write(body)
	return hex.EncodeToString(sum.Sum(nil))
}
