package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	s, err := blobstore.Open(ctx, "file://rel/blobs") // relative to the working directory
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/b.png", []byte("png"), "image/png"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rel", "blobs", "a", "b.png")); err != nil {
		t.Fatalf("file not under the relative directory: %v", err)
	}
	r, size, err := s.Open(ctx, "a/b.png")
	if err != nil || size != 3 {
		t.Fatalf("Open: %d %v", size, err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	if string(data) != "png" {
		t.Fatalf("read %q", data)
	}

	n, sum, err := s.PutReader(ctx, "c", bytes.NewReader([]byte("hello")), "text/plain", 5)
	if err != nil || n != 5 || sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("PutReader = %d %s %v", n, sum, err)
	}
	if _, _, err := s.PutReader(ctx, "d", bytes.NewReader([]byte("too long")), "text/plain", 5); !errors.Is(err, blobstore.ErrTooLarge) {
		t.Fatalf("oversized stream: %v", err)
	}
	if _, err := s.Get(ctx, "d"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("an oversized stream left a file behind: %v", err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("deleting a missing file: %v", err)
	}
	if _, _, err := s.Open(ctx, "c"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("Open after delete: %v", err)
	}
}

func TestOpenRefusesUnknownSchemes(t *testing.T) {
	if _, err := blobstore.Open(context.Background(), "ftp://x/y"); err == nil {
		t.Fatal("ftp:// accepted")
	}
}
