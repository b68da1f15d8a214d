package models

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// The store methods of the external API's record lists and reviews (external_records.go): an
// account's own fashion models and sceneries, its packshots, photo-shoot images and videos.

// ListAccountReferenceItems lists the account's own fashion models or sceneries (those it
// generated; never the marketplace's) that are not archived, newest first; approvedOnly keeps the
// APPROVED ones.
func (s *Store) ListAccountReferenceItems(ctx context.Context, kind ReferenceKind, accountID string, approvedOnly bool) ([]Record, error) {
	db := s.conn(ctx)
	var rows []struct {
		ReferenceItem
		ThumbnailPurgedAt *time.Time
	}
	q := db.Table(kind.Table()+" AS r").Select("r.*, a.purged_at AS thumbnail_purged_at").
		Joins("LEFT JOIN assets a ON a.id = r.thumbnail_asset_id").
		Where("r.account_id = ? AND r.status <> ?", accountID, RefStatusArchived)
	if approvedOnly {
		q = q.Where("r.voting = ?", RefVotingApproved)
	}
	if err := q.Order("r.created_at DESC, r.id DESC").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(rows))
	for _, r := range rows {
		rec := Record{ID: r.ID, Name: r.Name, Status: r.Status, Voting: r.Voting, CreatedAt: r.CreatedAt}
		if r.Status == RefStatusDone {
			switch {
			case r.ThumbnailAssetID != nil && *r.ThumbnailAssetID != "":
				if r.ThumbnailPurgedAt == nil {
					rec.Thumbnail.AssetID = *r.ThumbnailAssetID
				}
			default:
				rec.Thumbnail.BlobKey = r.ThumbnailKey
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// ListAccountPackshots lists the account's packshots that are neither deleted nor archived (DONE,
// voting APPROVED for an accepted one, REJECTED for a rejected one, null while pending), and the
// account's packshot jobs whose packshot does not exist yet (INPROGRESS or FAILED, not rated),
// under the record ID the job was given. A packshot made by a job is dated by its job, so a
// record keeps its createdAt and its place in the list when it becomes DONE. approvedOnly keeps
// the accepted packshots.
func (s *Store) ListAccountPackshots(ctx context.Context, accountID string, approvedOnly bool) ([]Record, error) {
	db := s.conn(ctx)
	var done []struct {
		ID           string
		Name         string
		Voting       string
		CreatedAt    time.Time
		JobCreatedAt *time.Time
		AssetID      string
		PurgedAt     *time.Time
	}
	q := db.Table("packshots AS p").
		Select(`p.id, COALESCE(NULLIF(pr.display_name, ''), pr.external_ref, '') AS name, p.voting, p.created_at,
			j.created_at AS job_created_at, p.asset_id, a.purged_at`).
		Joins("LEFT JOIN products pr ON pr.id = p.product_id").
		Joins("LEFT JOIN jobs j ON j.id = p.job_id").
		Joins("LEFT JOIN assets a ON a.id = p.asset_id").
		Where("p.account_id = ? AND p.deleted_at IS NULL AND p.archived_at IS NULL", accountID)
	if approvedOnly {
		q = q.Where("p.voting = ?", VotingAccepted)
	}
	if err := q.Scan(&done).Error; err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(done))
	for _, p := range done {
		rec := Record{ID: p.ID, Name: p.Name, Status: RefStatusDone, CreatedAt: p.CreatedAt}
		if p.JobCreatedAt != nil {
			rec.CreatedAt = *p.JobCreatedAt
		}
		switch p.Voting {
		case VotingAccepted:
			rec.Voting = recordVoting(RefVotingApproved)
		case VotingRejected:
			rec.Voting = recordVoting(RefVotingRejected)
		}
		if p.PurgedAt == nil {
			rec.Thumbnail.AssetID = p.AssetID
		}
		out = append(out, rec)
	}
	if !approvedOnly {
		var pending []struct {
			RecordID  string
			Name      string
			Status    string
			CreatedAt time.Time
		}
		if err := db.Table("jobs AS j").Select("j.record_id, "+recordName+" AS name, j.status, j.created_at").
			Joins("LEFT JOIN products pr ON pr.id = j.product_id").
			Where("j.account_id = ? AND j.job_type = ? AND j.record_id IS NOT NULL AND j.record_archived_at IS NULL", accountID, jobtype.Packshot).
			Where("NOT EXISTS (SELECT 1 FROM packshots p WHERE p.id = j.record_id)").
			Scan(&pending).Error; err != nil {
			return nil, err
		}
		for _, j := range pending {
			status := RecordStatus(j.Status)
			if status == RefStatusDone {
				status = RefStatusFailed // completed without a file: it never gets a packshot
			}
			out = append(out, Record{ID: j.RecordID, Name: j.Name, Status: status, CreatedAt: j.CreatedAt})
		}
	}
	slices.SortFunc(out, newestFirst)
	return out, nil
}

// ListAccountShoots lists the account's photo-shoot images (photo_shoot jobs of either API),
// newest first, with voting accepted, rejected or null (never pending) and the first output as
// the thumbnail once DONE. approvedOnly keeps the accepted ones; a photoID keeps the shoots of
// packshots cut from that product photo.
func (s *Store) ListAccountShoots(ctx context.Context, accountID string, approvedOnly bool, photoID string) ([]Record, error) {
	q := s.conn(ctx)
	if approvedOnly {
		q = q.Where("j.voting = ?", VotingAccepted)
	}
	if photoID != "" {
		q = q.Where("j.packshot_id IN (SELECT p.id FROM packshots p WHERE p.source_image_id = ? AND p.account_id = ?)", photoID, accountID)
	}
	jobs, outputs, err := listRecordJobs(q, accountID, []string{jobtype.PhotoShoot})
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(jobs))
	for _, j := range jobs {
		rec := Record{ID: j.ID, Name: j.Name, Status: RecordStatus(j.Status), CreatedAt: j.CreatedAt}
		if j.Voting == VotingAccepted || j.Voting == VotingRejected {
			rec.Voting = recordVoting(j.Voting)
		}
		if rec.Status == RefStatusDone {
			rec.Thumbnail.AssetID = outputs[j.ID]
		}
		out = append(out, rec)
	}
	return out, nil
}

// ListAccountVideos lists the account's videos and reels, newest first: the video is the first
// output once DONE, the thumbnail then the job's first input image (its preview when it has one),
// voting APPROVED, REJECTED or null.
func (s *Store) ListAccountVideos(ctx context.Context, accountID string) ([]Record, error) {
	jobs, outputs, err := listRecordJobs(s.conn(ctx), accountID, []string{jobtype.Video, jobtype.Reel})
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(jobs))
	for _, j := range jobs {
		rec := Record{ID: j.ID, Name: j.Name, Status: RecordStatus(j.Status), CreatedAt: j.CreatedAt}
		switch j.Voting {
		case VotingAccepted:
			rec.Voting = recordVoting(RefVotingApproved)
		case VotingRejected:
			rec.Voting = recordVoting(RefVotingRejected)
		}
		if rec.Status == RefStatusDone {
			rec.Video.AssetID = outputs[j.ID]
			if j.InputAssetID != nil && j.InputPurged == nil {
				rec.Thumbnail = RecordFile{AssetID: *j.InputAssetID, Preview: j.InputPreview != ""}
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// AccountHasPhoto reports whether the product photo (a product_images row, also a retired one)
// belongs to the account.
func (s *Store) AccountHasPhoto(ctx context.Context, accountID, photoID string) (bool, error) {
	var n int64
	err := s.conn(ctx).Model(&ProductImage{}).Where("id = ? AND account_id = ?", photoID, accountID).Count(&n).Error
	return n > 0, err
}

// ReviewAccountPackshot applies a review to a live packshot of the account (not deleted, not
// archived); ErrNotFound for any other ID, ErrRecordFilePurged when approving a packshot whose
// file was purged. The packshot's job, when it has one, gets the same voting, so both APIs show
// one verdict. A record without a packshot (its job still runs, or failed) may only be archived
// (archiveJobRecord), a vote with it ignored; a vote alone on it is ErrNotFound.
func (s *Store) ReviewAccountPackshot(ctx context.Context, accountID, id string, review PackshotReview, now time.Time) error {
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		var p Packshot
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("id = ? AND account_id = ? AND deleted_at IS NULL AND archived_at IS NULL", id, accountID).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) && review.Archive {
			// The spec archives a record in any state, regardless of voting: a vote sent with the
			// archive has nothing to apply to before the packshot exists, and the archive stands.
			return archiveJobRecord(tx, accountID, id, now)
		}
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		fields := map[string]any{}
		switch review.Voting {
		case RefVotingApproved:
			// Lock the file as the retention sweep does, so it is never purged under an
			// approval (an approved packshot's file is kept).
			var file Asset
			if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&file, "id = ?", p.AssetID).Error; err != nil {
				return err
			}
			switch {
			case file.PurgedAt != nil && !review.Archive:
				return ErrRecordFilePurged
			case file.PurgedAt == nil: // an archive stands regardless of voting: with a purged file, the approval is dropped
				fields["voting"], fields["voting_at"] = VotingAccepted, now
			}
		case RefVotingRejected:
			fields["voting"], fields["voting_at"] = VotingPending, nil
		}
		if review.Archive {
			fields["archived_at"] = now
		}
		if len(fields) == 0 {
			return nil
		}
		if err := tx.Model(&Packshot{}).Where("id = ?", p.ID).Updates(fields).Error; err != nil {
			return err
		}
		if v, ok := fields["voting"]; ok && p.JobID != nil {
			return tx.Model(&Job{}).Where("id = ? AND status = ?", *p.JobID, status.JobCompleted).
				Updates(map[string]any{"voting": v, "voting_at": fields["voting_at"], "updated_at": now}).Error
		}
		return nil
	})
}

// ReviewAccountShoot records a verdict on a photo-shoot image of the account (a photo_shoot job):
// VotingAccepted or VotingRejected, or VotingPending to clear it (voting null again). ErrNotFound
// for any other ID, ErrRecordNotDone before the job completed.
func (s *Store) ReviewAccountShoot(ctx context.Context, accountID, id, verdict string, now time.Time) error {
	db := s.conn(ctx)
	var j Job
	err := db.Where("id = ? AND account_id = ? AND job_type = ?", id, accountID, jobtype.PhotoShoot).Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	if j.Status != status.JobCompleted {
		return ErrRecordNotDone
	}
	var at any = now
	if verdict == VotingPending {
		at = nil
	}
	return db.Model(&Job{}).Where("id = ? AND status = ?", j.ID, status.JobCompleted).
		Updates(map[string]any{"voting": verdict, "voting_at": at, "updated_at": now}).Error
}

// archiveJobRecord archives a packshot record that is only its job's record_id (the job runs, or
// failed): GET /packshots leaves it out from then on, and a packshot the job still produces is
// archived with it (EnsurePackshotCandidate). The job's row is locked first, as finishing the job
// locks it: a packshot created while this waited is archived itself. ErrNotFound when the account
// has no such record, or it is archived already.
func archiveJobRecord(tx *gorm.DB, accountID, id string, now time.Time) error {
	var j Job
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "record_archived_at").
		Where("record_id = ? AND account_id = ? AND job_type = ?", id, accountID, jobtype.Packshot).
		Order("created_at DESC, id DESC").Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && j.RecordArchivedAt != nil) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var made int64
	if err := tx.Model(&Packshot{}).Where("id = ? AND account_id = ?", id, accountID).Count(&made).Error; err != nil {
		return err
	}
	if made > 0 { // made while this waited for the job's row: archived as any packshot, if live
		res := tx.Model(&Packshot{}).Where("id = ? AND deleted_at IS NULL AND archived_at IS NULL", id).Update("archived_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
	}
	return tx.Model(&Job{}).Where("id = ?", j.ID).Update("record_archived_at", now).Error
}
