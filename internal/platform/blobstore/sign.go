package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// MaxSignedURLTTL is the longest validity of a URL the store signs: S3's presigned URLs (SigV4)
// last at most seven days.
const MaxSignedURLTTL = 7 * 24 * time.Hour

// ErrCannotSign is returned by the signing methods of a store whose URLs no client can use
// directly (file://, mem://): its files pass through the API.
var ErrCannotSign = errors.New("blobstore: this bucket does not sign URLs")

// CanSign reports whether clients can send files to the bucket and read them from it directly,
// through URLs it signs: true for an S3 bucket (s3://).
func (s *Store) CanSign() bool {
	var c *s3.Client
	return s.bucket.As(&c)
}

// SignedPut returns a URL that accepts, until ttl from now, one PUT under key of exactly size bytes
// with the Content-Type contentType: both headers are signed, so the store refuses any other type
// or length. The client sends the request's Content-Type header with the URL.
func (s *Store) SignedPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (string, error) {
	if !s.CanSign() {
		return "", ErrCannotSign
	}
	if ttl <= 0 || ttl > MaxSignedURLTTL {
		return "", fmt.Errorf("blobstore: a signed URL lasts between 0 and %s, not %s", MaxSignedURLTTL, ttl)
	}
	return s.bucket.SignedURL(ctx, key, &blob.SignedURLOptions{
		Method: http.MethodPut,
		Expiry: ttl,
		// s3blob refuses SignedURLOptions.ContentType (AWS SDK v2); the type and length are set on
		// the request being signed instead, which signs them as headers.
		BeforeSign: func(as func(any) bool) error {
			var in *s3.PutObjectInput
			if !as(&in) {
				return fmt.Errorf("blobstore: signing a PUT: the bucket offers no *s3.PutObjectInput")
			}
			in.ContentType = aws.String(contentType)
			in.ContentLength = aws.Int64(size)
			return nil
		},
	})
}

// GetOptions are the answer headers a signed GET asks the store for.
type GetOptions struct {
	ContentType        string // "" leaves the stored type
	ContentDisposition string // "" leaves the stored disposition
	CacheControl       string // "" leaves the stored cache control
}

// SignedGet returns a URL that reads the file under key until ttl from now, with the answer headers
// of opts.
func (s *Store) SignedGet(ctx context.Context, key string, ttl time.Duration, opts GetOptions) (string, error) {
	if !s.CanSign() {
		return "", ErrCannotSign
	}
	if ttl <= 0 || ttl > MaxSignedURLTTL {
		return "", fmt.Errorf("blobstore: a signed URL lasts between 0 and %s, not %s", MaxSignedURLTTL, ttl)
	}
	return s.bucket.SignedURL(ctx, key, &blob.SignedURLOptions{
		Method: http.MethodGet,
		Expiry: ttl,
		BeforeSign: func(as func(any) bool) error {
			var in *s3.GetObjectInput
			if !as(&in) {
				return fmt.Errorf("blobstore: signing a GET: the bucket offers no *s3.GetObjectInput")
			}
			if opts.ContentType != "" {
				in.ResponseContentType = aws.String(opts.ContentType)
			}
			if opts.ContentDisposition != "" {
				in.ResponseContentDisposition = aws.String(opts.ContentDisposition)
			}
			if opts.CacheControl != "" {
				in.ResponseCacheControl = aws.String(opts.CacheControl)
			}
			return nil
		},
	})
}

// Stat is what the store holds under a key.
type Stat struct {
	Size        int64
	ContentType string
	// ETag names this version of the file: ReadPrefix and Copy given it act on this version
	// alone, and fail with ErrChanged once another was written under the key (on S3; other
	// stores have nothing to bind and ignore it).
	ETag string
}

// ErrChanged is returned by ReadPrefix and Copy when the file under the key is no longer the
// version whose ETag they were given: it was written again since.
var ErrChanged = errors.New("blobstore: the file was written again since it was read")

// Stat returns the size and content type of the file under key; ErrNotFound when there is none.
func (s *Store) Stat(ctx context.Context, key string) (Stat, error) {
	a, err := s.bucket.Attributes(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Stat{}, ErrNotFound
	}
	if err != nil {
		return Stat{}, err
	}
	return Stat{Size: a.Size, ContentType: a.ContentType, ETag: a.ETag}, nil
}

// ReadPrefix reads up to n bytes from the start of the file under key, of its version etag when
// etag is not "" (Stat.ETag; ErrChanged when another was written since); ErrNotFound when there
// is none.
func (s *Store) ReadPrefix(ctx context.Context, key string, n int64, etag string) ([]byte, error) {
	opts := &blob.ReaderOptions{BeforeRead: func(as func(any) bool) error {
		var in *s3.GetObjectInput
		if etag != "" && as(&in) {
			in.IfMatch = aws.String(etag)
		}
		return nil
	}}
	r, err := s.bucket.NewRangeReader(ctx, key, 0, n, opts)
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return nil, ErrNotFound
	case gcerrors.FailedPrecondition:
		return nil, ErrChanged
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Copy copies the file under src to dst within the bucket (on S3 a copy in the store: no byte
// passes through this process), its version etag when etag is not "" (Stat.ETag; ErrChanged when
// another was written since); ErrNotFound when src holds none. On S3 the copy has the type
// contentType and none of the other headers and metadata src was stored with (a presigned PUT
// signs the type and length alone, so its sender may have added others).
func (s *Store) Copy(ctx context.Context, dst, src, etag, contentType string) error {
	opts := &blob.CopyOptions{BeforeCopy: func(as func(any) bool) error {
		var in *s3.CopyObjectInput
		if !as(&in) {
			return nil
		}
		if etag != "" {
			in.CopySourceIfMatch = aws.String(etag)
		}
		in.MetadataDirective = s3types.MetadataDirectiveReplace
		in.ContentType = aws.String(contentType)
		return nil
	}}
	err := s.bucket.Copy(ctx, dst, src, opts)
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return ErrNotFound
	case gcerrors.FailedPrecondition:
		return ErrChanged
	}
	return err
}
