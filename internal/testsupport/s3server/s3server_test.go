package s3server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
)

// TestServerKeepsFilesAcrossAKill writes a file, kills the server, sees the bucket refuse, restarts
// it on the same port and reads the file back.
func TestServerKeepsFilesAcrossAKill(t *testing.T) {
	ctx := context.Background()
	srv := s3server.Start(t)
	srv.Setenv(t)
	store, err := blobstore.Open(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Put(ctx, "a/b.txt", []byte("kept"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := store.Ping(ctx); err == nil {
		t.Fatal("a killed server answered")
	}
	srv.Restart(t)
	data, err := store.Get(ctx, "a/b.txt")
	if err != nil || string(data) != "kept" {
		t.Fatalf("after the restart: %q %v", data, err)
	}
	if _, err := store.Get(ctx, "missing"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}
