// Package fileurl makes the download URLs of stored files (job outputs, videos, thumbnails, preset
// images): the API's signed /files routes (FILE_URLS=api, and always for a bucket that cannot sign,
// such as file://), or URLs of the store itself (FILE_URLS=store): presigned GETs of an S3 bucket,
// or plain URLs under a public CDN base (BLOB_PUBLIC_BASE_URL) that serves the bucket.
package fileurl

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
)

// The ways file URLs are made (FILE_URLS).
const (
	ModeAPI   = "api"   // the API's signed /files routes; the API streams the bytes
	ModeStore = "store" // the store's presigned URLs, or URLs under a public base
)

// CacheControl is what a file's answer tells caches, from the API or the store: private to the
// URL's holder, a day.
const CacheControl = "private, max-age=86400"

// FilePath is the API's download path of an asset.
func FilePath(assetID string) string { return "/files/" + assetID }

// ThumbnailPath is the API's download path of the thumbnail of a prepared upload.
func ThumbnailPath(assetID string) string { return "/files/" + assetID + "/thumbnail" }

// Presigner signs GET URLs of a bucket's keys (*blobstore.Store).
type Presigner interface {
	SignedGet(ctx context.Context, key string, ttl time.Duration, opts blobstore.GetOptions) (string, error)
}

// Maker makes the download URLs of stored files. The zero Maker and a nil one make nothing useful:
// build one with API or Store.
type Maker struct {
	signer *urlsign.Signer
	store  Presigner // nil: the API's URLs
	public string    // a public base serving the bucket's keys: unsigned URLs under it
	now    func() time.Time
}

// API returns a Maker of the API's signed /files URLs.
func API(signer *urlsign.Signer) *Maker { return &Maker{signer: signer, now: time.Now} }

// Store returns a Maker of the store's URLs: plain publicBase/key URLs when publicBase is set,
// else presigned GETs of store. signer still signs what the store does not hold under a known key
// (files without one).
func Store(signer *urlsign.Signer, store Presigner, publicBase string) (*Maker, error) {
	if store == nil && publicBase == "" {
		return nil, errors.New("fileurl: store URLs need a bucket that signs or a public base URL")
	}
	return &Maker{signer: signer, store: store, public: strings.TrimRight(publicBase, "/"), now: time.Now}, nil
}

// Of is m, or the API's URLs signed by signer when m is nil (handlers built without a Maker); nil
// when both are.
func Of(m *Maker, signer *urlsign.Signer) *Maker {
	if m != nil || signer == nil {
		return m
	}
	return API(signer)
}

// Mode is ModeStore when the URLs are the store's, else ModeAPI.
func (m *Maker) Mode() string {
	if m.store != nil || m.public != "" {
		return ModeStore
	}
	return ModeAPI
}

// File is a stored file a URL reads.
type File struct {
	AssetID     string
	Key         string // its key in the store; "" reads it through the API
	ContentType string
}

// File returns a URL that reads f until expires at least, and when it stops being valid. It is the
// store's when the Maker makes store URLs, f has a key and the store can sign until expires
// (blobstore.MaxSignedURLTTL from now at most; a URL under a public base does not expire by itself,
// expires is reported), else the API's.
func (m *Maker) File(f File, expires time.Time) (string, time.Time) {
	return m.url(FilePath(f.AssetID), f.Key, f.ContentType, expires)
}

// Thumbnail returns a URL that reads the thumbnail (a JPEG stored under key) of the upload
// assetID, as File does.
func (m *Maker) Thumbnail(assetID, key string, expires time.Time) (string, time.Time) {
	return m.url(ThumbnailPath(assetID), key, "image/jpeg", expires)
}

// Expiry is when a URL made now for a lifetime of ttl expires: ttl from now, for the store's
// URLs; for the API's, rounded up to the next hour, so that clients polling within an hour get the
// same URL (a store's presigned URL changes with every second of its signing time anyway).
func (m *Maker) Expiry(ttl time.Duration) time.Time {
	if m.Mode() == ModeStore {
		return m.now().UTC().Add(ttl).Truncate(time.Second)
	}
	return m.now().UTC().Add(ttl + time.Hour).Truncate(time.Hour)
}

func (m *Maker) url(apiPath, key, contentType string, expires time.Time) (string, time.Time) {
	if key != "" && m.public != "" {
		return m.public + "/" + escapeKey(key), expires
	}
	if key != "" && m.store != nil {
		now := m.now().Truncate(time.Second) // the signing time, as the URL carries it
		ttl := expires.Sub(now)
		if ttl%time.Second != 0 {
			ttl = ttl.Truncate(time.Second) + time.Second
		}
		// A lifetime asked as "the longest" (DOWNLOAD_URL_TTL of seven days from a moment ago)
		// may exceed the store's limit by the rounding to its second.
		if ttl > blobstore.MaxSignedURLTTL && ttl <= blobstore.MaxSignedURLTTL+time.Second {
			ttl = blobstore.MaxSignedURLTTL
		}
		if ttl > 0 && ttl <= blobstore.MaxSignedURLTTL {
			signed, err := m.store.SignedGet(context.Background(), key, ttl, blobstore.GetOptions{ContentType: contentType, CacheControl: CacheControl})
			if err == nil {
				return signed, now.Add(ttl).UTC()
			}
			// Signing is local (no request); should it fail, the API still serves the file.
		}
	}
	return m.signer.URL(http.MethodGet, apiPath, expires), expires
}

// escapeKey escapes each segment of a key for a URL path, keeping its slashes.
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
