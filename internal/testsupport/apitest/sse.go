package apitest

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SSEEvent is one block of a text/event-stream: an event (ID, Name, Data), a comment line or a
// retry field.
type SSEEvent struct {
	ID, Name, Data string
	Comment        string
	Retry          string
}

// SSEStream is an open event stream: Events receives its blocks as they arrive and is closed when
// the server closes the stream.
type SSEStream struct {
	Response *http.Response
	Events   <-chan SSEEvent
	cancel   context.CancelFunc
}

// Close ends the stream from the client's side.
func (s *SSEStream) Close() { s.cancel() }

// Next returns the next block within timeout; ok is false when the stream ended.
func (s *SSEStream) Next(t testing.TB, timeout time.Duration) (SSEEvent, bool) {
	t.Helper()
	select {
	case e, ok := <-s.Events:
		return e, ok
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
		return SSEEvent{}, false
	}
}

// OpenSSE sends GET url with headers (name, value pairs) and, on a 200 text/event-stream answer,
// reads its blocks in the background. Any other answer is returned with Events nil and the body
// left to the caller.
func OpenSSE(t testing.TB, url string, headers ...string) *SSEStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &SSEStream{Response: resp, cancel: cancel}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return s
	}
	events := make(chan SSEEvent, 1024)
	s.Events = events
	go func() {
		defer close(events)
		defer resp.Body.Close()
		readSSE(resp.Body, events)
	}()
	return s
}

// readSSE parses blocks as the WHATWG event-stream format defines them (fields of one block end
// at a blank line).
func readSSE(r io.Reader, out chan<- SSEEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var e SSEEvent
	var has bool
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if has {
				out <- e
			}
			e, has = SSEEvent{}, false
			continue
		}
		has = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			e.Comment = strings.TrimPrefix(c, " ")
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.ID = value
		case "event":
			e.Name = value
		case "data":
			if e.Data != "" {
				e.Data += "\n"
			}
			e.Data += value
		case "retry":
			e.Retry = value
		}
	}
}
