// Package jobview is the one client-facing representation of a job: what GET
// /api/v1/plugin/jobs/{id} answers and what a job webhook carries at the top level of its body.
package jobview

import (
	"net/http"
	"time"

	"github.com/shotflow/shotflow/internal/platform/urlsign"
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
}

// Output is a generated file with a signed download URL.
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
func FilePath(assetID string) string { return "/files/" + assetID }

// ThumbnailPath is the API's download path of the thumbnail of a prepared upload.
func ThumbnailPath(assetID string) string { return "/files/" + assetID + "/thumbnail" }

// Outputs signs download URLs, valid until expires, for the files that are still stored.
func Outputs(assets []models.Asset, signer *urlsign.Signer, expires time.Time) []Output {
	out := make([]Output, 0, len(assets))
	for _, a := range assets {
		if a.PurgedAt != nil {
			continue
		}
		out = append(out, Output{AssetID: a.ID, URL: signer.URL(http.MethodGet, FilePath(a.ID), expires),
			ContentType: a.ContentType, Width: a.Width, Height: a.Height, SizeBytes: a.SizeBytes, ExpiresAt: expires})
	}
	return out
}

// New renders a job; its outputs (signed until expires) are shown only once it has completed.
func New(j *models.Job, outputs []models.Asset, signer *urlsign.Signer, expires time.Time) Job {
	v := Job{
		ID: j.ID, OrderID: j.OrderID, JobType: j.JobType, Status: j.Status, ProductRef: j.ProductRef,
		ProductLabel: j.ProductLabel, PackshotAssetID: j.InputAssetID, AIModel: j.AIModel, AspectRatio: j.AspectRatio,
		CreditCost: j.CreditCost, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory, ErrorHint: j.ErrorHint,
		Voting: j.Voting, VotingAt: j.VotingAt, Outputs: []Output{}, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt,
	}
	if j.Status == status.JobCompleted {
		v.Outputs = Outputs(outputs, signer, expires)
	}
	return v
}
