package activities_test

import (
	"context"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/models/catalog"
)

// fileBlobs is a blob store in a folder of the test's own, closed when the test ends.
func fileBlobs(t *testing.T) *blobstore.Store {
	t.Helper()
	blobs, err := blobstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	return blobs
}

// loadCatalog is the catalog of models, aspect ratios and prices.
func loadCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
