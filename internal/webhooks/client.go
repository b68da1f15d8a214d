package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout is how long a receiver has to answer: a 2xx within it is a delivery.
const DefaultTimeout = 15 * time.Second

// MaxRetryAfter caps the Retry-After a receiver can ask for.
const MaxRetryAfter = 24 * time.Hour

// ClientOptions tune NewClient.
type ClientOptions struct {
	// Timeout bounds a whole request (connect, TLS, headers and body); 0 means DefaultTimeout.
	Timeout time.Duration
	// AllowPrivate lets requests reach loopback, private, link-local and other internal
	// addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS, for development).
	AllowPrivate bool
}

// Client sends signed webhooks. Unless AllowPrivate is set, its dialer refuses internal addresses
// at connect time, after DNS resolution, so neither a callback URL naming such an address nor a
// host name that later resolves to one (DNS rebinding) can reach the internal network. It uses no
// proxy and follows no redirect.
type Client struct {
	http    *http.Client
	timeout time.Duration
}

// NewClient returns a Client.
func NewClient(opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = refuseForbidden
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would connect on our behalf, past the address check
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Client{
		timeout: opts.Timeout,
		http: &http.Client{
			Timeout:   opts.Timeout,
			Transport: transport,
			// A redirect is an answer other than 2xx: the delivery failed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Message is one webhook request.
type Message struct {
	URL       string
	ID        string    // webhook-id: the delivery ID, the same for every attempt and replay
	Timestamp time.Time // webhook-timestamp: when this attempt is sent
	Secrets   []string  // every secret currently valid, newest first
	Body      []byte
}

// Outcome is the result of one attempt.
type Outcome struct {
	StatusCode int           // 0 when no HTTP answer arrived
	RetryAfter time.Duration // the receiver's Retry-After, capped at MaxRetryAfter
	Latency    time.Duration
	Err        error // no answer: refused address, DNS, connection, TLS or timeout
}

// Delivered reports whether the receiver acknowledged with a 2xx in time.
func (o Outcome) Delivered() bool {
	return o.Err == nil && o.StatusCode >= 200 && o.StatusCode < 300
}

// Send POSTs the message once with its Standard Webhooks headers.
func (c *Client) Send(ctx context.Context, m Message) Outcome {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return Outcome{Err: fmt.Errorf("invalid callback URL: %w", err)}
	}
	sig := Sign(m.Secrets, m.ID, m.Timestamp, m.Body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, m.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(m.Timestamp.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderServiceSignature, sig)
	resp, err := c.http.Do(req)
	if err != nil {
		return Outcome{Latency: time.Since(start), Err: c.describe(err)}
	}
	// Drain a little of the body so the connection can be reused; its content does not matter.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return Outcome{
		StatusCode: resp.StatusCode,
		RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
		Latency:    time.Since(start),
	}
}

// describe turns a transport error into the short text recorded with the attempt.
func (c *Client) describe(err error) error {
	var forbidden *ForbiddenAddressError
	if errors.As(err, &forbidden) {
		return forbidden
	}
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return fmt.Errorf("no answer within %s", c.timeout)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date. Missing, malformed
// or past values are 0; values beyond MaxRetryAfter are capped.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// ForbiddenAddressError is a connection refused because its address is internal.
type ForbiddenAddressError struct {
	Addr netip.Addr
}

func (e *ForbiddenAddressError) Error() string {
	return fmt.Sprintf("callback address %s is loopback, private, link-local or otherwise internal and is not allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS)", e.Addr)
}

// refuseForbidden is the dialer's Control hook: it runs for every address the dialer is about to
// connect to, after DNS resolution.
func refuseForbidden(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("webhooks: cannot parse dial address %q: %w", address, err)
	}
	if Forbidden(ip) {
		return &ForbiddenAddressError{Addr: ip.Unmap()}
	}
	return nil
}

// extraForbidden are ranges beyond what netip classifies that must not be reachable either.
var extraForbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT shared space
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, including broadcast
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215): where it puts the IPv4 address varies
	netip.MustParsePrefix("2001::/32"),      // Teredo: the IPv4 address it carries is obfuscated
	netip.MustParsePrefix("100::/64"),       // discard-only
}

// Prefixes of IPv6 addresses that carry an IPv4 address, which they reach through a translator or
// a tunnel: judged as that IPv4 address (embeddedIPv4).
var (
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 (RFC 6052): the last 32 bits
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")    // 6to4 (RFC 3056): bits 16 to 47
	ipv4CompatPrefix = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated): the last 32 bits
)

// embeddedIPv4 is the IPv4 address an IPv6 address of nat64Prefix, sixToFourPrefix or
// ipv4CompatPrefix carries, and whether it carries one.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip), ipv4CompatPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFourPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// Forbidden reports whether ip is an address webhooks must not reach unless private networks are
// allowed: loopback, private (RFC 1918, fc00::/7), link-local (169.254.0.0/16 with the cloud
// metadata endpoint, fe80::/10), unspecified, multicast, and the reserved ranges in extraForbidden.
// IPv6 addresses that carry an IPv4 address (IPv4-mapped, NAT64, 6to4, IPv4-compatible) are
// judged as the IPv4 address they carry, so that a translator or a tunnel cannot reach the
// internal network either; local-use NAT64 and Teredo addresses are refused.
func Forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	if v4, ok := embeddedIPv4(ip); ok && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback() {
		ip = v4
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range extraForbidden {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckCallbackURL validates a callback URL when an operator sets it: an absolute http or https
// URL with a host, which, unless allowPrivate, is neither an internal address nor a name that
// resolves to one. A name that does not resolve yet is accepted: the client checks every
// address again when it connects.
func CheckCallbackURL(rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("must be an absolute http(s) URL with a host")
	}
	if allowPrivate {
		return nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if Forbidden(ip) {
			return &ForbiddenAddressError{Addr: ip.Unmap()}
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%s is a loopback name and is not allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS)", host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, ip := range addrs {
		if Forbidden(ip) {
			return fmt.Errorf("%s resolves to %s: %w", host, ip.Unmap(), &ForbiddenAddressError{Addr: ip.Unmap()})
		}
	}
	return nil
}

// LoggableURL is an endpoint URL as a log line may carry it: with the password of its userinfo
// masked (receivers often take basic auth in the URL), or a placeholder when it does not parse.
func LoggableURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a URL)"
	}
	return u.Redacted()
}
