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

// Record is one entry of the external API's record lists: a fashion model, scenery, packshot,
// photo-shoot image or video. Thumbnail and Video are files that are still stored; both are none
// unless Status is DONE.
type Record struct {
	ID        string
	Name      string
	Status    string  // DONE, INPROGRESS or FAILED
	Voting    *string // in the list's vocabulary (models/voting); nil when not rated
	CreatedAt time.Time
	Thumbnail StoredFile
	Video     StoredFile // videos and reels: the generated video
}

// records are the views of stored records, with the store keys of their files (withStoreKeys).
func (e *Records) records(ctx context.Context, rows []models.Record, err error) ([]Record, error) {
	if err != nil {
		return nil, err
	}
	out := viewsOf(rows, func(r *models.Record) Record {
		return Record{ID: r.ID, Name: r.Name, Status: r.Status, Voting: r.Voting, CreatedAt: r.CreatedAt,
			Thumbnail: storedFileOf(r.Thumbnail), Video: storedFileOf(r.Video)}
	})
	files := make([]*StoredFile, 0, 2*len(out))
	for i := range out {
		files = append(files, &out[i].Thumbnail, &out[i].Video)
	}
	return out, e.withStoreKeys(ctx, files)
}

func storedFileOf(f models.RecordFile) StoredFile {
	return StoredFile{AssetID: f.AssetID, Preview: f.Preview, BlobKey: f.BlobKey}
}

// ListAccountReferenceItems lists a page of the account's own fashion models or sceneries (kind),
// not archived, newest first, and whether more follow; approvedOnly keeps the approved ones.
func (e *Records) ListAccountReferenceItems(ctx context.Context, accountID string, kind ReferenceKind, approvedOnly bool, page RecordPage) ([]Record, bool, error) {
	limit, p, err := page.storePage()
	if err != nil {
		return nil, false, err
	}
	rows, err := e.store.ListAccountReferenceItems(ctx, models.ReferenceKind(kind), accountID, approvedOnly, p)
	return e.recordPage(ctx, rows, limit, err)
}

// ListAccountPackshots lists a page of the account's live packshots and its packshot jobs that
// have none yet, and whether more follow; approvedOnly keeps the accepted packshots.
func (e *Records) ListAccountPackshots(ctx context.Context, accountID string, approvedOnly bool, page RecordPage) ([]Record, bool, error) {
	limit, p, err := page.storePage()
	if err != nil {
		return nil, false, err
	}
	rows, err := e.store.ListAccountPackshots(ctx, accountID, approvedOnly, p)
	return e.recordPage(ctx, rows, limit, err)
}

// ListAccountShoots lists a page of the account's photo-shoot images, newest first, and whether
// more follow; approvedOnly keeps the accepted ones, and a photoID ("" for all) those of packshots
// cut from that product photo, which must be the account's (KindNotFound otherwise).
func (e *Records) ListAccountShoots(ctx context.Context, accountID string, approvedOnly bool, photoID string, page RecordPage) ([]Record, bool, error) {
	limit, p, err := page.storePage()
	if err != nil {
		return nil, false, err
	}
	if photoID != "" {
		found, err := e.store.AccountHasPhoto(ctx, accountID, photoID)
		if err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, refuse(KindNotFound, "", "", "Product not found.")
		}
	}
	rows, err := e.store.ListAccountShoots(ctx, accountID, approvedOnly, photoID, p)
	return e.recordPage(ctx, rows, limit, err)
}

// ListAccountVideos lists a page of the account's videos and reels, newest first, and whether more
// follow.
func (e *Records) ListAccountVideos(ctx context.Context, accountID string, page RecordPage) ([]Record, bool, error) {
	limit, p, err := page.storePage()
	if err != nil {
		return nil, false, err
	}
	rows, err := e.store.ListAccountVideos(ctx, accountID, p)
	return e.recordPage(ctx, rows, limit, err)
}

// recordPage is the views of a page of stored records, trimmed to limit (cutRecordPage,
// its refusal of an unknown cursor included), with the store keys of their files.
func (e *Records) recordPage(ctx context.Context, rows []models.Record, limit int, err error) ([]Record, bool, error) {
	rows, more, err := cutRecordPage(rows, limit, err)
	if err != nil {
		return nil, false, err
	}
	recs, err := e.records(ctx, rows, nil)
	return recs, more, err
}

// PackshotReview is a review of a packshot through the external API: Voting
// models/voting.RecordApproved accepts it, RecordRejected clears its vote (back to pending: listed,
// not rated), "" leaves it; Archive archives it whatever its voting.
type PackshotReview struct {
	Voting  string
	Archive bool
}

// ReviewAccountPackshot applies a review (a verdict, archiving, or both) to a live packshot of the
// account at now; the packshot's job gets the same verdict. KindNotFound for any other ID;
// KindConflict (ReasonOutputsPurged) when approving a packshot whose file retention removed.
func (e *Records) ReviewAccountPackshot(ctx context.Context, accountID, packshotID string, review PackshotReview, now time.Time) error {
	err := e.store.ReviewAccountPackshot(ctx, accountID, packshotID, models.PackshotReview(review), now)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return refuse(KindNotFound, "", "", "Packshot not found.")
	case errors.Is(err, models.ErrRecordFilePurged):
		return refuse(KindConflict, ReasonOutputsPurged, "", "The packshot's file was removed by the retention policy, so it cannot be approved.")
	}
	return err
}

// ReviewAccountShoot records a verdict (models/voting.Accepted, Rejected, or Pending to clear it) on a photo-shoot image of the account at now. KindNotFound for any other ID;
// KindConflict (ReasonJobNotCompleted) before the image was generated.
func (e *Records) ReviewAccountShoot(ctx context.Context, accountID, shootID, verdict string, now time.Time) error {
	err := e.store.ReviewAccountShoot(ctx, accountID, shootID, verdict, now)
	switch {
	case errors.Is(err, models.ErrNotFound):
		return refuse(KindNotFound, "", "", "Image not found.")
	case errors.Is(err, models.ErrRecordNotDone):
		return refuse(KindConflict, ReasonJobNotCompleted, "", "The image is not DONE; only a generated image can be reviewed.")
	}
	return err
}
