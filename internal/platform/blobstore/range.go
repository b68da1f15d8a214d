package blobstore

import (
	"context"
	"errors"
	"io"

	"gocloud.dev/gcerrors"
)

// ErrInvalidRange is returned by OpenRange for a negative offset or a length of zero.
var ErrInvalidRange = errors.New("blob range is empty or negative")

// Size returns the size in bytes of the file under key.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	attrs, err := s.bucket.Attributes(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return attrs.Size, nil
}

// OpenRange returns a reader of at most length bytes of the file under key from offset (a negative
// length reads to its end) and the size of the whole file; the caller closes the reader. The
// offset must lie within the file (Size tells): past its end, stores differ (S3 refuses the read,
// a directory reads nothing).
func (s *Store) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, int64, error) {
	if offset < 0 || length == 0 {
		return nil, 0, ErrInvalidRange
	}
	r, err := s.bucket.NewRangeReader(ctx, key, offset, length, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	return r, r.Size(), nil
}
