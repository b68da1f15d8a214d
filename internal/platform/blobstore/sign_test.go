package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
)

// put sends body with PUT to url with the Content-Type contentType and a Content-Length of length
// (the body is cut or padded by the caller), and returns the status.
func put(t *testing.T, url, contentType string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, data
}

// TestS3SignedURLs sends and reads files straight to and from a real S3 server through the URLs
// the store signs: a PUT is bound to its declared type and length, a GET to its key and lifetime.
func TestS3SignedURLs(t *testing.T) {
	ctx := context.Background()
	srv := s3server.Start(t)
	srv.Setenv(t)
	s, err := blobstore.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.CanSign() {
		t.Fatal("an S3 bucket cannot sign")
	}
	body := bytes.Repeat([]byte("0123456789"), 100)

	url, err := s.SignedPut(ctx, "uploads/a", "image/png", int64(len(body)), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if code := put(t, url, "image/jpeg", body); code != http.StatusForbidden {
		t.Errorf("PUT with another Content-Type: %d, want 403", code)
	}
	if code := put(t, url, "image/png", body[:len(body)-1]); code != http.StatusForbidden {
		t.Errorf("PUT with a shorter body: %d, want 403", code)
	}
	if code := put(t, url, "image/png", append(body, 'x')); code != http.StatusForbidden {
		t.Errorf("PUT with a longer body: %d, want 403", code)
	}
	if _, err := s.Stat(ctx, "uploads/a"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("a refused PUT left a file: %v", err)
	}
	if code := put(t, url, "image/png", body); code != http.StatusOK {
		t.Fatalf("PUT with the declared type and length: %d", code)
	}
	st, err := s.Stat(ctx, "uploads/a")
	if err != nil || st.Size != int64(len(body)) || st.ContentType != "image/png" {
		t.Fatalf("stored %+v %v", st, err)
	}
	head, err := s.ReadPrefix(ctx, "uploads/a", 10, st.ETag)
	if err != nil || string(head) != "0123456789" || st.ETag == "" {
		t.Fatalf("prefix %q %v of the version %q", head, err, st.ETag)
	}

	getURL, err := s.SignedGet(ctx, "uploads/a", time.Hour, blobstore.GetOptions{ContentType: "image/png", CacheControl: "private, max-age=86400"})
	if err != nil {
		t.Fatal(err)
	}
	res, data := get(t, getURL)
	if res.StatusCode != http.StatusOK || !bytes.Equal(data, body) {
		t.Fatalf("GET: %d, %d bytes", res.StatusCode, len(data))
	}
	if got := res.Header.Get("Content-Type"); got != "image/png" {
		t.Errorf("Content-Type %q", got)
	}
	if got := res.Header.Get("Cache-Control"); got != "private, max-age=86400" {
		t.Errorf("Cache-Control %q", got)
	}
	if got := res.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
		t.Errorf("Content-Length %q", got)
	}
	tampered := getURL[:len(getURL)-1] + "0"
	if tampered == getURL {
		tampered = getURL[:len(getURL)-1] + "1"
	}
	if res, _ := get(t, tampered); res.StatusCode != http.StatusForbidden {
		t.Errorf("tampered signature: %d", res.StatusCode)
	}

	short, err := s.SignedGet(ctx, "uploads/a", time.Second, blobstore.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	if res, _ := get(t, short); res.StatusCode != http.StatusForbidden {
		t.Errorf("expired GET: %d, want 403", res.StatusCode)
	}
	if _, err := s.SignedGet(ctx, "k", blobstore.MaxSignedURLTTL+time.Second, blobstore.GetOptions{}); err == nil {
		t.Error("signed beyond seven days")
	}
}

// A read or copy bound to a version of a file (its ETag, from Stat) fails with ErrChanged once the
// file was written again, as a client may send a direct upload twice while its URL is valid:
// what was checked is what is collected, or nothing.
func TestS3ReadsAndCopiesOfAVersion(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	s := openStore(t, srv.URL())
	ctx := context.Background()
	if _, _, err := s.PutReader(ctx, "incoming/a", bytes.NewReader([]byte("first version")), "image/png", 100); err != nil {
		t.Fatal(err)
	}
	first, err := s.Stat(ctx, "incoming/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Copy(ctx, "uploads/a", "incoming/a", first.ETag, "image/png"); err != nil {
		t.Fatalf("copy of the version read: %v", err)
	}
	if _, _, err := s.PutReader(ctx, "incoming/a", bytes.NewReader([]byte("second, other bytes")), "image/png", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadPrefix(ctx, "incoming/a", 10, first.ETag); !errors.Is(err, blobstore.ErrChanged) {
		t.Errorf("read of a version written over: %v, want ErrChanged", err)
	}
	if err := s.Copy(ctx, "uploads/b", "incoming/a", first.ETag, "image/png"); !errors.Is(err, blobstore.ErrChanged) {
		t.Errorf("copy of a version written over: %v, want ErrChanged", err)
	}
	if _, err := s.Stat(ctx, "uploads/b"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("a refused copy left a file: %v", err)
	}
	if head, err := s.ReadPrefix(ctx, "incoming/a", 6, ""); err != nil || string(head) != "second" {
		t.Errorf("read of whatever version: %q, %v", head, err)
	}
}

// A presigned PUT signs the type and length alone, so a client may send other headers with it
// (Content-Disposition, Content-Encoding), which the store keeps with the object. The copy that
// collects a direct upload keeps none of them: the file is served with the type that was checked
// and the headers the service sets, never ones its uploader chose.
func TestS3CopyKeepsNoHeaderTheUploaderChose(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	s := openStore(t, srv.URL())
	ctx := context.Background()
	body := bytes.Repeat([]byte("png!"), 50)
	url, err := s.SignedPut(ctx, "incoming/a", "image/png", int64(len(body)), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Content-Disposition", `attachment; filename="invoice.html"`)
	req.Header.Set("Content-Language", "xx")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT with headers of the uploader's: %d", res.StatusCode)
	}
	st, err := s.Stat(ctx, "incoming/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Copy(ctx, "uploads/a", "incoming/a", st.ETag, "image/png"); err != nil {
		t.Fatal(err)
	}
	for key, wantKept := range map[string]bool{"incoming/a": true, "uploads/a": false} {
		getURL, err := s.SignedGet(ctx, key, time.Hour, blobstore.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, data := get(t, getURL)
		kept := res.Header.Get("Content-Disposition") != "" || res.Header.Get("Content-Language") != ""
		if key == "incoming/a" && !kept {
			t.Skip("this S3 server keeps no header sent beside a presigned PUT's signed ones: nothing to leave out")
		}
		if kept != wantKept || !bytes.Equal(data, body) || res.Header.Get("Content-Type") != "image/png" {
			t.Errorf("%s: Content-Disposition %q, Content-Language %q, Content-Type %q, %d bytes",
				key, res.Header.Get("Content-Disposition"), res.Header.Get("Content-Language"), res.Header.Get("Content-Type"), len(data))
		}
	}
}

// TestFileStoreCannotSign: a directory has no URLs of its own; its files pass through the API.
func TestFileStoreCannotSign(t *testing.T) {
	ctx := context.Background()
	s, err := blobstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.CanSign() {
		t.Fatal("a directory signs")
	}
	if _, err := s.SignedPut(ctx, "k", "image/png", 1, time.Hour); !errors.Is(err, blobstore.ErrCannotSign) {
		t.Fatalf("SignedPut: %v", err)
	}
	if _, err := s.SignedGet(ctx, "k", time.Hour, blobstore.GetOptions{}); !errors.Is(err, blobstore.ErrCannotSign) {
		t.Fatalf("SignedGet: %v", err)
	}
	if err := s.Put(ctx, "k", []byte("abc"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(ctx, "k")
	if err != nil || st.Size != 3 {
		t.Fatalf("Stat %+v %v", st, err)
	}
	if _, err := s.Stat(ctx, "missing"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("Stat of a missing key: %v", err)
	}
}
