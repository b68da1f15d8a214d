package urlsign_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/urlsign"
)

func parse(t *testing.T, raw string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path, u.Query()
}

func TestSignedURLRoundTrip(t *testing.T) {
	s := urlsign.New([]byte("k1"), "https://api.example/")
	exp := time.Unix(2_000_000_000, 0)
	raw := s.URL("GET", "/files/a", exp)
	if !strings.HasPrefix(raw, "https://api.example/files/a?") {
		t.Fatalf("URL = %s", raw)
	}
	path, q := parse(t, raw)
	if err := s.Verify("GET", path, q, exp.Add(-time.Second)); err != nil {
		t.Fatalf("valid URL refused: %v", err)
	}
	if got := urlsign.ExpiresAt(q); !got.Equal(exp) {
		t.Fatalf("ExpiresAt = %v", got)
	}
	if err := s.Verify("GET", path, q, exp); !errors.Is(err, urlsign.ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
}

func TestSignedURLRefusesTampering(t *testing.T) {
	s := urlsign.New([]byte("k1"), "http://x")
	exp := time.Now().Add(time.Hour)
	path, q := parse(t, s.URL("PUT", "/uploads/a", exp))
	now := time.Now()
	cases := map[string]func() error{
		"other method": func() error { return s.Verify("GET", path, q, now) },
		"other path":   func() error { return s.Verify("PUT", "/uploads/b", q, now) },
		"other key":    func() error { return urlsign.New([]byte("k2"), "http://x").Verify("PUT", path, q, now) },
		"later expiry": func() error {
			q2 := url.Values{"expires": {"9999999999"}, "signature": {q.Get("signature")}}
			return s.Verify("PUT", path, q2, now)
		},
		"no signature": func() error { return s.Verify("PUT", path, url.Values{"expires": q["expires"]}, now) },
		"bad expires": func() error {
			return s.Verify("PUT", path, url.Values{"expires": {"x"}, "signature": q["signature"]}, now)
		},
	}
	for name, verify := range cases {
		if err := verify(); !errors.Is(err, urlsign.ErrBadSignature) {
			t.Errorf("%s: err = %v, want ErrBadSignature", name, err)
		}
	}
}
