package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// The store methods of the external API's record lists and reviews (external_records.go): an
// account's own fashion models and sceneries, its packshots, photo-shoot images and videos.

// listedReferenceItems is the condition of the fashion models and sceneries GET /models and
// /sceneries list, written as the WHERE clause of the partial indexes their pages walk
// (fashion_models_account_page, sceneries_account_page: migration 0029) so that both databases
// read them: SQLite uses a partial index only for a query whose WHERE clause contains its terms.
var listedReferenceItems = fmt.Sprintf("r.status <> '%s'", RefStatusArchived)

// approvedReferenceItems is the filter approved of /models and /sceneries, written as the rest of
// the WHERE clause of the partial indexes their filtered pages walk
// (fashion_models_account_approved_page, sceneries_account_approved_page: migration 0031).
var approvedReferenceItems = fmt.Sprintf("r.voting = '%s'", RefVotingApproved)

// ListAccountReferenceItems lists a page of the account's own fashion models or sceneries (those
// it generated; never the marketplace's) that are not archived, newest first; approvedOnly keeps
// the APPROVED ones. The page may start after any of the account's items of the kind. A page
// walks the index fashion_models_account_page or sceneries_account_page from the cursor on, and
// with approvedOnly fashion_models_account_approved_page or sceneries_account_approved_page: it
// reads its own rows.
func (s *Store) ListAccountReferenceItems(ctx context.Context, kind ReferenceKind, accountID string, approvedOnly bool, page RecordPage) ([]Record, error) {
	db := s.conn(ctx)
	key, err := recordKeyOf(db.Table(kind.Table()).Select("created_at, id").
		Where("id = ? AND account_id = ?", page.StartingAfter, accountID), page.StartingAfter)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ReferenceItem
		ThumbnailPurgedAt *time.Time
	}
	q := db.Table(kind.Table()+" AS r").Select("r.*, a.purged_at AS thumbnail_purged_at").
		Joins("LEFT JOIN assets a ON a.id = r.thumbnail_asset_id").
		Where("r.account_id = ? AND "+listedReferenceItems, accountID)
	if approvedOnly {
		q = q.Where(approvedReferenceItems)
	}
	if err := olderThan(q, "r.created_at", "r.id", key).Order("r.created_at DESC, r.id DESC").Limit(page.Limit).Scan(&rows).Error; err != nil {
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

// ListAccountPackshots lists a page of the account's packshots that are neither deleted nor
// archived (DONE, voting APPROVED for an accepted one, REJECTED for a rejected one, null while
// pending), and the account's packshot jobs whose packshot does not exist yet (INPROGRESS or
// FAILED, not rated), under the record ID the job was given, newest first. A packshot made by a
// job is dated by its job, so a record keeps its createdAt and its place in the list when it
// becomes DONE. approvedOnly keeps the accepted packshots. The page may start after any of the
// account's packshot records, archived and deleted ones included.
//
// Each branch of the list (packshotRecords) is cut to a page of its own, after the cursor, and the
// page is the newest of both: a branch walks its index from the cursor on and stops at the page's
// size, and PostgreSQL merges the two ordered pages (Merge Append). A branch reads its own rows:
// with approvedOnly the packshots branch alone, on the index of the accepted packshots
// (packshots_account_approved_page, migration 0031), and the jobs branch's index holds only the
// packshot jobs whose packshot was not made (record_made_at, migration 0030). (A branch of a UNION ALL that joins is planned on its own, for no order: cut only by
// the outer query, each branch would be read whole and sorted.)
func (s *Store) ListAccountPackshots(ctx context.Context, accountID string, approvedOnly bool, page RecordPage) ([]Record, error) {
	db := s.conn(ctx)
	made, making := packshotRecords(db, accountID, false, false)
	key, err := recordKeyOf(db.Table("(?) AS l", db.Raw("? UNION ALL ?", made, making)).Select("l.created_at, l.id").
		Where("l.id = ?", page.StartingAfter), page.StartingAfter)
	if err != nil {
		return nil, err
	}
	pageOf := func(branch *gorm.DB) *gorm.DB {
		return olderThan(db.Table("(?) AS b", branch), "b.created_at", "b.id", key).
			Order("b.created_at DESC, b.id DESC").Limit(page.Limit)
	}
	made, making = packshotRecords(db, accountID, true, approvedOnly)
	records := pageOf(made)
	if making != nil {
		records = db.Raw("SELECT * FROM (?) AS m UNION ALL SELECT * FROM (?) AS n", pageOf(made), pageOf(making))
	}
	// The columns of a UNION in FROM have no declared type on SQLite, so its times are exprTime.
	var rows []struct {
		ID        string
		Name      string
		Voting    string
		CreatedAt exprTime
		JobStatus string
		AssetID   string
		PurgedAt  exprTime // zero when NULL
	}
	err = db.Table("(?) AS l", records).Select("l.*, a.purged_at AS purged_at").
		Joins("LEFT JOIN assets a ON a.id = l.asset_id").
		Order("l.created_at DESC, l.id DESC").Limit(page.Limit).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(rows))
	for _, p := range rows {
		rec := Record{ID: p.ID, Name: p.Name, Status: RefStatusDone, CreatedAt: p.CreatedAt.Time}
		switch {
		case p.JobStatus != "": // a job without its packshot
			if rec.Status = RecordStatus(p.JobStatus); rec.Status == RefStatusDone {
				rec.Status = RefStatusFailed // completed without a file: it never gets a packshot
			}
		case p.Voting == VotingAccepted:
			rec.Voting = recordVoting(RefVotingApproved)
		case p.Voting == VotingRejected:
			rec.Voting = recordVoting(RefVotingRejected)
		}
		if p.JobStatus == "" && p.PurgedAt.IsZero() {
			rec.Thumbnail.AssetID = p.AssetID
		}
		out = append(out, rec)
	}
	return out, nil
}

// The conditions of the packshot records GET /packshots lists, written as the WHERE clauses of the
// partial indexes its two branches walk (migration 0029) so that both databases read them: SQLite
// uses a partial index only for a query whose WHERE clause contains its terms.
var (
	// listedPackshots: packshots_account_page; with approvedPackshots:
	// packshots_account_approved_page (migration 0031).
	listedPackshots   = "p.deleted_at IS NULL AND p.archived_at IS NULL"
	approvedPackshots = fmt.Sprintf("p.voting = '%s'", VotingAccepted)
	// packshotJobRecords, unmadePackshotJobs and with listedPackshotJobs: jobs_packshot_records_page.
	packshotJobRecords = fmt.Sprintf("j.job_type = '%s' AND j.record_id IS NOT NULL", jobtype.Packshot)
	listedPackshotJobs = "j.record_archived_at IS NULL"
	// unmadePackshotJobs: the packshot jobs whose packshot does not exist. record_made_at (migration
	// 0030), set in the transaction that makes the packshot, leaves the others out of the index;
	// the NOT EXISTS, one probe of packshots' primary key per job the index gives, states the
	// condition itself, so the list answers it whatever a job's row says.
	unmadePackshotJobs = "j.record_made_at IS NULL AND NOT EXISTS (SELECT 1 FROM packshots p WHERE p.id = j.record_id)"
)

// packshotRecords selects the account's packshot records (id, name, voting, created_at,
// job_status, asset_id) in two branches: made, its packshots, dated by the job that made them when
// one did (record_created_at; job_status ""), and making, its packshot jobs whose packshot does
// not exist yet (job_status the job's, under the job's record ID; asset_id ""). listed keeps those
// GET /packshots shows (packshots neither deleted nor archived, jobs whose record is not
// archived); approvedOnly keeps the accepted packshots alone (making is nil). Listed, each branch
// has an index in the list's order under the account: packshots_account_page on
// (account_id, record_created_at, id), jobs_packshot_records_page on
// (account_id, created_at, record_id) of the packshot jobs whose packshot was not made.
func packshotRecords(db *gorm.DB, accountID string, listed, approvedOnly bool) (made, making *gorm.DB) {
	made = db.Table("packshots AS p").
		Select(`p.id AS id, COALESCE(NULLIF(pr.display_name, ''), pr.external_ref, '') AS name, p.voting AS voting,
			p.record_created_at AS created_at, '' AS job_status, p.asset_id AS asset_id`).
		Joins("LEFT JOIN products pr ON pr.id = p.product_id").
		Where("p.account_id = ?", accountID)
	if listed {
		made = made.Where(listedPackshots)
	}
	if approvedOnly {
		return made.Where(approvedPackshots), nil
	}
	making = db.Table("jobs AS j").
		Select(`j.record_id AS id, `+recordName+` AS name, '' AS voting, j.created_at AS created_at, j.status AS job_status,
			'' AS asset_id`).
		Joins("LEFT JOIN products pr ON pr.id = j.product_id").
		Where("j.account_id = ? AND "+packshotJobRecords, accountID).
		Where(unmadePackshotJobs)
	if listed {
		making = making.Where(listedPackshotJobs)
	}
	return made, making
}

// ListAccountShoots lists a page of the account's photo-shoot images (photo_shoot jobs of either
// API), newest first, with voting accepted, rejected or null (never pending) and the first output
// as the thumbnail once DONE. approvedOnly keeps the accepted ones; a photoID keeps the shoots of
// packshots cut from that product photo. The page may start after any of the account's shoots. A
// page walks an index from the cursor on and reads its own rows: jobs_account_type, or with
// approvedOnly jobs_account_shoots_approved_page (migration 0031). With a photoID it reads the
// photo's shoots instead, by their packshots (jobs_packshot_shoots, 0031), and orders those:
// however many shoots the account has, a page reads those of the photo after the cursor.
func (s *Store) ListAccountShoots(ctx context.Context, accountID string, approvedOnly bool, photoID string, page RecordPage) ([]Record, error) {
	q := s.conn(ctx)
	if approvedOnly {
		q = q.Where(approvedShoots)
	}
	from := recordJobs
	if photoID != "" {
		from = shootsOfPhoto
		q = q.Where("ps.source_image_id = ? AND ps.account_id = ? AND j.packshot_id = ps.id", photoID, accountID)
	}
	jobs, outputs, err := listRecordJobs(q, from, accountID, shootJobs, page)
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

// ListAccountVideos lists a page of the account's videos and reels, newest first: the video is the
// first output once DONE, the thumbnail then the job's first input image (its preview when it has
// one), voting APPROVED, REJECTED or null. A page walks the index jobs_account_videos_page from
// the cursor on.
func (s *Store) ListAccountVideos(ctx context.Context, accountID string, page RecordPage) ([]Record, error) {
	jobs, outputs, err := listRecordJobs(s.conn(ctx), recordJobs, accountID, videoJobs, page)
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
		livePackshot := func() error {
			return tx.Clauses(clause.Locking{Strength: "UPDATE"}).
				Where("id = ? AND account_id = ? AND deleted_at IS NULL AND archived_at IS NULL", id, accountID).Take(&p).Error
		}
		err := livePackshot()
		if errors.Is(err, gorm.ErrRecordNotFound) && review.Archive {
			// The spec archives a record in any state, regardless of voting: a vote sent with the
			// archive has nothing to apply to before the packshot exists, and the archive stands.
			made, err := archiveJobRecord(tx, accountID, id, now)
			if err != nil || !made {
				return err
			}
			// The packshot was made while this waited for its job's row: the whole review applies
			// to it, as it would have a moment later, its vote included.
			err = livePackshot()
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound // removed or archived by another request meanwhile
			}
			if err != nil {
				return err
			}
		} else if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		} else if err != nil {
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
// locks it. made reports a packshot created while this waited, which this leaves to the caller:
// nothing is written then, and the caller reviews the packshot itself. ErrNotFound when the
// account has no such record, or it is archived already.
func archiveJobRecord(tx *gorm.DB, accountID, id string, now time.Time) (made bool, err error) {
	var j Job
	err = tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "record_archived_at").
		Where("record_id = ? AND account_id = ? AND job_type = ?", id, accountID, jobtype.Packshot).
		Order("created_at DESC, id DESC").Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && j.RecordArchivedAt != nil) {
		return false, ErrNotFound
	}
	if err != nil {
		return false, err
	}
	var n int64
	if err := tx.Model(&Packshot{}).Where("id = ? AND account_id = ?", id, accountID).Count(&n).Error; err != nil {
		return false, err
	}
	if n > 0 {
		return true, nil
	}
	return false, tx.Model(&Job{}).Where("id = ?", j.ID).Update("record_archived_at", now).Error
}
