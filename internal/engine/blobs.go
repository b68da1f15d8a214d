package engine

import (
	"context"
	"io"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
)

// Blobs is the file store the engine writes uploaded files to (Config.Blobs);
// *blobstore.Store satisfies it.
type Blobs interface {
	// PutReader streams r under key, refusing more than maxBytes with blobstore.ErrTooLarge; a
	// refused or failed write leaves no file behind. It returns the size and the hex SHA-256.
	PutReader(ctx context.Context, key string, r io.Reader, contentType string, maxBytes int64) (int64, string, error)
	// Delete removes the file under key; a missing file is not an error.
	Delete(ctx context.Context, key string) error
	// Stat returns the size, type and version (ETag) of the file under key; blobstore.ErrNotFound
	// when none.
	Stat(ctx context.Context, key string) (blobstore.Stat, error)
	// ReadPrefix reads up to n bytes from the start of the file under key, of the version etag
	// when not "" (blobstore.ErrChanged once another was written).
	ReadPrefix(ctx context.Context, key string, n int64, etag string) ([]byte, error)
	// Copy copies the file under src to dst within the store, the version etag when not ""
	// (blobstore.ErrChanged once another was written), with the type contentType and no other
	// header its sender chose.
	Copy(ctx context.Context, dst, src, etag, contentType string) error
}
