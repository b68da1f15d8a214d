package webhooks_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/shotflow/shotflow/internal/webhooks"
)

func TestForbiddenAddresses(t *testing.T) {
	forbidden := []string{
		"127.0.0.1", "127.8.9.10", "10.0.0.1", "10.255.1.2", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "169.254.0.1", "0.0.0.0", "0.1.2.3", "100.64.0.1", "224.0.0.1", "239.1.2.3", "255.255.255.255",
		"::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		// IPv6 addresses that reach an internal IPv4 address through a translator or a tunnel:
		// NAT64 (10.0.0.1, the metadata endpoint, loopback), 6to4 (10.0.0.1), IPv4-compatible
		// (192.168.1.1); local-use NAT64 and Teredo whatever they carry; discard-only.
		"64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::127.0.0.1", "2002:a00:1::1", "::192.168.1.1",
		"64:ff9b:1::a00:1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "100::1",
	}
	public := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "192.169.0.1", "2606:4700:4700::1111", "2001:4860:4860::8888",
		// A public IPv4 address through NAT64 (what DNS64 answers on an IPv6-only network) or 6to4.
		"64:ff9b::808:808", "2002:5db8:d822::1"}
	for _, s := range forbidden {
		if !webhooks.Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("%s is allowed, want forbidden", s)
		}
	}
	for _, s := range public {
		if webhooks.Forbidden(netip.MustParseAddr(s)) {
			t.Errorf("%s is forbidden, want allowed", s)
		}
	}
}

// receiver is an httptest server that records requests and answers with handle.
type receiver struct {
	*httptest.Server
	hits    atomic.Int32
	header  atomic.Pointer[http.Header]
	body    atomic.Pointer[[]byte]
	handler func(w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{handler: handle}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := r.Header.Clone()
		rc.header.Store(&h)
		rc.body.Store(&b)
		rc.hits.Add(1)
		rc.handler(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func TestSendRefusesPrivateAddresses(t *testing.T) {
	rc := newReceiver(t, ok)
	_, port, _ := strings.Cut(rc.Listener.Addr().String(), ":")
	c := webhooks.NewClient(webhooks.ClientOptions{Timeout: 2 * time.Second})
	for _, u := range []string{
		rc.URL, // 127.0.0.1
		"http://localhost:" + port,
		"http://[::1]:" + port,
		"http://10.0.0.1:" + port,
		"http://169.254.169.254/latest/meta-data/",
		"http://0.0.0.0:" + port,
		"http://[::ffff:127.0.0.1]:" + port,
	} {
		start := time.Now()
		out := c.Send(context.Background(), webhooks.Message{URL: u, ID: "d1", Timestamp: time.Now(), Secrets: []string{webhooks.NewSecret()}, Body: []byte(`{}`)})
		var forbidden *webhooks.ForbiddenAddressError
		if !errors.As(out.Err, &forbidden) || out.Delivered() || out.StatusCode != 0 {
			t.Errorf("%s: outcome %+v, want a refused address", u, out)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%s: refusal took %v; it must happen before connecting", u, time.Since(start))
		}
	}
	if n := rc.hits.Load(); n != 0 {
		t.Fatalf("the receiver on loopback got %d requests", n)
	}

	// With private networks allowed (development), the same receiver gets the webhook.
	allowed := webhooks.NewClient(webhooks.ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	for _, u := range []string{rc.URL, "http://localhost:" + port} {
		if out := allowed.Send(context.Background(), webhooks.Message{URL: u, ID: "d1", Timestamp: time.Now(), Body: []byte(`{}`)}); !out.Delivered() {
			t.Errorf("%s with private networks allowed: %+v", u, out)
		}
	}
}

func TestSendSignsWithStandardHeaders(t *testing.T) {
	rc := newReceiver(t, ok)
	c := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true})
	current, previous := webhooks.NewSecret(), webhooks.NewSecret()
	body := []byte(`{"id":"d1","type":"job.completed","data":{"url":"http://x/files/a?expires=1&signature=s"}}`)
	ts := time.Now()
	out := c.Send(context.Background(), webhooks.Message{URL: rc.URL + "/hook", ID: "d1", Timestamp: ts, Secrets: []string{current, previous}, Body: body})
	if !out.Delivered() || out.StatusCode != http.StatusNoContent || out.Latency <= 0 {
		t.Fatalf("outcome = %+v", out)
	}
	h := *rc.header.Load()
	if got := string(*rc.body.Load()); got != string(body) {
		t.Fatalf("body = %s", got)
	}
	want := map[string]string{
		"Content-Type":      "application/json",
		"User-Agent":        "shotflow-webhooks/1",
		"Webhook-Id":        "d1",
		"Webhook-Timestamp": strconv.FormatInt(ts.Unix(), 10),
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h.Get("X-Service-Signature") == "" || h.Get("X-Service-Signature") != h.Get("Webhook-Signature") {
		t.Errorf("X-Service-Signature %q differs from webhook-signature %q", h.Get("X-Service-Signature"), h.Get("Webhook-Signature"))
	}
	if n := len(strings.Fields(h.Get("Webhook-Signature"))); n != 2 {
		t.Errorf("%d signatures, want one per secret", n)
	}
	for _, s := range []string{current, previous} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("official library: %v", err)
		}
	}
}

func TestSendOutcomes(t *testing.T) {
	c := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true, Timeout: 300 * time.Millisecond})
	send := func(url string) webhooks.Outcome {
		return c.Send(context.Background(), webhooks.Message{URL: url, ID: "d1", Timestamp: time.Now(), Secrets: []string{webhooks.NewSecret()}, Body: []byte(`{}`)})
	}

	failing := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	if out := send(failing.URL); out.Delivered() || out.StatusCode != 500 || out.Err != nil {
		t.Errorf("500: %+v", out)
	}

	limited := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	if out := send(limited.URL); out.Delivered() || out.StatusCode != 429 || out.RetryAfter != 2*time.Minute {
		t.Errorf("429 with Retry-After: 120: %+v", out)
	}

	dated := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	if out := send(dated.URL); out.StatusCode != 503 || out.RetryAfter < 80*time.Second || out.RetryAfter > 91*time.Second {
		t.Errorf("503 with an HTTP-date Retry-After: %+v", out)
	}

	redirect := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
	})
	if out := send(redirect.URL); out.Delivered() || out.StatusCode != http.StatusFound {
		t.Errorf("redirect: %+v, want the 302 itself (not followed)", out)
	}

	release := make(chan struct{})
	slow := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		w.WriteHeader(http.StatusOK)
	})
	start := time.Now()
	out := send(slow.URL)
	close(release)
	if out.Delivered() || out.Err == nil || !strings.Contains(out.Err.Error(), "no answer within 300ms") || time.Since(start) > 2*time.Second {
		t.Errorf("slow receiver: %+v after %v", out, time.Since(start))
	}
	if webhooks.DefaultTimeout != 15*time.Second {
		t.Errorf("DefaultTimeout = %v, want 15s", webhooks.DefaultTimeout)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-5":                            0,
		"30":                            30 * time.Second,
		" 7 ":                           7 * time.Second,
		"soon":                          0,
		"999999999999":                  webhooks.MaxRetryAfter,
		"Mon, 01 Jun 2026 12:05:00 GMT": 5 * time.Minute,
		"Mon, 01 Jun 2026 11:00:00 GMT": 0,
		"Wed, 01 Jul 2026 12:00:00 GMT": webhooks.MaxRetryAfter,
	}
	for in, want := range cases {
		if got := webhooks.ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCheckCallbackURL(t *testing.T) {
	refused := []string{
		"ftp://shop.example/hook", "shop.example/hook", "https://", "http:///path", "",
		"http://127.0.0.1:8080/hook", "https://10.1.2.3/hook", "http://192.168.0.10/", "http://169.254.169.254/latest/meta-data/",
		"http://[::1]:9000/", "https://[fd00::1]/", "http://0.0.0.0/", "http://localhost:8080/hook", "http://api.localhost/",
	}
	for _, u := range refused {
		if err := webhooks.CheckCallbackURL(u, false); err == nil {
			t.Errorf("CheckCallbackURL(%q) accepted it", u)
		}
	}
	for _, u := range []string{"https://93.184.216.34/hook", "https://shop.example/hook", "http://[2606:4700:4700::1111]/"} {
		if err := webhooks.CheckCallbackURL(u, false); err != nil {
			t.Errorf("CheckCallbackURL(%q) = %v", u, err)
		}
	}
	// Development: private addresses are allowed, malformed URLs still are not.
	for _, u := range []string{"http://127.0.0.1:8080/hook", "http://localhost:9000/", "http://[::1]:9000/"} {
		if err := webhooks.CheckCallbackURL(u, true); err != nil {
			t.Errorf("CheckCallbackURL(%q, allowPrivate) = %v", u, err)
		}
	}
	if err := webhooks.CheckCallbackURL("ftp://127.0.0.1/", true); err == nil {
		t.Error("ftp accepted with private networks allowed")
	}
}
