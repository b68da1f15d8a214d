package models

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"

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
