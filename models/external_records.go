package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// The record lists and reviews of the external content API (api/external/openapi.yaml,
// RecordItem, ImageItem, VideoItem): an account's own fashion models and sceneries, its packshots (with the packshot jobs
// still generating theirs), its photo-shoot images and its videos and reels. Every list, and the
// product photos' (ListAccountPhotos), is newest first by (created_at, id) and answers one page
// (RecordPage): the query orders the rows and cuts the page after the record the client names
// (a keyset on (created_at, id)) and LIMIT, so a request fetches at most a page whatever the
// account holds.

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

// ErrUnknownCursor refuses a page of a record list that starts after a record the account does not
// have in that list (RecordPage.StartingAfter).
var ErrUnknownCursor = errors.New("unknown record list cursor")

// RecordPage selects a page of an external record list: at most Limit records (at least 1), those
// after the record StartingAfter in the list's newest-first (created_at, id) order ("" for the
// first page). StartingAfter is a place in that order, so it may name a record the list no longer
// shows (archived, deleted or rated otherwise since the previous page): it is looked up among all
// of the account's records of the list, whatever the list's filters; ErrUnknownCursor when the
// account has no such record.
type RecordPage struct {
	StartingAfter string
	Limit         int
}

// recordKey is a record's place in the newest-first order of the record lists. Its time may come
// from a column without a declared type (packshotRecords' UNION), hence exprTime.
type recordKey struct {
	CreatedAt exprTime
	ID        string
}

// recordKeyOf is the place of the record id among the rows q selects (created_at and id, already
// restricted to the account's records of one list); nil for id "", ErrUnknownCursor when q has no
// row of that id.
func recordKeyOf(q *gorm.DB, id string) (*recordKey, error) {
	if id == "" {
		return nil, nil
	}
	var keys []recordKey
	if err := q.Limit(1).Scan(&keys).Error; err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, ErrUnknownCursor
	}
	return &keys[0], nil
}

// olderThan restricts q to the rows after key in the newest-first order, the row's time in the
// column createdAt and its ID in id; a nil key leaves q as it is. The key's time is bound as the
// database gave it (recordKeyOf), never a client's: PostgreSQL gave microseconds, which it
// compares exactly; SQLite compares the text it stored, which the driver writes again, character
// for character, from the time it read. So a page boundary neither skips nor repeats a record on
// either database, records of the same microsecond included (id breaks the tie). The condition is
// a row comparison, which both databases compare column by column as the OR of the two cases and
// which PostgreSQL takes as the start of its walk of the list's index (an Index Cond): a later
// page reads from the cursor on, not every newer row to discard it.
func olderThan(q *gorm.DB, createdAt, id string, key *recordKey) *gorm.DB {
	if key == nil {
		return q
	}
	return q.Where("("+createdAt+", "+id+") < (?, ?)", key.CreatedAt.Time, key.ID)
}

// recordName is the SQL name of a job's record: its product's display name, else the label the
// job was ordered with, else the product's reference. pr is the job's product, j the job.
const recordName = `COALESCE(NULLIF(pr.display_name, ''), NULLIF(j.product_label, ''), NULLIF(pr.external_ref, ''), j.product_ref, '')`

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

// The job types of the record lists of jobs, as conditions on the jobs as j: GET /image-picker's,
// whose pages walk jobs_account_type (account_id, job_type, created_at, id), and GET /videos',
// written as the WHERE clause of the partial index its pages walk (jobs_account_videos_page:
// migration 0029) so that both databases read it (SQLite uses a partial index only for a query
// whose WHERE clause contains its terms).
var (
	shootJobs = fmt.Sprintf("j.job_type = '%s'", jobtype.PhotoShoot)
	videoJobs = fmt.Sprintf("j.job_type IN ('%s', '%s')", jobtype.Video, jobtype.Reel)
	// approvedShoots is /image-picker's filter approved, written as the rest of the WHERE clause of
	// the partial index its pages walk (jobs_account_shoots_approved_page: migration 0031).
	approvedShoots = fmt.Sprintf("j.voting = '%s'", VotingAccepted)
)

// The FROM of the record lists of jobs: the jobs, or /image-picker's with a photo, the packshots
// cut from the photo and then their shoots (a CROSS JOIN, which SQLite keeps in that order, as its
// planner would otherwise walk every shoot of the account to spare the photo's a sort; PostgreSQL
// plans it as any join). The shoots are found by jobs_packshot_shoots (account_id, job_type,
// packshot_id, created_at, id; migration 0031).
const (
	recordJobs    = "jobs AS j"
	shootsOfPhoto = "packshots AS ps CROSS JOIN jobs AS j"
)

// listRecordJobs lists a page of the account's jobs of the types ofTypes selects (shootJobs,
// videoJobs) that q (conditions on the jobs as j) selects, newest first, with their outputs when
// completed (first stored output per job). The page may start after any of the account's jobs of
// the types. from is the query's FROM: recordJobs, or a join that ends with it and that q's
// conditions join on (shootsOfPhoto).
func listRecordJobs(q *gorm.DB, from, accountID, ofTypes string, page RecordPage) ([]recordJob, map[string]string, error) {
	all := q.Session(&gorm.Session{NewDB: true})
	key, err := recordKeyOf(all.Table("jobs AS j").Select("j.created_at, j.id").
		Where("j.id = ? AND j.account_id = ? AND "+ofTypes, page.StartingAfter, accountID), page.StartingAfter)
	if err != nil {
		return nil, nil, err
	}
	var jobs []recordJob
	q = q.Table(from).
		Select(`j.id, `+recordName+` AS name, j.status, j.voting, j.created_at, j.input_asset_id,
			ia.thumbnail_blob_key AS input_preview, ia.purged_at AS input_purged`).
		Joins("LEFT JOIN products pr ON pr.id = j.product_id").
		Joins("LEFT JOIN assets ia ON ia.id = j.input_asset_id").
		Where("j.account_id = ? AND "+ofTypes, accountID)
	if err := olderThan(q, "j.created_at", "j.id", key).Order("j.created_at DESC, j.id DESC").Limit(page.Limit).Scan(&jobs).Error; err != nil {
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
		outputs, err := JobOutputs(all, chunk...)
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

// PackshotReview is a review of a packshot through the external API: Voting RefVotingApproved
// accepts it, RefVotingRejected clears its vote (back to pending: listed, not rated), "" leaves it;
// Archive archives it whatever its voting.
type PackshotReview struct {
	Voting  string
	Archive bool
}

// recordVoting is a record's vote.
func recordVoting(v string) *string { return &v }

// RecordNameOfJob is the name the record lists give the record of a job (recordName: its
// product's display name, else its label, else its product's reference).
func (s *Store) RecordNameOfJob(ctx context.Context, jobID string) (string, error) {
	var name string
	err := s.conn(ctx).Table("jobs AS j").Select(recordName).Joins("LEFT JOIN products pr ON pr.id = j.product_id").
		Where("j.id = ?", jobID).Scan(&name).Error
	return name, err
}

// RecordNamesOfJobs is RecordNameOfJob for several jobs in one query, by job ID.
func (s *Store) RecordNamesOfJobs(ctx context.Context, jobIDs []string) (map[string]string, error) {
	var rows []struct{ ID, Name string }
	err := s.conn(ctx).Table("jobs AS j").Select("j.id AS id, "+recordName+" AS name").
		Joins("LEFT JOIN products pr ON pr.id = j.product_id").Where("j.id IN ?", jobIDs).Scan(&rows).Error
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Name
	}
	return out, err
}
