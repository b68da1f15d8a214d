package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gin-gonic/gin/binding"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// Session bounds (plugin-api-v1.md leaves them to the service; api/openapi.yaml documents them).
const (
	MaxSubjectsPerSession = 100
	MaxImagesPerSubject   = 20
	maxSessionBodyBytes   = 1 << 20
)

// SessionConfig is the session_config shared by every subject of a session.
type SessionConfig struct {
	AspectRatio string `json:"aspect_ratio,omitempty" binding:"max=10"`
	Style       string `json:"style,omitempty" binding:"max=500"`
	Suggestions string `json:"suggestions,omitempty" binding:"max=2000"`
	SceneryID   string `json:"scenery_id,omitempty" binding:"max=64"`
	ModelID     string `json:"model_id,omitempty" binding:"max=64"`
}

// Subject is one product of a session.
type Subject struct {
	ProductRef           string `json:"product_ref" binding:"required,max=200"`
	ProductLabel         string `json:"product_label" binding:"max=500"`
	PackshotAssetID      string `json:"packshot_asset_id" binding:"max=64"`
	ImagesCount          int    `json:"images_count" binding:"required,min=1,max=20"`
	AIModel              string `json:"ai_model" binding:"required,max=200"`
	AutoRegisterPackshot bool   `json:"auto_register_packshot"`
}

// SessionRequest is the body of POST /jobs.
type SessionRequest struct {
	JobType       string         `json:"job_type" binding:"omitempty,oneof=photo_shoot packshot"`
	SessionConfig *SessionConfig `json:"session_config" binding:"required"`
	Subjects      []Subject      `json:"subjects" binding:"required,min=1,max=100,dive"`
}

// SessionResponse answers an accepted session.
type SessionResponse struct {
	OrderID         string            `json:"order_id"`
	Status          string            `json:"status"`
	Subjects        []SubjectResponse `json:"subjects"`
	CreditsReserved int64             `json:"credits_reserved"`
}

// SubjectResponse lists the jobs created for one subject.
type SubjectResponse struct {
	ProductRef string   `json:"product_ref"`
	JobIDs     []string `json:"job_ids"`
}

// retiredSessionFields are top-level keys of the single-job body retired in May 2026.
var retiredSessionFields = []string{"provider", "model", "unit_cost", "settings"}

const migrateSessionMessage = "This request uses the retired single-job body. Send a session instead: " +
	"{\"job_type\", \"session_config\": {aspect_ratio, style, suggestions, scenery_id, model_id}, " +
	"\"subjects\": [{\"product_ref\", \"images_count\", \"ai_model\": \"provider/model\"}]}; " +
	"ai_model replaces provider, model and unit_cost, and settings move into session_config."

func (h *Handler) createSession(c *gin.Context) {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxSessionBodyBytes+1))
	if err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "The request body could not be read.")
		return
	}
	if len(body) > maxSessionBodyBytes {
		h.Fail(c, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "The request body is larger than 1 MiB.")
		return
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if _, hasSubjects := top["subjects"]; !hasSubjects {
			for _, f := range retiredSessionFields {
				if _, ok := top[f]; ok {
					h.Fail(c, http.StatusBadRequest, CodeInvalidInput, migrateSessionMessage)
					return
				}
			}
		}
	}
	var req SessionRequest
	if err := binding.JSON.BindBody(body, &req); err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, describeBindError(err))
		return
	}
	who := caller(c)
	order, jobs, failure := h.planSession(c, who.Installation, &req)
	if failure != nil {
		h.FailWith(c, failure.status, failure.code, failure.message, failure.details)
		return
	}
	err = h.Intake.Submit(c.Request.Context(), order, jobs)
	if errors.Is(err, models.ErrInsufficientCredits) {
		var need int64
		for _, j := range jobs {
			need += j.CreditCost
		}
		h.FailWith(c, http.StatusPaymentRequired, CodeInsufficientCredits,
			fmt.Sprintf("This session costs %d credits, more than the account has available.", need),
			gin.H{"credits_required": need})
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	resp := SessionResponse{OrderID: order.ID, Status: order.Status, CreditsReserved: order.CreditsReserved}
	index := map[string]int{}
	for _, j := range jobs {
		i, ok := index[j.ProductRef]
		if !ok {
			i = len(resp.Subjects)
			index[j.ProductRef] = i
			resp.Subjects = append(resp.Subjects, SubjectResponse{ProductRef: j.ProductRef})
		}
		resp.Subjects[i].JobIDs = append(resp.Subjects[i].JobIDs, j.ID)
	}
	c.PureJSON(http.StatusCreated, resp)
}

// failure is a refused session: nothing is created.
type failure struct {
	status  int
	code    string
	message string
	details any
}

func invalid(format string, args ...any) *failure {
	return &failure{status: http.StatusBadRequest, code: CodeInvalidInput, message: fmt.Sprintf(format, args...)}
}

// planSession validates a session against the catalog and resolves each subject's approved
// packshot (rules 1–3 of plugin-api-v1.md), returning the order and jobs to create.
func (h *Handler) planSession(c *gin.Context, inst *models.Installation, req *SessionRequest) (*models.Order, []models.Job, *failure) {
	jobType := req.JobType
	if jobType == "" {
		jobType = models.JobTypePhotoShoot
	}
	cfg := *req.SessionConfig
	if cfg.AspectRatio == "" {
		cfg.AspectRatio = h.Generator.Catalog().DefaultAspectRatio()
	}
	total := 0
	seen := map[string]bool{}
	for i, s := range req.Subjects {
		if seen[s.ProductRef] {
			return nil, nil, invalid("subjects[%d].product_ref %q appears twice; give one subject per product with its images_count.", i, s.ProductRef)
		}
		seen[s.ProductRef] = true
		m, ok := h.Generator.Model(s.AIModel)
		if !ok {
			return nil, nil, invalid("subjects[%d].ai_model %q is not a model listed by GET /ai-models.", i, s.AIModel)
		}
		if !m.Serves(jobType) {
			return nil, nil, invalid("subjects[%d].ai_model %q does not generate %s jobs.", i, s.AIModel, jobType)
		}
		if !m.SupportsAspectRatio(cfg.AspectRatio) {
			return nil, nil, invalid("session_config.aspect_ratio %q is not supported by %s; it supports %s.",
				cfg.AspectRatio, s.AIModel, strings.Join(m.SupportedAspectRatios, ", "))
		}
		if jobType == models.JobTypePackshot {
			if !s.AutoRegisterPackshot {
				return nil, nil, invalid("subjects[%d].auto_register_packshot must be true for packshot jobs.", i)
			}
			if s.PackshotAssetID == "" {
				return nil, nil, invalid("subjects[%d].packshot_asset_id is required for packshot jobs: it is the input photo.", i)
			}
		}
		total += s.ImagesCount
	}

	db := h.DB.WithContext(c.Request.Context())
	now := time.Now().UTC()
	configJSON, _ := json.Marshal(cfg)
	order := &models.Order{
		ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobType, SessionConfig: models.JSON(configJSON), CorrelationID: c.GetString("request_id"),
	}
	jobs := make([]models.Job, 0, total)
	var missing []string
	for i, s := range req.Subjects {
		var product *models.Product
		var packshotID, inputAssetID *string
		if jobType == models.JobTypePackshot {
			// A packshot job starts from a plain photo: no approved packshot is needed.
			p, assetID, f, err := resolvePhotoInput(db, inst, i, s)
			if err != nil {
				_ = c.Error(err)
				return nil, nil, &failure{status: http.StatusInternalServerError, code: CodeInternal, message: "An unexpected error occurred."}
			}
			if f != nil {
				return nil, nil, f
			}
			product, inputAssetID = p, &assetID
		} else {
			p, packshot, err := resolvePackshot(db, inst, s)
			if err != nil {
				_ = c.Error(err)
				return nil, nil, &failure{status: http.StatusInternalServerError, code: CodeInternal, message: "An unexpected error occurred."}
			}
			if packshot == nil {
				missing = append(missing, s.ProductRef)
				continue
			}
			product, packshotID, inputAssetID = p, &packshot.ID, &packshot.AssetID
		}
		m, _ := h.Generator.Model(s.AIModel)
		label := s.ProductLabel
		if label == "" {
			label = product.DisplayName
		}
		for range s.ImagesCount {
			jobs = append(jobs, models.Job{
				ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, JobType: jobType,
				Position: len(jobs), ProductID: &product.ID, ProductRef: s.ProductRef, ProductLabel: label,
				PackshotID: packshotID, InputAssetID: inputAssetID, AIModel: m.ID, AspectRatio: cfg.AspectRatio,
				CreditCost: m.BaseCreditCost, Run: 1, Status: models.JobPending, Voting: models.VotingPending,
				CreatedAt: now, UpdatedAt: now,
			})
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, nil, &failure{status: http.StatusUnprocessableEntity, code: CodePackshotNotApproved,
			message: "These products have no approved packshot: " + strings.Join(missing, ", ") + ". Nothing was created and no credits were charged.",
			details: gin.H{"product_refs": missing}}
	}
	return order, jobs, nil
}

// resolvePackshot finds the subject's product and the approved packshot its jobs start from: the
// given packshot_asset_id when it is an approved packshot of that product, else the latest approved
// one. A nil packshot means there is none.
func resolvePackshot(db *gorm.DB, inst *models.Installation, s Subject) (*models.Product, *models.Packshot, error) {
	var product models.Product
	err := db.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", inst.ID, s.ProductRef).Take(&product).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	q := db.Where("product_id = ? AND installation_id = ? AND voting = ? AND deleted_at IS NULL", product.ID, inst.ID, models.VotingAccepted)
	if s.PackshotAssetID != "" {
		q = q.Where("asset_id = ?", s.PackshotAssetID)
	}
	var p models.Packshot
	err = q.Order("voting_at DESC, created_at DESC").Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return &product, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &product, &p, nil
}

// resolvePhotoInput checks the input of a packshot job: the subject's product must be in the
// catalog and packshot_asset_id must be an upload of this installation (it may still be arriving).
func resolvePhotoInput(db *gorm.DB, inst *models.Installation, i int, s Subject) (*models.Product, string, *failure, error) {
	var product models.Product
	err := db.Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", inst.ID, s.ProductRef).Take(&product).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, "", invalid("subjects[%d].product_ref %q is not in the catalog; register it with POST /images or POST /packshots.", i, s.ProductRef), nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	var asset models.Asset
	err = db.Where("id = ? AND installation_id = ? AND kind = ?", s.PackshotAssetID, inst.ID, models.AssetKindUpload).Take(&asset).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, "", invalid("subjects[%d].packshot_asset_id %q is not an upload of this installation.", i, s.PackshotAssetID), nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	return &product, asset.ID, nil, nil
}

// JobResponse is a job as the plugin API shows it.
type JobResponse struct {
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

// downloadExpiry is at least DownloadTTL from now, rounded up to the hour so that polling clients
// see the same URL for an hour.
func (h *Handler) downloadExpiry() time.Time {
	return time.Now().UTC().Add(h.DownloadTTL + time.Hour).Truncate(time.Hour)
}

// FilePath is the download path of an asset.
func FilePath(assetID string) string { return "/files/" + assetID }

func (h *Handler) jobResponse(j *models.Job, outputs []models.Asset) JobResponse {
	resp := JobResponse{
		ID: j.ID, OrderID: j.OrderID, JobType: j.JobType, Status: j.Status, ProductRef: j.ProductRef,
		ProductLabel: j.ProductLabel, PackshotAssetID: j.InputAssetID, AIModel: j.AIModel, AspectRatio: j.AspectRatio,
		CreditCost: j.CreditCost, AttemptCount: j.AttemptCount, ErrorCategory: j.ErrorCategory, ErrorHint: j.ErrorHint,
		Voting: j.Voting, VotingAt: j.VotingAt, Outputs: []Output{}, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		StartedAt: j.StartedAt, CompletedAt: j.CompletedAt,
	}
	if j.Status == models.JobCompleted {
		resp.Outputs = h.outputs(outputs)
	}
	return resp
}

func (h *Handler) outputs(assets []models.Asset) []Output {
	expires := h.downloadExpiry()
	out := make([]Output, 0, len(assets))
	for _, a := range assets {
		if a.PurgedAt != nil {
			continue
		}
		out = append(out, Output{AssetID: a.ID, URL: h.Signer.URL(http.MethodGet, FilePath(a.ID), expires),
			ContentType: a.ContentType, Width: a.Width, Height: a.Height, SizeBytes: a.SizeBytes, ExpiresAt: expires})
	}
	return out
}

// findJob loads a job of the caller's installation; another installation's job is not found.
func (h *Handler) findJob(c *gin.Context) (*models.Job, bool) {
	var j models.Job
	err := h.DB.WithContext(c.Request.Context()).
		Where("id = ? AND installation_id = ?", c.Param("id"), caller(c).Installation.ID).Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		h.Fail(c, http.StatusNotFound, CodeNotFound, "No job with this ID.")
		return nil, false
	}
	if err != nil {
		h.internal(c, err)
		return nil, false
	}
	return &j, true
}

func (h *Handler) getJob(c *gin.Context) {
	j, ok := h.findJob(c)
	if !ok {
		return
	}
	outs, err := models.JobOutputs(h.DB.WithContext(c.Request.Context()), j.ID)
	if err != nil {
		h.internal(c, err)
		return
	}
	c.PureJSON(http.StatusOK, h.jobResponse(j, outs[j.ID]))
}

// OrderResponse is GET /orders/{id}.
type OrderResponse struct {
	ID            string         `json:"id"`
	Status        string         `json:"status"`
	JobType       string         `json:"job_type"`
	SessionConfig models.JSON    `json:"session_config"`
	JobsTotal     int            `json:"jobs_total"`
	JobsCompleted int            `json:"jobs_completed"`
	JobsFailed    int            `json:"jobs_failed"`
	JobsCancelled int            `json:"jobs_cancelled"`
	JobsExpired   int            `json:"jobs_expired"`
	Products      []OrderProduct `json:"products"`
	Images        []OrderImage   `json:"images"`
	Summary       CreditSummary  `json:"summary"`
	SourceOrderID *string        `json:"source_order_id"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
	CompletedAt   *time.Time     `json:"completed_at"`
}

// OrderProduct holds the per-product counters of an order.
type OrderProduct struct {
	ProductRef    string   `json:"product_ref"`
	ProductLabel  string   `json:"product_label"`
	JobsTotal     int      `json:"jobs_total"`
	JobsCompleted int      `json:"jobs_completed"`
	JobsFailed    int      `json:"jobs_failed"`
	JobIDs        []string `json:"job_ids"`
}

// OrderImage is one generated image of an order.
type OrderImage struct {
	JobID      string `json:"job_id"`
	ProductRef string `json:"product_ref"`
	Voting     string `json:"voting"`
	Output
}

// CreditSummary is the credit movement of an order.
type CreditSummary struct {
	CreditsReserved int64 `json:"credits_reserved"`
	CreditsConsumed int64 `json:"credits_consumed"`
	CreditsReleased int64 `json:"credits_released"`
	CreditsHeld     int64 `json:"credits_held"`
}

func (h *Handler) getOrder(c *gin.Context) {
	db := h.DB.WithContext(c.Request.Context())
	var o models.Order
	err := db.Where("id = ? AND installation_id = ?", c.Param("id"), caller(c).Installation.ID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		h.Fail(c, http.StatusNotFound, CodeNotFound, "No order with this ID.")
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	var jobs []models.Job
	if err := db.Where("order_id = ?", o.ID).Order("position").Find(&jobs).Error; err != nil {
		h.internal(c, err)
		return
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	outs, err := models.JobOutputs(db, ids...)
	if err != nil {
		h.internal(c, err)
		return
	}
	resp := OrderResponse{
		ID: o.ID, Status: o.Status, JobType: o.JobType, SessionConfig: o.SessionConfig, JobsTotal: o.JobsTotal,
		JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed, JobsCancelled: o.JobsCancelled, JobsExpired: o.JobsExpired,
		Products: []OrderProduct{}, Images: []OrderImage{}, SourceOrderID: o.SourceOrderID,
		Summary: CreditSummary{CreditsReserved: o.CreditsReserved, CreditsConsumed: o.CreditsConsumed, CreditsReleased: o.CreditsReleased,
			CreditsHeld: o.CreditsReserved - o.CreditsConsumed - o.CreditsReleased},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, CompletedAt: o.CompletedAt,
	}
	index := map[string]int{}
	for _, j := range jobs {
		i, ok := index[j.ProductRef]
		if !ok {
			i = len(resp.Products)
			index[j.ProductRef] = i
			resp.Products = append(resp.Products, OrderProduct{ProductRef: j.ProductRef, ProductLabel: j.ProductLabel})
		}
		p := &resp.Products[i]
		p.JobsTotal++
		p.JobIDs = append(p.JobIDs, j.ID)
		switch j.Status {
		case models.JobCompleted:
			p.JobsCompleted++
			for _, out := range h.outputs(outs[j.ID]) {
				resp.Images = append(resp.Images, OrderImage{JobID: j.ID, ProductRef: j.ProductRef, Voting: j.Voting, Output: out})
			}
		case models.JobFailed:
			p.JobsFailed++
		}
	}
	c.PureJSON(http.StatusOK, resp)
}
