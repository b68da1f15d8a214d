// Package webhooks holds what shotflow needs to notify plugin installations of terminal jobs:
// Standard Webhooks signing (https://www.standardwebhooks.com), the JSON payload of a job event,
// and an HTTP client that refuses to reach private networks. The delivery itself (attempts, the
// retry schedule, the record of every attempt) lives in activities and workflows.
package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of every webhook request. X-Service-Signature carries the same value as
// webhook-signature (api/openapi.yaml names it; Standard Webhooks libraries read the other).
const (
	HeaderID               = "webhook-id"
	HeaderTimestamp        = "webhook-timestamp"
	HeaderSignature        = "webhook-signature"
	HeaderServiceSignature = "X-Service-Signature"
	UserAgent              = "shotflow-webhooks/1"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a webhook-timestamp may be from the verifier's clock.
const DefaultTolerance = 5 * time.Minute

// NewSecret returns a new signing secret: "whsec_" and the standard base64 of 24 random bytes,
// the form the official Standard Webhooks libraries accept.
func NewSecret() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey returns the HMAC key of a secret: the base64 after "whsec_" decoded (standard
// alphabet, as the official libraries do; the URL-safe alphabet and missing padding are
// tolerated), or the secret's own bytes when it is not base64 at all.
func secretKey(secret string) []byte {
	s := strings.TrimPrefix(secret, SecretPrefix)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil && len(key) > 0 {
			return key
		}
	}
	return []byte(secret)
}

// signature is the base64 HMAC-SHA256 of "id.timestamp.body" under one secret.
func signature(secret, id string, unix int64, body []byte) string {
	m := hmac.New(sha256.New, secretKey(secret))
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(unix, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign returns the webhook-signature header value for a message: "v1,<signature>" for each
// secret, space-separated, in the order given. During the 48 hours after a rotation the caller
// passes the new and the previous secret, so receivers holding either can verify.
func Sign(secrets []string, id string, ts time.Time, body []byte) string {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sigs = append(sigs, "v1,"+signature(s, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " ")
}

// Verification errors.
var (
	ErrMissingHeaders   = errors.New("webhooks: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrBadTimestamp     = errors.New("webhooks: webhook-timestamp is not a unix time within the tolerance")
	ErrNoValidSignature = errors.New("webhooks: no signature matches the secret")
)

// Verify checks a received webhook the way a receiver does: the timestamp must be within
// tolerance of now and one of the v1 signatures must match the secret.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsHeader, sigHeader := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsHeader == "" || sigHeader == "" {
		return ErrMissingHeaders
	}
	unix, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrBadTimestamp, tsHeader)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s off", ErrBadTimestamp, d)
	}
	want := []byte(signature(secret, id, unix, body))
	for _, versioned := range strings.Fields(sigHeader) {
		version, sig, ok := strings.Cut(versioned, ",")
		if ok && version == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrNoValidSignature
}
