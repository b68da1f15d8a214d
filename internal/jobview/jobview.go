// Package jobview is the one client-facing representation of a job: what GET
// /api/v1/plugin/jobs/{id} answers and what a job webhook carries at the top level of its body.
package jobview

import (
	"time"

	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Job is a job as clients see it.
type Job struct {
	ID              string     `json:"id"`
	OrderID         string     `json:"order_id"`
	JobType         string     `json:"job_type"`
	Status          string     `json:"status"`
	ProductRef      string     `json:"product_ref"`
	ProductLabel    string     `json:"product_label"`
	PackshotAssetID *string    `json:"packshot_asset_id"`
	AIModel         string     `json:"ai_model"`
	AspectRatio     string     `json:"aspect_ratio"`
	CreditCost      int64      `json:"credit_cost"`
	AttemptCount    int        `json:"attempt_count"`
	ErrorCategory   *string    `json:"error_category"`
	ErrorHint       *string    `json:"error_hint"`
	Voting          string     `json:"voting"`
	VotingAt        *time.Time `json:"voting_at"`
	Outputs         []Output   `json:"outputs"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	StartedAt       *time.Time `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
	// CancelReason says why a cancelled job was cancelled: "requested" (DELETE /jobs/{id}) or
	// "deadline" (not started by its Cancel-After); null for a job that was not cancelled.
	CancelReason *string `json:"cancel_reason"`
	// CancelAfterAt is the start deadline the request's Cancel-After set; null without one.
	CancelAfterAt *time.Time `json:"cancel_after_at"`
	// Livemode is false for a job a test key created (docs/test-mode.md), true otherwise.
	Livemode bool `json:"livemode"`
}

// Output is a generated file with a download URL: the API's signed /files URL or the store's
// (fileurl.Maker).
type Output struct {
	AssetID     string    `json:"asset_id"`
	URL         string    `json:"url"`
	ContentType string    `json:"content_type"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	SizeBytes   int64     `json:"size_bytes"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// FilePath is the API's download path of an asset.
func FilePath(assetID string) string { return fileurl.FilePath(assetID) }

// ThumbnailPath is the API's download path of the thumbnail of a prepared upload.
func ThumbnailPath(assetID string) string { return fileurl.ThumbnailPath(assetID) }

// Record is the stored state of a job that its view shows, in plain values: what the engine hands
// the plugin API and what New reads off a stored job for a webhook.
type Record struct {
	ID            string
	OrderID       string
	JobType       string
	Status        string
	ProductRef    string
	ProductLabel  string
	InputAssetID  *string // the packshot (photo shoot) or photo (packshot job) the job starts from
	AIModel       string
	AspectRatio   string
	CreditCost    int64
	AttemptCount  int
	ErrorCategory *string
	ErrorHint     *string
	Voting        string
	VotingAt      *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	StartedAt     *time.Time
	CompletedAt   *time.Time
	CancelReason  *string    // why a cancelled job was cancelled (status.CancelRequested, status.CancelDeadline)
	CancelAfterAt *time.Time // its start deadline (Cancel-After)
	TestMode      bool       // created by a test key
}

// File is a generated file of a job, in plain values. Purged files are no longer stored.
type File struct {
	AssetID     string
	Key         string // its key in the blob store
	ContentType string
	Width       int
	Height      int
	SizeBytes   int64
	Purged      bool
}

// RecordOf is the record of a stored job.
func RecordOf(j *models.Job) Record {
	return Record{
		ID: j.ID, OrderID: j.OrderID, JobType: j.JobType, Status: j.Status, ProductRef: j.ProductRef,
		ProductLabel: j.ProductLabel, InputAssetID: j.InputAssetID, AIModel: j.AIModel, AspectRatio: j.AspectRatio,
		CreditCost: j.CreditCost, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory, ErrorHint: j.ErrorHint,
		Voting: j.Voting, VotingAt: j.VotingAt, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt, CancelReason: j.CancelReason, CancelAfterAt: utc(j.StartDeadline),
		TestMode: j.TestMode,
	}
}

// utc is t in UTC (nil for nil).
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// FilesOf are the files of stored output assets, in their order.
func FilesOf(assets []models.Asset) []File {
	out := make([]File, len(assets))
	for i, a := range assets {
		out[i] = File{AssetID: a.ID, Key: a.BlobKey, ContentType: a.ContentType, Width: a.Width, Height: a.Height,
			SizeBytes: a.SizeBytes, Purged: a.PurgedAt != nil}
	}
	return out
}

// Outputs makes download URLs, valid until expires (or as long as the store signs,
// fileurl.Maker.File), for the files that are still stored.
func Outputs(files []File, urls *fileurl.Maker, expires time.Time) []Output {
	out := make([]Output, 0, len(files))
	for _, f := range files {
		if f.Purged {
			continue
		}
		u, until := urls.File(fileurl.File{AssetID: f.AssetID, Key: f.Key, ContentType: f.ContentType}, expires)
		out = append(out, Output{AssetID: f.AssetID, URL: u,
			ContentType: f.ContentType, Width: f.Width, Height: f.Height, SizeBytes: f.SizeBytes, ExpiresAt: until})
	}
	return out
}

// Render shows a job; its outputs (signed until expires) are shown only once it has completed.
func Render(r Record, outputs []File, urls *fileurl.Maker, expires time.Time) Job {
	v := Job{
		ID: r.ID, OrderID: r.OrderID, JobType: r.JobType, Status: r.Status, ProductRef: r.ProductRef,
		ProductLabel: r.ProductLabel, PackshotAssetID: r.InputAssetID, AIModel: r.AIModel, AspectRatio: r.AspectRatio,
		CreditCost: r.CreditCost, AttemptCount: r.AttemptCount, ErrorCategory: r.ErrorCategory, ErrorHint: r.ErrorHint,
		Voting: r.Voting, VotingAt: r.VotingAt, Outputs: []Output{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		StartedAt: r.StartedAt, CompletedAt: r.CompletedAt, CancelReason: r.CancelReason, CancelAfterAt: r.CancelAfterAt,
		Livemode: !r.TestMode,
	}
	if r.Status != status.JobCancelled {
		v.CancelReason = nil // only a cancelled job has a reason
	}
	if r.Status == status.JobCompleted {
		v.Outputs = Outputs(outputs, urls, expires)
	}
	return v
}

// New renders a stored job (Render of its RecordOf and FilesOf), as a job webhook carries it.
func New(j *models.Job, outputs []models.Asset, urls *fileurl.Maker, expires time.Time) Job {
	return Render(RecordOf(j), FilesOf(outputs), urls, expires)
}
