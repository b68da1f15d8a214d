package providers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// MaxDownloadBytes caps a provider output fetched over HTTP: 200 MiB.
const MaxDownloadBytes = 200 << 20

// Heartbeat records an activity heartbeat when ctx belongs to a Temporal activity and does nothing
// otherwise, so providers can heartbeat while they poll without caring who calls them. Its first
// detail is the time it is recorded, then details: the generate activity's heartbeats all begin so
// (activities/contract.Generate), which is how its workflow tells Temporal's outage from the
// attempt's failure.
func Heartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, append([]any{time.Now().UTC()}, details...)...)
	}
}

// RetryAfter reads a Retry-After header (delay-seconds or an HTTP date, RFC 9110 §10.2.3) and the
// retry-after-ms header some providers send; it returns 0 when there is none or it cannot be read.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// TransportError classifies a failure to talk to a provider at all (the request never got an HTTP
// answer): timeouts, resets, refused connections and DNS failures are TRANSIENT_INFRA; a context
// cancelled by the caller is TRANSIENT_INFRA too (the attempt was abandoned, not refused).
func TransportError(provider string, err error) *Error {
	msg := fmt.Sprintf("%s: request failed: %v", provider, err)
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &netErr) && netErr.Timeout(),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Category: errorcat.TransientInfra, Message: msg}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var urlErr *url.Error
	if errors.As(err, &dnsErr) || errors.As(err, &opErr) || errors.As(err, &urlErr) {
		return &Error{Category: errorcat.TransientInfra, Message: msg}
	}
	return &Error{Category: errorcat.InternalBug, Message: msg}
}

// Download fetches a provider's output file, without credentials. A URL that answers 404/410 or
// cannot be fetched after the provider reported success is TRANSIENT_INFRA (the attempt can be
// repeated); a file larger than MaxDownloadBytes or a malformed data URI is INTERNAL_BUG. Every
// error message starts with who: the provider name, or the provider and the request it served.
func Download(ctx context.Context, client *http.Client, who, rawURL string) ([]byte, string, error) {
	if strings.HasPrefix(rawURL, "data:") {
		data, ct, err := DecodeDataURI(rawURL)
		if err != nil {
			e := *Classify(err)
			e.Message = who + ": " + e.Message
			return nil, "", &e
		}
		return data, ct, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", Errorf(errorcat.InternalBug, "%s: output URL %q: %v", who, rawURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", TransportError(who, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, "", Errorf(errorcat.TransientInfra, "%s: downloading output: HTTP %d", who, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxDownloadBytes+1))
	if err != nil {
		return nil, "", TransportError(who, err)
	}
	if len(data) > MaxDownloadBytes {
		return nil, "", Errorf(errorcat.InternalBug, "%s: output is larger than %d bytes", who, MaxDownloadBytes)
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" || ct == "application/octet-stream" {
		ct = http.DetectContentType(data)
	}
	return data, ct, nil
}

// DataURI encodes an input as a base64 data URI, which providers that take input URLs accept in
// place of a public URL (so the service never has to expose its files to them).
func DataURI(in Input) string {
	ct := in.ContentType
	if ct == "" {
		ct = http.DetectContentType(in.Data)
	}
	return "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(in.Data)
}

// DecodeDataURI decodes a base64 data URI into its bytes and content type.
func DecodeDataURI(uri string) ([]byte, string, error) {
	head, payload, ok := strings.Cut(strings.TrimPrefix(uri, "data:"), ",")
	if !ok || !strings.HasSuffix(head, ";base64") {
		return nil, "", Errorf(errorcat.InternalBug, "output data URI is not base64")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", Errorf(errorcat.InternalBug, "output data URI: %v", err)
	}
	return data, strings.TrimSuffix(head, ";base64"), nil
}

// ExtFor returns the file extension of an output content type.
func ExtFor(contentType string) string {
	ct, _, _ := strings.Cut(contentType, ";")
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "image/png":
		return ".png"
	case "image/jpeg", "image/jpg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "video/mp4":
		return ".mp4"
	case "video/webm":
		return ".webm"
	case "video/quicktime":
		return ".mov"
	case "video/x-msvideo":
		return ".avi"
	}
	return ".bin"
}
