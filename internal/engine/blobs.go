package engine

import (
	"context"
	"io"
)

// Blobs is the file store the engine writes uploaded files to (Config.Blobs);
// *blobstore.Store satisfies it.
type Blobs interface {
	// PutReader streams r under key, refusing more than maxBytes with blobstore.ErrTooLarge; a
	// refused or failed write leaves no file behind. It returns the size and the hex SHA-256.
	PutReader(ctx context.Context, key string, r io.Reader, contentType string, maxBytes int64) (int64, string, error)
	// Delete removes the file under key; a missing file is not an error.
	Delete(ctx context.Context, key string) error
}
