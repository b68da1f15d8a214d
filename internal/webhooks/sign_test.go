package webhooks_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/shotflow/shotflow/internal/webhooks"
)

// The test vector of the Standard Webhooks specification and its reference libraries.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specPayload   = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheSpecificationVector(t *testing.T) {
	got := webhooks.Sign([]string{specSecret}, specID, time.Unix(specTimestamp, 0), []byte(specPayload))
	if got != specSignature {
		t.Fatalf("Sign = %q, want %q", got, specSignature)
	}
	// The secret without its prefix is the same key.
	if got := webhooks.Sign([]string{strings.TrimPrefix(specSecret, "whsec_")}, specID, time.Unix(specTimestamp, 0), []byte(specPayload)); got != specSignature {
		t.Fatalf("Sign without prefix = %q", got)
	}
}

// headers builds the request headers Client.Send sets.
func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhooks.HeaderSignature, sig)
	return h
}

func TestSignaturesVerifyWithTheOfficialLibrary(t *testing.T) {
	current, previous, stranger := webhooks.NewSecret(), webhooks.NewSecret(), webhooks.NewSecret()
	body := []byte(`{"id":"d1","type":"job.completed","data":{"id":"j1"}}`)
	now := time.Now()

	// During the 48 h after a rotation: one signature per valid secret, space-separated.
	sig := webhooks.Sign([]string{current, previous}, "d1", now, body)
	parts := strings.Split(sig, " ")
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("two secrets signed as %q", sig)
	}
	for name, secret := range map[string]string{"current": current, "previous": previous} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("official library rejects the %s secret %q: %v", name, secret, err)
		}
		if err := wh.Verify(body, headers("d1", now, sig)); err != nil {
			t.Errorf("official library cannot verify with the %s secret: %v", name, err)
		}
		if err := webhooks.Verify(secret, headers("d1", now, sig), body, now, webhooks.DefaultTolerance); err != nil {
			t.Errorf("Verify with the %s secret: %v", name, err)
		}
	}
	wh, _ := standardwebhooks.NewWebhook(stranger)
	if err := wh.Verify(body, headers("d1", now, sig)); err == nil {
		t.Error("a secret that did not sign verifies")
	}

	// After 48 h only the current secret signs: the previous one no longer verifies.
	sig = webhooks.Sign([]string{current}, "d1", now, body)
	if strings.Contains(sig, " ") {
		t.Fatalf("one secret signed as %q", sig)
	}
	whPrev, _ := standardwebhooks.NewWebhook(previous)
	if err := whPrev.Verify(body, headers("d1", now, sig)); err == nil {
		t.Error("the retired secret still verifies")
	}
	whCur, _ := standardwebhooks.NewWebhook(current)
	if err := whCur.Verify(body, headers("d1", now, sig)); err != nil {
		t.Errorf("current secret: %v", err)
	}

	// The signature covers the ID, the timestamp and the body.
	for name, h := range map[string]http.Header{
		"other id":        headers("d2", now, sig),
		"other timestamp": headers("d1", now.Add(time.Second), sig),
	} {
		if err := whCur.Verify(body, h); err == nil {
			t.Errorf("%s verifies", name)
		}
	}
	if err := whCur.Verify(append([]byte(" "), body...), headers("d1", now, sig)); err == nil {
		t.Error("a changed body verifies")
	}
}

func TestNewSecretIsAStandardSecret(t *testing.T) {
	a, b := webhooks.NewSecret(), webhooks.NewSecret()
	if a == b {
		t.Fatal("two secrets are equal")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if !strings.HasPrefix(a, "whsec_") || err != nil || len(key) != 24 {
		t.Fatalf("secret %q: prefix, base64 of 24 bytes? %v (%d bytes)", a, err, len(key))
	}
}

func TestSecretsThatAreNotStandardBase64(t *testing.T) {
	body := []byte(`{}`)
	now := time.Now()
	// URL-safe base64 is decoded like the standard alphabet.
	raw := []byte{0xfb, 0xff, 0xfe, 0x01, 0x02, 0x03}
	urlSafe := "whsec_" + base64.RawURLEncoding.EncodeToString(raw)
	wh, _ := standardwebhooks.NewWebhookRaw(raw)
	if err := wh.Verify(body, headers("d", now, webhooks.Sign([]string{urlSafe}, "d", now, body))); err != nil {
		t.Errorf("URL-safe secret: %v", err)
	}
	// A secret that is not base64 signs with its own bytes.
	wh, _ = standardwebhooks.NewWebhookRaw([]byte("not base64!"))
	if err := wh.Verify(body, headers("d", now, webhooks.Sign([]string{"not base64!"}, "d", now, body))); err != nil {
		t.Errorf("raw secret: %v", err)
	}
}

func TestVerify(t *testing.T) {
	secret := webhooks.NewSecret()
	body := []byte(`{"x":1}`)
	now := time.Now()
	sig := webhooks.Sign([]string{secret}, "d1", now, body)
	if err := webhooks.Verify(secret, headers("d1", now, sig), body, now, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := webhooks.Verify(secret, headers("d1", now, sig), body, now.Add(2*time.Minute), time.Minute); !errors.Is(err, webhooks.ErrBadTimestamp) {
		t.Errorf("stale timestamp = %v", err)
	}
	if err := webhooks.Verify(secret, headers("d1", now, sig), []byte(`{"x":2}`), now, time.Minute); !errors.Is(err, webhooks.ErrNoValidSignature) {
		t.Errorf("changed body = %v", err)
	}
	if err := webhooks.Verify(webhooks.NewSecret(), headers("d1", now, sig), body, now, time.Minute); !errors.Is(err, webhooks.ErrNoValidSignature) {
		t.Errorf("other secret = %v", err)
	}
	if err := webhooks.Verify(secret, headers("d1", now, "v2,"+strings.TrimPrefix(sig, "v1,")), body, now, time.Minute); !errors.Is(err, webhooks.ErrNoValidSignature) {
		t.Errorf("unknown version = %v", err)
	}
	if err := webhooks.Verify(secret, http.Header{}, body, now, time.Minute); !errors.Is(err, webhooks.ErrMissingHeaders) {
		t.Errorf("no headers = %v", err)
	}
}
