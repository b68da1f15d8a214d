package files_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
)

// countingWriter counts the body bytes the S3 server sends through the proxy.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

// TestHeadOfADownloadDoesNotReadTheWholeFile: a HEAD of a signed download is served as its GET
// (api.Router, reqctx.HeadAsGet), but answers its headers from the file's size (Blobs.Size)
// without reading the file out of the store: a monitor's HEAD of an 8 MiB video pulls none of it
// (time, egress). A ranged HEAD says its range the same way.
func TestHeadOfADownloadDoesNotReadTheWholeFile(t *testing.T) {
	s3 := s3server.Start(t)
	s3.Setenv(t)
	target, err := url.Parse("http://" + s3.Addr)
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(countingWriter{w, &served}, r)
	}))
	t.Cleanup(proxy.Close)
	blobURL := strings.Replace(s3.URL(), url.QueryEscape("http://"+s3.Addr), url.QueryEscape(proxy.URL), 1)
	f := newFixture(t, blobURL)
	data := make([]byte, 8<<20)
	id := f.store(data, "video/mp4")

	// Served as api.Router serves a HEAD of a GET route.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = reqctx.HeadAsGet(r)
		}
		f.router.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(f.signer.URL(http.MethodGet, files.Path(id), time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	served.Store(0)
	res, err := srv.Client().Head(srv.URL + u.RequestURI())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.ContentLength != int64(len(data)) {
		t.Fatalf("HEAD = %d, Content-Length %d; want 200 and %d", res.StatusCode, res.ContentLength, len(data))
	}
	if n := served.Load(); n >= int64(len(data)) {
		t.Errorf("a HEAD of a %d-byte file read %d bytes from the blob store; want none of its body", len(data), n)
	}
	served.Store(0)
	req, err := http.NewRequest(http.MethodHead, srv.URL+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=1000-")
	res, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || res.ContentLength != int64(len(data)-1000) ||
		res.Header.Get("Content-Range") != "bytes 1000-8388607/8388608" {
		t.Fatalf("ranged HEAD = %d, Content-Length %d, Content-Range %q", res.StatusCode, res.ContentLength, res.Header.Get("Content-Range"))
	}
	if n := served.Load(); n >= int64(len(data)-1000) {
		t.Errorf("a ranged HEAD read %d bytes from the blob store; want none of its body", n)
	}
}
