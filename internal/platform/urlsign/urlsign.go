// Package urlsign makes and checks the signed, expiring URLs through which clients upload and
// download files without an API key.
package urlsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors returned by Verify.
var (
	ErrExpired      = errors.New("signed URL expired")
	ErrBadSignature = errors.New("signed URL signature is invalid")
)

// Signer signs method+path+expiry with an HMAC key.
type Signer struct {
	key  []byte
	base string
}

// New returns a Signer whose URLs start with baseURL.
func New(key []byte, baseURL string) *Signer {
	return &Signer{key: key, base: strings.TrimRight(baseURL, "/")}
}

// URL returns baseURL+path with expires and signature query parameters.
func (s *Signer) URL(method, path string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	q := url.Values{"expires": {exp}, "signature": {s.sign(method, path, exp)}}
	return s.base + path + "?" + q.Encode()
}

// Verify checks the expires and signature parameters of a request for method and path.
func (s *Signer) Verify(method, path string, q url.Values, now time.Time) error {
	exp := q.Get("expires")
	sig := q.Get("signature")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || sig == "" {
		return ErrBadSignature
	}
	if !hmac.Equal([]byte(sig), []byte(s.sign(method, path, exp))) {
		return ErrBadSignature
	}
	if !now.Before(time.Unix(unix, 0)) {
		return ErrExpired
	}
	return nil
}

// ExpiresAt returns the expiry encoded in a signed URL's query.
func ExpiresAt(q url.Values) time.Time {
	unix, _ := strconv.ParseInt(q.Get("expires"), 10, 64)
	return time.Unix(unix, 0).UTC()
}

func (s *Signer) sign(method, path, exp string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(strings.ToUpper(method) + "\n" + path + "\n" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
