package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// Idempotency-Key on POST /jobs (optional) and POST /orders/{id}/clone (required).
//
//   - Keys are scoped per installation: two installations may use the same key independently.
//   - A key is bound to the SHA-256 of its canonical request: method, path and the JSON body
//     re-encoded with sorted keys and no insignificant whitespace (requestHash), so formatting and
//     key order do not matter but any value does.
//   - The first request claims the key by inserting a row (models.ClaimIdempotencyKey); the unique
//     index on (installation_id, idempotency_key) decides which of concurrent requests wins. The
//     winner records its answer in the transaction that creates the order, so the key names the
//     order exactly when the order exists.
//   - The same key with the same payload within 24 hours of the answer replays that answer: 200
//     with the same session response, byte for byte, and the header Idempotent-Replayed: true.
//   - The same key with a different payload answers 409 idempotency_conflict.
//   - A request that arrives while the first one with its key and payload is still running waits
//     for it (up to idempotencyWait, 10 s) and then replays its answer; should the first still run
//     after that, it answers 409 idempotency_conflict saying so, with Retry-After: 1. It never
//     creates a second order.
//   - Only successes are remembered: a request that fails (400, 402, 404, 422, 500) deletes its
//     claim, so a corrected retry may use the same key at once.
//   - A claim whose request died before committing (the process crashed) is taken over by the next
//     request with that key once it has been idle for idempotencyLease (1 min).
//   - Records expire 24 hours after the answer: an expired key is used afresh, and each keyed
//     request deletes its installation's expired records.
//   - POST /jobs/batch ignores the header: each of its sessions is independent.

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
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%s\n", method, path)
	sum.Write(canon)
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// canonicalJSON re-encodes a JSON document with object keys sorted, no insignificant whitespace and
// numbers in their shortest form (2, 2.0 and 2e0 are the same). An empty body counts as {}.
func canonicalJSON(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	if !json.Valid(body) {
		return nil, errors.New("canonical JSON: the body is not one JSON document")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
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

// idempotent runs create at most once for the installation's key: the engine claims the key, or
// replays the answer recorded under it, or waits for the request that holds it (see the top of this
// file); create gets the record to commit its session with, which stores the session response.
func (h *Handler) idempotent(c *gin.Context, key, hash string, create func(record recorder) sessionOutcome) {
	inst := caller(c).Installation
	timing := engine.KeyTiming{Wait: idempotencyWait, Poll: idempotencyPoll, Lease: idempotencyLease}
	var out sessionOutcome
	res, err := h.Engine.RunOnce(c.Request.Context(), inst.ID, key, hash, timing, http.StatusCreated, encodeSession,
		func(record engine.SessionRecord) (committed, claimLost bool) {
			out = create(record)
			return out.session != nil, out.claimLost
		})
	if err != nil {
		h.internal(c, err)
		return
	}
	switch res.Outcome {
	case engine.KeyRan:
		h.writeSession(c, out)
	case engine.KeyReplayed:
		c.Header("Idempotent-Replayed", "true")
		c.Data(http.StatusOK, jsonContentType, res.Body)
	case engine.KeyConflict:
		h.Fail(c, http.StatusConflict, CodeIdempotencyConflict, fmt.Sprintf(
			"This %s was already used with a different request; use a new key for a different request.", HeaderIdempotencyKey))
	case engine.KeyBusy:
		c.Header("Retry-After", "1")
		h.Fail(c, http.StatusConflict, CodeIdempotencyConflict, fmt.Sprintf(
			"The first request with this %s is still being processed; retry shortly to get its answer.", HeaderIdempotencyKey))
	}
}

// recorder is what a keyed session commits with: it records the session's answer under the key in
// the order's transaction. nil for a session without a key.
type recorder = engine.SessionRecord

// encodeSession is the answer recorded under a key: the session response, as writeSession sends it.
func encodeSession(order *models.Order, jobs []models.Job) ([]byte, error) {
	return encodeJSON(sessionResponse(order, jobs))
}
