package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"path"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Image files of the external API's multipart routes: product photos (POST /products) and preset
// covers and galleries (POST and PUT /presets). The engine checks and stores them; a file that
// cannot be used is refused with KindInvalid naming its form field.

// MaxImageBytes is the largest image file a multipart route accepts: 20 MiB.
const MaxImageBytes = 20 << 20

// ImageTypes are the image types the multipart routes accept, sniffed from the bytes.
var ImageTypes = []string{"image/png", "image/jpeg", "image/webp"}

// ErrFileStore is in the chain of an error of the file store (an external service when BLOB_URL
// names S3 or GCS) that did not accept a file; the error itself follows it.
var ErrFileStore = errors.New("store file")

// fileCleanupTimeout bounds removing the files of a request that failed: the cleanup outlives the
// request's own deadline, but must not hang on an unreachable file store.
const fileCleanupTimeout = 5 * time.Second

// ImageFile is an image file a request carries.
type ImageFile struct {
	Field string // the form field it came in, which refusals name
	Name  string // the client's file name; only its last element is kept
	Size  int64  // the size the request declares
	// Open opens the bytes; the caller's request owns them and removes them after the call.
	Open func() (io.ReadCloser, error)
}

// storeImage checks an image file (an image of ImageTypes, at most MaxImageBytes, readable, at most
// imageprep.DefaultMaxPixels pixels), stores it and returns its asset row, not yet inserted: status
// ready, or processing when prepare is set (the caller then starts its PrepareInputWorkflow). A
// bad file is KindInvalid naming its field; a file the store did not take is ErrFileStore.
func (e *core) storeImage(ctx context.Context, accountID string, f ImageFile, prepare bool) (*models.Asset, error) {
	if f.Size > MaxImageBytes {
		return nil, refuse(KindInvalid, "", f.Field, "%q is %d bytes; images may be at most %d MiB.", f.Name, f.Size, MaxImageBytes>>20)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, refuse(KindInvalid, "", f.Field, "%q is empty.", f.Name)
	}
	if len(data) > MaxImageBytes {
		return nil, refuse(KindInvalid, "", f.Field, "%q is larger than %d MiB.", f.Name, MaxImageBytes>>20)
	}
	contentType := http.DetectContentType(data)
	if !slices.Contains(ImageTypes, contentType) {
		return nil, refuse(KindInvalid, "", f.Field, "%q is %s; send a PNG, JPEG or WebP image.", f.Name, contentType)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, refuse(KindInvalid, "", f.Field, "%q is not a readable image.", f.Name)
	}
	if cfg.Width*cfg.Height > imageprep.DefaultMaxPixels {
		return nil, refuse(KindInvalid, "", f.Field, "%q is %dx%d pixels, more than %d in all.", f.Name, cfg.Width, cfg.Height, imageprep.DefaultMaxPixels)
	}
	now := time.Now().UTC()
	id := models.NewID()
	a := &models.Asset{
		ID: id, AccountID: accountID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		Filename: path.Base(f.Name), ContentType: contentType, SizeBytes: int64(len(data)),
		BlobKey: fmt.Sprintf("uploads/%s/%s", accountID, id), Width: cfg.Width, Height: cfg.Height,
		CreatedAt: now, UpdatedAt: now,
	}
	if prepare {
		a.Status = status.AssetProcessing
	}
	_, a.SHA256, err = e.cfg.Blobs.PutReader(ctx, a.BlobKey, bytes.NewReader(data), contentType, a.SizeBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFileStore, err)
	}
	return a, nil
}

// storeImages stores the files (nil entries are none) in order, and returns their assets, not
// yet inserted, in the same places; on an error it deletes what it stored.
func (e *core) storeImages(ctx context.Context, accountID string, files ...*ImageFile) (assets []*models.Asset, err error) {
	assets = make([]*models.Asset, len(files))
	for i, f := range files {
		if f == nil {
			continue
		}
		if assets[i], err = e.storeImage(ctx, accountID, *f, false); err != nil {
			e.deleteFiles(ctx, assets...)
			return nil, err
		}
	}
	return assets, nil
}

// deleteFiles deletes the files of assets (nil entries are skipped), best effort: a failure is
// logged and leaves an orphan file behind. It runs also when the request has run out of time, for
// at most fileCleanupTimeout.
func (e *core) deleteFiles(ctx context.Context, assets ...*models.Asset) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fileCleanupTimeout)
	defer cancel()
	for _, a := range assets {
		if a == nil {
			continue
		}
		for _, k := range []string{a.BlobKey, a.PreparedBlobKey, a.ThumbnailBlobKey} {
			if k == "" {
				continue
			}
			if err := e.cfg.Blobs.Delete(ctx, k); err != nil {
				e.logger().Warn("delete preset image file", zap.String("asset_id", a.ID), zap.String("blob_key", k), zap.Error(err))
			}
		}
	}
}
