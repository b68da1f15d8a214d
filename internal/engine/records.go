package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/models"
)

// The account's records as the external API lists and reviews them (api/external/openapi.yaml,
// RecordItem, ImageItem, VideoItem): fashion models, sceneries, packshots, photo-shoot images and videos. Every
// use case here is scoped to the account; another account's record is KindNotFound.

// ListAccountReferenceItems lists the account's own fashion models or sceneries (kind), not
// archived, newest first; approvedOnly keeps the approved ones.
func (e *Records) ListAccountReferenceItems(ctx context.Context, accountID string, kind models.ReferenceKind, approvedOnly bool) ([]models.Record, error) {
	return models.ListAccountReferenceItems(e.cfg.DB.WithContext(ctx), kind, accountID, approvedOnly)
}

// ListAccountPackshots lists the account's live packshots and its packshot jobs that have none
// yet; approvedOnly keeps the accepted packshots.
func (e *Records) ListAccountPackshots(ctx context.Context, accountID string, approvedOnly bool) ([]models.Record, error) {
	return models.ListAccountPackshots(e.cfg.DB.WithContext(ctx), accountID, approvedOnly)
}

// ListAccountShoots lists the account's photo-shoot images, newest first; approvedOnly keeps the
// accepted ones, and a photoID ("" for all) those of packshots cut from that product photo, which
// must be the account's (KindNotFound otherwise).
func (e *Records) ListAccountShoots(ctx context.Context, accountID string, approvedOnly bool, photoID string) ([]models.Record, error) {
	db := e.cfg.DB.WithContext(ctx)
	if photoID != "" {
		found, err := models.AccountHasPhoto(db, accountID, photoID)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, refuse(KindNotFound, "", "", "Product not found.")
		}
	}
	return models.ListAccountShoots(db, accountID, approvedOnly, photoID)
}

// ListAccountVideos lists the account's videos and reels, newest first.
func (e *Records) ListAccountVideos(ctx context.Context, accountID string) ([]models.Record, error) {
	return models.ListAccountVideos(e.cfg.DB.WithContext(ctx), accountID)
}

// ReviewAccountPackshot applies a review (a verdict, archiving, or both) to a live packshot of the
// account at now; the packshot's job gets the same verdict. KindNotFound for any other ID;
// KindConflict (ReasonOutputsPurged) when approving a packshot whose file retention removed.
func (e *Records) ReviewAccountPackshot(ctx context.Context, accountID, packshotID string, review models.PackshotReview, now time.Time) error {
	err := models.ReviewAccountPackshot(e.cfg.DB.WithContext(ctx), accountID, packshotID, review, now)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return refuse(KindNotFound, "", "", "Packshot not found.")
	case errors.Is(err, models.ErrRecordFilePurged):
		return refuse(KindConflict, ReasonOutputsPurged, "", "The packshot's file was removed by the retention policy, so it cannot be approved.")
	}
	return err
}

// ReviewAccountShoot records a verdict (models.VotingAccepted, VotingRejected, or VotingPending to
// clear it) on a photo-shoot image of the account at now. KindNotFound for any other ID;
// KindConflict (ReasonJobNotCompleted) before the image was generated.
func (e *Records) ReviewAccountShoot(ctx context.Context, accountID, shootID, verdict string, now time.Time) error {
	err := models.ReviewAccountShoot(e.cfg.DB.WithContext(ctx), accountID, shootID, verdict, now)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return refuse(KindNotFound, "", "", "Image not found.")
	case errors.Is(err, models.ErrRecordNotDone):
		return refuse(KindConflict, ReasonJobNotCompleted, "", "The image is not DONE; only a generated image can be reviewed.")
	}
	return err
}
