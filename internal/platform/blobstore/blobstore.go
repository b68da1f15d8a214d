// Package blobstore stores uploads and generated files in a gocloud.dev bucket: a local directory
// by default (file://), S3 or MinIO (s3://) in production.
package blobstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob" // mem:// for tests
	_ "gocloud.dev/blob/s3blob"  // s3:// for S3 and MinIO
	"gocloud.dev/gcerrors"
)

// ErrNotFound is returned for a key that holds no file.
var ErrNotFound = errors.New("blob not found")

// ErrTooLarge is returned by PutReader when the stream exceeds the allowed size.
var ErrTooLarge = errors.New("blob larger than allowed")

// Store is a bucket of files addressed by key.
type Store struct{ bucket *blob.Bucket }

// Open opens the bucket at rawURL. file:// URLs may be relative (file://.data/blobs) or absolute
// (file:///var/lib/shotflow); the directory is created when missing.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blobstore: %w", err)
	}
	if u.Scheme == "file" {
		dir, err := filepath.Abs(filepath.FromSlash(u.Host + u.Path))
		if err != nil {
			return nil, err
		}
		b, err := fileblob.OpenBucket(dir, &fileblob.Options{CreateDir: true, NoTempDir: true})
		if err != nil {
			return nil, fmt.Errorf("blobstore: open %s: %w", dir, err)
		}
		return &Store{bucket: b}, nil
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("blobstore: open %s: %w", u.Redacted(), err)
	}
	return &Store{bucket: b}, nil
}

// Put writes data under key.
func (s *Store) Put(ctx context.Context, key string, data []byte, contentType string) error {
	return s.bucket.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: contentType})
}

// PutReader streams r under key, refusing more than maxBytes; it returns the size and SHA-256.
// A refused or failed write leaves no file behind.
func (s *Store) PutReader(ctx context.Context, key string, r io.Reader, contentType string, maxBytes int64) (int64, string, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType})
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, maxBytes+1))
	if err == nil && n > maxBytes {
		err = ErrTooLarge
	}
	if err != nil {
		cancel() // abandons the write
		w.Close()
		return n, "", err
	}
	if err := w.Close(); err != nil {
		return n, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Get reads the whole file under key.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	data, err := s.bucket.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, ErrNotFound
	}
	return data, err
}

// Open returns a reader of the file under key; the caller closes it.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	return r, r.Size(), nil
}

// Delete removes the file under key; a missing file is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.bucket.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return err
}

// Ping checks that the bucket answers.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.bucket.IsAccessible(ctx)
	return err
}

// Close releases the bucket.
func (s *Store) Close() error { return s.bucket.Close() }
