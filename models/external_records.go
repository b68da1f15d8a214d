package models

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// The record lists and reviews of the external content API (api/external/openapi.yaml,
// RecordItem, ImageItem, VideoItem): an account's own fashion models and sceneries, its packshots (with the packshot jobs
// still generating theirs), its photo-shoot images and its videos and reels. Every list is newest
// first by (created_at, id) and reads a handful of indexed queries whatever its length.

// Record votes in the external API's vocabularies: models, sceneries, packshots and videos use
// RefVotingApproved and RefVotingRejected; photo-shoot images use VotingAccepted and
// VotingRejected. Both use null for "not rated", never VotingPending.

// Errors of the external API's reviews.
var (
	// ErrRecordNotDone refuses a review of a photo-shoot image that has not completed.
	ErrRecordNotDone = errors.New("record is not done")
	// ErrRecordFilePurged refuses to approve a packshot whose file the retention policy removed.
	ErrRecordFilePurged = errors.New("record file purged")
)

// Record is one entry of an external record list before its URLs are signed. Thumbnail and
// Video name files that are still stored; both are empty unless Status is RefStatusDone.
type Record struct {
	ID        string
	Name      string
	Status    string  // RefStatusDone, RefStatusInProgress or RefStatusFailed
	Voting    *string // in the list's vocabulary; nil when not rated
	CreatedAt time.Time
	Thumbnail RecordFile
	Video     RecordFile // videos and reels: the generated video
}

// RecordFile is a file of a record: an asset (its download, or its preview when Preview is set) or
// a seeded blob-store file (BlobKey under ReferenceBlobPrefix). The zero value is no file.
type RecordFile struct {
	AssetID string
	Preview bool
	BlobKey string
}

// RecordStatus is the external status of a job: DONE, FAILED, or INPROGRESS while it can still run.
func RecordStatus(jobStatus string) string {
	switch jobStatus {
	case status.JobCompleted:
		return RefStatusDone
	case status.JobFailed, status.JobCancelled, status.JobExpired:
		return RefStatusFailed
	}
	return RefStatusInProgress
}

// newestFirst orders records by created_at, then id, both descending.
func newestFirst(a, b Record) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
}

// recordName is the SQL name of a job's record: its product's display name, else the label the
// job was ordered with, else the product's reference. pr is the job's product, j the job.
const recordName = `COALESCE(NULLIF(pr.display_name, ''), NULLIF(j.product_label, ''), NULLIF(pr.external_ref, ''), j.product_ref, '')`

// ListAccountReferenceItems lists the account's own fashion models or sceneries (those it
// generated; never the marketplace's) that are not archived, newest first; approvedOnly keeps the
// APPROVED ones.
func ListAccountReferenceItems(db *gorm.DB, kind ReferenceKind, accountID string, approvedOnly bool) ([]Record, error) {
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
func ListAccountPackshots(db *gorm.DB, accountID string, approvedOnly bool) ([]Record, error) {
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
			Where("j.account_id = ? AND j.job_type = ? AND j.record_id IS NOT NULL", accountID, jobtype.Packshot).
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

// recordJob is a job row of a record list.
type recordJob struct {
	ID           string
	Name         string
	Status       string
	Voting       string
	CreatedAt    time.Time
	InputAssetID *string
	InputPreview string     // the input's thumbnail_blob_key
	InputPurged  *time.Time // the input's purged_at
}

// listRecordJobs lists the account's jobs of the types, newest first, with their outputs when
// completed (first stored output per job).
func listRecordJobs(q *gorm.DB, accountID string, jobTypes []string) ([]recordJob, map[string]string, error) {
	var jobs []recordJob
	if err := q.Table("jobs AS j").
		Select(`j.id, `+recordName+` AS name, j.status, j.voting, j.created_at, j.input_asset_id,
			ia.thumbnail_blob_key AS input_preview, ia.purged_at AS input_purged`).
		Joins("LEFT JOIN products pr ON pr.id = j.product_id").
		Joins("LEFT JOIN assets ia ON ia.id = j.input_asset_id").
		Where("j.account_id = ? AND j.job_type IN ?", accountID, jobTypes).
		Order("j.created_at DESC, j.id DESC").Scan(&jobs).Error; err != nil {
		return nil, nil, err
	}
	var completed []string
	for _, j := range jobs {
		if j.Status == status.JobCompleted {
			completed = append(completed, j.ID)
		}
	}
	first := map[string]string{}
	for chunk := range slices.Chunk(completed, 500) {
		outputs, err := JobOutputs(q.Session(&gorm.Session{NewDB: true}), chunk...)
		if err != nil {
			return nil, nil, err
		}
		for jobID, assets := range outputs {
			for _, a := range assets {
				if a.PurgedAt == nil {
					first[jobID] = a.ID
					break
				}
			}
		}
	}
	return jobs, first, nil
}

// ListAccountShoots lists the account's photo-shoot images (photo_shoot jobs of either API),
// newest first, with voting accepted, rejected or null (never pending) and the first output as
// the thumbnail once DONE. approvedOnly keeps the accepted ones; a photoID keeps the shoots of
// packshots cut from that product photo.
func ListAccountShoots(db *gorm.DB, accountID string, approvedOnly bool, photoID string) ([]Record, error) {
	q := db
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
func ListAccountVideos(db *gorm.DB, accountID string) ([]Record, error) {
	jobs, outputs, err := listRecordJobs(db, accountID, []string{jobtype.Video, jobtype.Reel})
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
func AccountHasPhoto(db *gorm.DB, accountID, photoID string) (bool, error) {
	var n int64
	err := db.Model(&ProductImage{}).Where("id = ? AND account_id = ?", photoID, accountID).Count(&n).Error
	return n > 0, err
}

// PackshotReview is a review of a packshot through the external API: Voting RefVotingApproved
// accepts it, RefVotingRejected clears its vote (back to pending: listed, not rated), "" leaves it;
// Archive archives it whatever its voting.
type PackshotReview struct {
	Voting  string
	Archive bool
}

// ReviewAccountPackshot applies a review to a live packshot of the account (not deleted, not
// archived); ErrNotFound for any other ID, ErrRecordFilePurged when approving a packshot whose
// file was purged. The packshot's job, when it has one, gets the same voting, so both APIs show
// one verdict.
func ReviewAccountPackshot(db *gorm.DB, accountID, id string, review PackshotReview, now time.Time) error {
	return db.Transaction(func(tx *gorm.DB) error {
		var p Packshot
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("id = ? AND account_id = ? AND deleted_at IS NULL AND archived_at IS NULL", id, accountID).Take(&p).Error
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
			if file.PurgedAt != nil {
				return ErrRecordFilePurged
			}
			fields["voting"], fields["voting_at"] = VotingAccepted, now
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
func ReviewAccountShoot(db *gorm.DB, accountID, id, verdict string, now time.Time) error {
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

// recordVoting is a record's vote.
func recordVoting(v string) *string { return &v }
