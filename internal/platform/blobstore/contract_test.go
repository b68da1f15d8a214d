package blobstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
)

// backend opens one kind of store for the contract: a directory, memory, or a real S3 server.
type backend struct {
	name string
	open func(t *testing.T) *blobstore.Store
}

func backends() []backend {
	return []backend{
		{"file", func(t *testing.T) *blobstore.Store { return openStore(t, "file://"+t.TempDir()) }},
		{"mem", func(t *testing.T) *blobstore.Store { return openStore(t, "mem://") }},
		{"s3", func(t *testing.T) *blobstore.Store {
			// A missing bin/versitygw skips here, and fails under SHOTFLOW_REQUIRE_S3 or CI.
			srv := s3server.Start(t)
			srv.Setenv(t)
			return openStore(t, srv.URL())
		}},
	}
}

func openStore(t *testing.T, rawURL string) *blobstore.Store {
	t.Helper()
	s, err := blobstore.Open(context.Background(), rawURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// randomBytes is n bytes of noise, so a byte out of place cannot go unnoticed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// failingReader yields n bytes of data and then fails, as a client that disconnects mid-upload.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// bigSize is over the 5 MiB part size of S3's multipart uploads, so streams of it take that path.
const bigSize = 6<<20 + 123

// TestStoreContract runs the same checks on every kind of store the service can be configured with.
func TestStoreContract(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			t.Run("ping", func(t *testing.T) {
				if err := s.Ping(ctx); err != nil {
					t.Fatal(err)
				}
			})

			t.Run("put and get", func(t *testing.T) {
				if err := s.Put(ctx, "put/a.png", []byte("png bytes"), "image/png"); err != nil {
					t.Fatal(err)
				}
				data, err := s.Get(ctx, "put/a.png")
				if err != nil || string(data) != "png bytes" {
					t.Fatalf("Get = %q %v", data, err)
				}
				if err := s.Put(ctx, "put/a.png", []byte("replaced"), "image/png"); err != nil {
					t.Fatal(err)
				}
				if data, err := s.Get(ctx, "put/a.png"); err != nil || string(data) != "replaced" {
					t.Fatalf("Get after a second Put = %q %v", data, err)
				}
			})

			t.Run("stream", func(t *testing.T) {
				for _, size := range []int{0, 1, 64 << 10, bigSize} {
					data := randomBytes(size, uint64(size))
					n, sum, err := s.PutReader(ctx, "stream/f", bytes.NewReader(data), "application/octet-stream", int64(size))
					if err != nil || n != int64(size) || sum != sha(data) {
						t.Fatalf("PutReader of %d bytes = %d %s %v, want %s", size, n, sum, err, sha(data))
					}
					r, got, err := s.Open(ctx, "stream/f")
					if err != nil || got != int64(size) {
						t.Fatalf("Open of %d bytes = size %d, %v", size, got, err)
					}
					read, err := io.ReadAll(r)
					r.Close()
					if err != nil || !bytes.Equal(read, data) {
						t.Fatalf("read back %d of %d bytes (equal: %v): %v", len(read), size, bytes.Equal(read, data), err)
					}
					if sz, err := s.Size(ctx, "stream/f"); err != nil || sz != int64(size) {
						t.Fatalf("Size = %d %v, want %d", sz, err, size)
					}
				}
			})

			t.Run("range", func(t *testing.T) {
				data := randomBytes(bigSize, 7)
				if err := s.Put(ctx, "range/f", data, "video/mp4"); err != nil {
					t.Fatal(err)
				}
				size := int64(len(data))
				for _, rg := range []struct{ offset, length int64 }{
					{0, 1}, {0, 100}, {10, 90}, {5 << 20, 1 << 20}, {size - 1, 1}, {size - 10, -1}, {0, -1},
					{size - 10, 100}, // past the end: what there is
				} {
					r, total, err := s.OpenRange(ctx, "range/f", rg.offset, rg.length)
					if err != nil {
						t.Fatalf("OpenRange(%d, %d): %v", rg.offset, rg.length, err)
					}
					got, err := io.ReadAll(r)
					r.Close()
					end := size
					if rg.length >= 0 {
						end = min(size, rg.offset+rg.length)
					}
					if err != nil || total != size || !bytes.Equal(got, data[rg.offset:end]) {
						t.Fatalf("OpenRange(%d, %d) = %d bytes of a file of %d (equal: %v), %v; want %d bytes of %d",
							rg.offset, rg.length, len(got), total, bytes.Equal(got, data[rg.offset:end]), err, end-rg.offset, size)
					}
				}
				for _, bad := range []struct{ offset, length int64 }{{-1, 10}, {0, 0}} {
					if _, _, err := s.OpenRange(ctx, "range/f", bad.offset, bad.length); !errors.Is(err, blobstore.ErrInvalidRange) {
						t.Errorf("OpenRange(%d, %d) = %v, want ErrInvalidRange", bad.offset, bad.length, err)
					}
				}
			})

			t.Run("size limit", func(t *testing.T) {
				exact := randomBytes(1000, 3)
				if n, _, err := s.PutReader(ctx, "limit/exact", bytes.NewReader(exact), "text/plain", 1000); err != nil || n != 1000 {
					t.Fatalf("a stream of exactly the limit: %d %v", n, err)
				}
				for _, tc := range []struct {
					key   string
					size  int
					limit int64
				}{{"limit/small", 1001, 1000}, {"limit/big", bigSize, 5<<20 + 1}} {
					_, _, err := s.PutReader(ctx, tc.key, bytes.NewReader(randomBytes(tc.size, 4)), "text/plain", tc.limit)
					if !errors.Is(err, blobstore.ErrTooLarge) {
						t.Fatalf("a stream of %d bytes over a limit of %d: %v, want ErrTooLarge", tc.size, tc.limit, err)
					}
					if _, err := s.Get(ctx, tc.key); !errors.Is(err, blobstore.ErrNotFound) {
						t.Fatalf("a refused stream of %d bytes left a file behind: %v", tc.size, err)
					}
				}
				broken := errors.New("client went away")
				_, _, err := s.PutReader(ctx, "limit/broken", &failingReader{data: randomBytes(bigSize, 5), err: broken}, "text/plain", 10<<20)
				if !errors.Is(err, broken) {
					t.Fatalf("a stream that failed: %v, want its error", err)
				}
				if _, err := s.Get(ctx, "limit/broken"); !errors.Is(err, blobstore.ErrNotFound) {
					t.Fatalf("a failed stream left a file behind: %v", err)
				}
			})

			t.Run("delete", func(t *testing.T) {
				if err := s.Put(ctx, "del/f", []byte("x"), "text/plain"); err != nil {
					t.Fatal(err)
				}
				if err := s.Delete(ctx, "del/f"); err != nil {
					t.Fatal(err)
				}
				if err := s.Delete(ctx, "del/f"); err != nil {
					t.Fatalf("deleting a missing file: %v", err)
				}
				if _, err := s.Get(ctx, "del/f"); !errors.Is(err, blobstore.ErrNotFound) {
					t.Fatalf("Get after Delete: %v", err)
				}
			})

			t.Run("not found", func(t *testing.T) {
				if _, err := s.Get(ctx, "missing/f"); !errors.Is(err, blobstore.ErrNotFound) {
					t.Errorf("Get: %v", err)
				}
				if _, _, err := s.Open(ctx, "missing/f"); !errors.Is(err, blobstore.ErrNotFound) {
					t.Errorf("Open: %v", err)
				}
				if _, _, err := s.OpenRange(ctx, "missing/f", 0, 10); !errors.Is(err, blobstore.ErrNotFound) {
					t.Errorf("OpenRange: %v", err)
				}
				if _, err := s.Size(ctx, "missing/f"); !errors.Is(err, blobstore.ErrNotFound) {
					t.Errorf("Size: %v", err)
				}
			})
		})
	}
}

// TestS3OutageIsAnOutage kills the S3 server: every call fails with an error the service treats as
// an outage (503 with Retry-After, a workflow that waits), never as a bug or a missing file; after
// the restart every call works again and nothing was lost.
func TestS3OutageIsAnOutage(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	s := openStore(t, srv.URL())
	ctx := context.Background()
	if err := s.Put(ctx, "kept", []byte("kept"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	calls := map[string]func(ctx context.Context) error{
		"Ping": s.Ping,
		"Put":  func(ctx context.Context) error { return s.Put(ctx, "new", []byte("x"), "text/plain") },
		"PutReader": func(ctx context.Context) error {
			_, _, err := s.PutReader(ctx, "new", bytes.NewReader(randomBytes(bigSize, 1)), "text/plain", bigSize)
			return err
		},
		"Get":       func(ctx context.Context) error { _, err := s.Get(ctx, "kept"); return err },
		"Open":      func(ctx context.Context) error { _, _, err := s.Open(ctx, "kept"); return err },
		"OpenRange": func(ctx context.Context) error { _, _, err := s.OpenRange(ctx, "kept", 1, 2); return err },
		"Size":      func(ctx context.Context) error { _, err := s.Size(ctx, "kept"); return err },
		"Delete":    func(ctx context.Context) error { return s.Delete(ctx, "kept") },
	}
	// Each call spends the S3 client's retries (a few seconds) before it gives up: at once, they
	// take the time of one.
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			// A live context: the error must say "unreachable" by itself, not through a deadline.
			err := call(ctx)
			if err == nil || !unavailable.Is(err) || errors.Is(err, blobstore.ErrNotFound) {
				t.Errorf("%s on a killed server = %v (an outage: %v), want an outage", name, err, unavailable.Is(err))
			}
		})
	}
	wg.Wait()
	srv.Restart(t)
	if data, err := s.Get(ctx, "kept"); err != nil || string(data) != "kept" {
		t.Fatalf("after the restart: %q %v", data, err)
	}
}

// TestS3ServerErrorsAreOutages puts the S3 client in front of a server that answers every request
// with an S3 error: a 5xx (InternalError, SlowDown) is an outage, a 403 (AccessDenied: wrong
// credentials) is a misconfiguration, and neither is a missing file.
func TestS3ServerErrorsAreOutages(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct {
		status int
		code   string
		outage bool
	}{
		{http.StatusInternalServerError, "InternalError", true},
		{http.StatusServiceUnavailable, "SlowDown", true},
		{http.StatusForbidden, "AccessDenied", false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tc.status)
				if r.Method != http.MethodHead {
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+tc.code+`</Code><Message>test</Message></Error>`)
				}
			}))
			defer srv.Close()
			q := url.Values{"endpoint": {srv.URL}, "region": {"us-east-1"}, "use_path_style": {"true"}, "disable_https": {"true"}}
			s := openStore(t, "s3://bucket?"+q.Encode())
			ctx := context.Background()
			calls := map[string]func() error{
				"Get":  func() error { _, err := s.Get(ctx, "k"); return err },
				"Put":  func() error { return s.Put(ctx, "k", []byte("x"), "text/plain") },
				"Size": func() error { _, err := s.Size(ctx, "k"); return err },
			}
			var wg sync.WaitGroup // each spends the client's retries of a 5xx: at once, they take the time of one
			for name, call := range calls {
				wg.Go(func() {
					err := call()
					if err == nil || unavailable.Is(err) != tc.outage || errors.Is(err, blobstore.ErrNotFound) {
						t.Errorf("%s answered %d %s: %v (an outage: %v), want an outage: %v", name, tc.status, tc.code, err, unavailable.Is(err), tc.outage)
					}
				})
			}
			wg.Wait()
		})
	}
}
