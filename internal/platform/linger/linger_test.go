package linger_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/linger"
)

// refusing answers 413 to every request without reading its body, as a route does when the body's
// Content-Length is over its limit.
var refusing = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "too large", http.StatusRequestEntityTooLarge)
})

// serve runs refusing on a new loopback listener, lingering or not, and returns its address.
func serve(t *testing.T, lingering bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener = ln
	if lingering {
		l = linger.New(ln)
	}
	srv := &http.Server{Handler: refusing, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// sendWholeBodyThenRead writes a request with a body of size bytes in full, and only then reads
// the answer's status line, as many HTTP clients do.
func sendWholeBodyThenRead(addr string, size int) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(c, "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size); err != nil {
		return "", err
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := c.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
			return "", fmt.Errorf("write after %d bytes: %w", sent, err)
		}
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && err != io.EOF {
		return line, fmt.Errorf("read: %w", err)
	}
	return line, nil
}

// TestAClientThatSendsItsWholeBodyReadsTheRefusal: without lingering, the client writing an 8 MiB
// body the server refused at once gets a reset (on its writes or its read); with it, the client
// reads its 413.
func TestAClientThatSendsItsWholeBodyReadsTheRefusal(t *testing.T) {
	const size = 8 << 20
	for range 3 {
		line, err := sendWholeBodyThenRead(serve(t, true), size)
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 413") {
			t.Fatalf("lingering: %q, %v; want the 413", line, err)
		}
	}
	// The same exchange without lingering fails; if the kernel's buffers ever swallow the whole
	// body, the comparison says nothing, so it only needs to fail once in a few tries.
	failed := false
	for range 3 {
		if line, err := sendWholeBodyThenRead(serve(t, false), size); err != nil || !strings.HasPrefix(line, "HTTP/1.1 413") {
			failed = true
			break
		}
	}
	if !failed {
		t.Log("without lingering the client read its answer too (large socket buffers): the comparison shows nothing here")
	}
}

// A client that keeps sending past the bounds is cut off: a lingering close never waits for it
// longer than Time.
func TestLingeringIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := linger.New(ln)
	l.Time, l.Idle = 300*time.Millisecond, 200*time.Millisecond
	srv := &http.Server{Handler: refusing, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 1<<40); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	chunk := make([]byte, 64<<10)
	var werr error
	for time.Since(start) < 10*time.Second && werr == nil {
		_, werr = c.Write(chunk)
	}
	if werr == nil {
		t.Fatal("the server still read a never-ending body after 10 s")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the connection was cut after %v; its bound is 300 ms", took)
	}
}
