package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/media/imageprep"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Uploads sent straight to the store: when the store signs URLs (s3://, FILE_URLS=store), POST
// /assets/upload answers a URL of the store that accepts one PUT of the declared type and length
// under the upload's incoming key (IncomingKey), and the API never sees the bytes. Nobody tells
// the service they arrived: the upload is collected when it is first used (CollectUpload, by the
// catalog and session use cases that name it, and by Outbox.Sweep for the jobs that wait for it),
// checked as ReceiveUpload checks the bytes it receives (size, sniffed type, and the image's
// header), copied in the store to its key and prepared like any upload.

// IncomingKey is where the store takes the bytes of the upload id of account, straight from the
// client. Only uploads not yet collected live under "incoming/": the bucket's lifecycle expires
// what is left there (docs/files.md).
func IncomingKey(accountID, id string) string { return "incoming/" + accountID + "/" + id }

// CollectUpload collects the upload assetID of the installation if its bytes have arrived in the
// store and it awaits them, or a collection left it claimed when its process died (else it does
// nothing): it checks them and starts their preparation,
// as ReceiveUpload does for bytes sent to the API. Bytes that are not what the upload declared are
// deleted and refused with ReceiveUpload's refusals (KindInvalid, ReasonTooLarge when longer), on
// field; the upload awaits its bytes again, and may be sent again while its URL is valid. Errors of
// the store or the database are returned as they are.
func (e *Uploads) CollectUpload(ctx context.Context, installationID, assetID, field string) error {
	if e.cfg.Blobs == nil {
		return nil // an engine without a file store (a tool's) receives no upload
	}
	asset, err := e.store.InstallationAsset(ctx, installationID, assetID)
	if errors.Is(err, models.ErrNotFound) {
		return nil // the caller refuses it as it always did
	}
	if err != nil {
		return err
	}
	_, err = e.collect(ctx, asset, field)
	return err
}

// collect collects asset (CollectUpload) and reports whether it did: its bytes were there and
// good, and this call moved it to processing and started its preparation.
func (e *Uploads) collect(ctx context.Context, asset *models.Asset, field string) (bool, error) {
	if e.cfg.Blobs == nil {
		return false, nil // an engine without a file store (a tool's) receives no upload
	}
	now := time.Now()
	abandonedBefore := e.abandonedBefore(now)
	// A claim that a process which died left (after its claim, before the copy or the preparation's
	// start) is collected again.
	abandoned := asset.Status == status.AssetUploading && !asset.UpdatedAt.After(abandonedBefore)
	if asset.Kind != models.AssetKindUpload || (asset.Status != status.AssetAwaitingUpload && !abandoned) || asset.InstallationID == nil {
		return false, nil
	}
	incoming := IncomingKey(asset.AccountID, asset.ID)
	st, err := e.cfg.Blobs.Stat(ctx, incoming)
	if errors.Is(err, blobstore.ErrNotFound) {
		return false, nil // not sent yet
	}
	if err != nil {
		return false, fmt.Errorf("look for upload %s in the store: %w", asset.ID, err)
	}
	problem, err := e.checkArrived(ctx, asset, incoming, st)
	if errors.Is(err, blobstore.ErrChanged) {
		return false, nil // the client sent it again meanwhile: collected by the next look
	}
	if err != nil {
		return false, err
	}
	if problem != nil {
		if err := e.cfg.Blobs.Delete(ctx, incoming); err != nil {
			return false, fmt.Errorf("delete refused upload %s: %w", asset.ID, err)
		}
		problem.Field = field
		return false, problem
	}
	claimed, err := e.store.ClaimArrivedUpload(ctx, asset.ID, now, abandonedBefore)
	if err != nil || !claimed {
		return false, err // another request collected it
	}
	// The copy is of the version just checked (its ETag): a client that sent the upload again
	// between the check and the copy (its URL is valid for two hours) leaves it to be checked and
	// collected by the next look, by its first use or the sweep, instead of having bytes nobody
	// checked collected.
	if err := e.cfg.Blobs.Copy(ctx, asset.BlobKey, incoming, st.ETag, asset.ContentType); err != nil {
		e.ReleaseUpload(ctx, asset.ID)
		if errors.Is(err, blobstore.ErrChanged) {
			return false, nil
		}
		return false, fmt.Errorf("collect upload %s: %w", asset.ID, err)
	}
	width, height := asset.Width, asset.Height
	if err := e.CompleteUpload(ctx, asset, StoredUpload{Width: width, Height: height}); err != nil {
		e.ReleaseUpload(ctx, asset.ID)
		return false, err
	}
	if err := e.cfg.Blobs.Delete(ctx, incoming); err != nil {
		e.logger().Warn("incoming upload not deleted; the bucket's lifecycle will", zap.String("asset_id", asset.ID), zap.Error(err))
	}
	return true, nil
}

// checkArrived checks the bytes of asset stored under incoming (st) as ReceiveUpload checks the
// bytes it receives, and sets asset's dimensions from their header: the refusal when they are not
// what the upload declared, an error when the store fails.
func (e *Uploads) checkArrived(ctx context.Context, asset *models.Asset, incoming string, st blobstore.Stat) (*Error, error) {
	switch {
	case st.Size > asset.SizeBytes:
		return refuse(KindInvalid, ReasonTooLarge, "", "The upload is larger than declared (%d bytes).", asset.SizeBytes), nil
	case st.Size < asset.SizeBytes:
		return refuse(KindInvalid, "", "", "The upload is incomplete: received %d bytes but the upload was declared as %d.", st.Size, asset.SizeBytes), nil
	case st.ContentType != "" && st.ContentType != asset.ContentType:
		return refuse(KindInvalid, "", "", "Content-Type is %q but the upload was declared as %q.", st.ContentType, asset.ContentType), nil
	}
	head, err := e.cfg.Blobs.ReadPrefix(ctx, incoming, sniffBytes, st.ETag)
	if err != nil { // blobstore.ErrChanged among them, which collect sees through the wrapping
		return nil, fmt.Errorf("read upload %s from the store: %w", asset.ID, err)
	}
	width, height, err := imageprep.CheckHead(head, asset.ContentType, imageprep.Options{})
	if (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) && st.Size > int64(len(head)) {
		// The header lies beyond the head (a JPEG with large metadata first): the preparation,
		// which reads the whole file, decides, as it does for the API's own PUT.
		return nil, nil
	}
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), imageprep.ErrUnusable.Error()+": ")
		return refuse(KindInvalid, "", "", "asset_id %s cannot be used: %s.", asset.ID, reason), nil
	}
	asset.Width, asset.Height = width, height
	return nil, nil
}

// CollectAwaitedUploads looks at up to limit uploads that open jobs wait for (oldest first; a claim
// that a process which died left included) and collects those whose bytes have arrived in the
// store (CollectUpload); it returns how many it
// collected, whose preparation it started. A refused upload is logged: its jobs keep waiting for
// bytes that may still be sent. An error of the store or the database stops the sweep.
func (e *Uploads) CollectAwaitedUploads(ctx context.Context, limit int) (int, error) {
	assets, err := e.store.AwaitedUploads(ctx, e.abandonedBefore(time.Now()), limit)
	if err != nil {
		return 0, err
	}
	collected := 0
	for i := range assets {
		done, err := e.collect(ctx, &assets[i], "")
		if _, refused := As(err); err != nil && !refused {
			return collected, err
		}
		if err != nil {
			e.logger().Info("upload refused", zap.String("asset_id", assets[i].ID), zap.Error(err))
		}
		if done {
			collected++
		}
	}
	return collected, nil
}
