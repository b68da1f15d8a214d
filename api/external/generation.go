package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/models"
)

// Limits of the register-* routes (external-content-api.md, Limits).
const (
	DefaultIdeaCount = 10 // models, sceneries, photo-shoot images and packshots per request by default
	MaxIdeaCount     = 20 // models, sceneries and photo-shoot images per request
	MaxPackshotCount = 50 // packshots per request
	MaxReelImages    = 10 // images of a reel
	maxTextLen       = 2000
)

// DefaultSceneryID is the scenery a photo shoot uses when its preset recommends a scenery and the
// request names none: the marketplace's "White marble countertop".
const DefaultSceneryID = "8c4e3d43-4a63-469d-b601-22b6bf85d70c"

// GenerationResponse answers every register-* route. Each request is one order, so BatchID (the
// batch of records it created) equals OrderID; ReservationID names the order's credit reservation.
type GenerationResponse struct {
	CreatedRecordIDs []string `json:"createdRecordIds"`
	BatchID          string   `json:"batchId"`
	OrderID          string   `json:"orderId"`
	ReservationID    string   `json:"reservationId"`
	CreditsReserved  int64    `json:"creditsReserved"`
}

// registerGeneration mounts the register-* routes.
func (h *Handler) registerGeneration(add route) {
	post, body := http.MethodPost, inputcheck.JSONBody(maxJSONBody)
	add(post, "/models/register-ideas", body, ScopeRegister, h.registerIdeas(models.JobTypeModelIdea, models.KindFashionModel))
	add(post, "/sceneries/register-ideas", body, ScopeRegister, h.registerIdeas(models.JobTypeSceneryIdea, models.KindScenery))
	add(post, "/packshots/register-ideas", body, ScopeRegister, h.registerPackshots)
	add(post, "/image-picker/register-ideas", body, ScopeRegister, h.registerPhotoShoot)
	add(post, "/video-picker/register-videos", body, ScopeRegister, h.registerVideo)
	add(post, "/reel/register-reel", body, ScopeRegister, h.registerReel)
}

// refusal is a client error of a generation request: its status and {error} text, and for a 422
// the errors object of the envelope.
type refusal struct {
	status  int
	message string
	errors  gin.H
}

func (r *refusal) Error() string { return r.message }

func refuse(status int, format string, args ...any) *refusal {
	return &refusal{status: status, message: fmt.Sprintf(format, args...)}
}

// answer writes a refusal, or a 500 for any other error.
func (h *Handler) answer(c *gin.Context, err error) {
	var r *refusal
	if !errors.As(err, &r) {
		h.internal(c, err)
		return
	}
	if r.status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "30")
	}
	if r.errors != nil {
		c.AbortWithStatusJSON(r.status, gin.H{"error": r.message, "errors": r.errors})
		return
	}
	h.fail(c, r.status, r.message)
}

// decode reads a JSON object body into dst, refusing malformed JSON, unknown fields and values of
// the wrong type with a 400 that names the field.
func decode(c *gin.Context, dst any) error {
	raw, err := io.ReadAll(c.Request.Body) // Input held it to maxJSONBody
	if err != nil {
		return refuse(http.StatusBadRequest, "The body could not be read.")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		if dec.More() {
			return refuse(http.StatusBadRequest, "The body must be a single JSON object.")
		}
		return nil
	case errors.As(err, &typeErr):
		return refuse(http.StatusBadRequest, "%s must be %s.", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return refuse(http.StatusBadRequest, "Unknown field %s.", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return refuse(http.StatusBadRequest, "The body is not a valid JSON object.")
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "of another type"
}

// count checks an optional count: the default when absent, else 1 to max.
func count(field string, v *int, max int) (int, error) {
	if v == nil {
		return min(DefaultIdeaCount, max), nil
	}
	if *v < 1 || *v > max {
		return 0, refuse(http.StatusBadRequest, "%s must be between 1 and %d.", field, max)
	}
	return *v, nil
}

// text checks a free-text field: trimmed, at most maxTextLen characters, required or not.
func text(field string, v *string, required bool) (string, error) {
	s := ""
	if v != nil {
		s = strings.TrimSpace(*v)
	}
	if s == "" && required {
		return "", refuse(http.StatusBadRequest, "%s is required.", field)
	}
	if utf8.RuneCountInString(s) > maxTextLen {
		return "", refuse(http.StatusBadRequest, "%s may be at most %d characters.", field, maxTextLen)
	}
	return s, nil
}

// id checks a record ID field: present (when required) and a UUID.
func id(field string, v *string, required bool) (string, error) {
	if v == nil || *v == "" {
		if required {
			return "", refuse(http.StatusBadRequest, "%s is required.", field)
		}
		return "", nil
	}
	if !models.IsUUID(*v) {
		return "", refuse(http.StatusBadRequest, "%s %q is not a valid id.", field, *v)
	}
	return *v, nil
}

// ref is {"id": "..."} in a generation config.
type ref struct {
	ID *string `json:"id"`
}

func (r *ref) id() *string {
	if r == nil {
		return nil
	}
	return r.ID
}

// plan is what a register-* route creates: the order, its jobs, the records created beside them
// and the IDs the answer lists.
type plan struct {
	order     *models.Order
	jobs      []models.Job
	records   func(tx *gorm.DB) error // inserts the records that exist before their job ran
	recordIDs []string
	aspect    string
}

// newPlan starts an order of the key's account for the job type with the request's config.
func (h *Handler) newPlan(c *gin.Context, jobType string, config any) *plan {
	cfg, _ := json.Marshal(config)
	return &plan{aspect: h.Generator.Catalog().DefaultAspectRatio(), order: &models.Order{
		ID: models.NewID(), AccountID: key(c).AccountID, API: models.APIExternal, JobType: jobType,
		SessionConfig: models.JSON(cfg), CorrelationID: reqctx.CorrelationID(c),
	}}
}

// add appends n jobs built by job (given the job's index) with the model and a surcharge per job.
func (p *plan) add(n int, m models.AIModel, surcharge int64, job func(i int, j *models.Job)) {
	now := time.Now().UTC()
	for i := range n {
		j := models.Job{
			ID: models.NewID(), AccountID: p.order.AccountID, JobType: p.order.JobType, Position: len(p.jobs),
			AIModel: m.ID, AspectRatio: p.aspect, CreditCost: m.BaseCreditCost + surcharge, Run: 1,
			Status: models.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now,
		}
		job(i, &j)
		p.jobs = append(p.jobs, j)
	}
}

// model resolves the generation model of a job type (of the provider when not empty) and checks
// that a worker generates with its provider right now: 422 when no model serves the job type,
// 503 when its provider has no active generator.
func (h *Handler) model(ctx context.Context, jobType, provider string) (models.AIModel, error) {
	m, ok := h.Generator.DefaultModel(jobType, provider)
	if !ok {
		r := refuse(http.StatusUnprocessableEntity, "No generation model is available for %s; nothing was created.", strings.ReplaceAll(jobType, "_", " "))
		r.errors = gin.H{"modelNotResolved": gin.H{"details": []string{"no_generation_model"}, "jobType": jobType}}
		return m, r
	}
	live, err := h.Engine.GeneratorLive(ctx, m.Provider)
	if err != nil {
		h.Log.Warn("generator liveness", zap.String("provider", m.Provider), zap.Error(err))
	}
	if !live {
		return m, refuse(http.StatusServiceUnavailable, "No %s generator is running right now; nothing was created. Retry in 30 to 60 seconds.", m.Provider)
	}
	return m, nil
}

// submit creates the plan's order, jobs and records and reserves their credits in one transaction,
// starts the order and answers the generation response: 402 with nothing created when the
// balance is short.
func (h *Handler) submit(c *gin.Context, p *plan) {
	ctx := c.Request.Context()
	err := h.Engine.SubmitWith(ctx, p.order, p.jobs, p.records)
	if errors.Is(err, models.ErrInsufficientCredits) {
		var need int64
		for _, j := range p.jobs {
			need += j.CreditCost
		}
		acc, aerr := models.GetAccount(h.DB.WithContext(ctx), p.order.AccountID)
		if aerr != nil {
			h.internal(c, aerr)
			return
		}
		h.fail(c, http.StatusPaymentRequired, fmt.Sprintf("Insufficient credits: this request needs %d and %d are available; nothing was created.", need, acc.CreditBalance))
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	if p.recordIDs == nil {
		for _, j := range p.jobs {
			p.recordIDs = append(p.recordIDs, j.ID)
		}
	}
	h.Log.Info("generation accepted", zap.String("correlation_id", p.order.CorrelationID),
		zap.String("order_id", p.order.ID), zap.String("account_id", p.order.AccountID),
		zap.String("job_type", p.order.JobType), zap.Int("jobs", len(p.jobs)), zap.Int64("credits_reserved", p.order.CreditsReserved))
	c.PureJSON(http.StatusOK, GenerationResponse{
		CreatedRecordIDs: p.recordIDs, BatchID: p.order.ID, OrderID: p.order.ID,
		ReservationID: models.ReservationID(p.order.ID), CreditsReserved: p.order.CreditsReserved,
	})
}

// ---- models/register-ideas, sceneries/register-ideas -------------------------------------------

// IdeasRequest is the body of models/register-ideas and sceneries/register-ideas.
type IdeasRequest struct {
	Preferences *string `json:"preferences"`
	Count       *int    `json:"count"`
}

// registerIdeas creates count fashion models or sceneries (INPROGRESS until their job is DONE)
// from the preferences text.
func (h *Handler) registerIdeas(jobType string, kind models.ReferenceKind) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req IdeasRequest
		if err := decode(c, &req); err != nil {
			h.answer(c, err)
			return
		}
		prefs, err := text("preferences", req.Preferences, true)
		if err != nil {
			h.answer(c, err)
			return
		}
		n, err := count("count", req.Count, MaxIdeaCount)
		if err != nil {
			h.answer(c, err)
			return
		}
		m, err := h.model(c.Request.Context(), jobType, "")
		if err != nil {
			h.answer(c, err)
			return
		}
		p := h.newPlan(c, jobType, gin.H{"preferences": prefs, "count": n})
		items := make([]models.ReferenceItem, n)
		p.add(n, m, 0, func(i int, j *models.Job) {
			items[i] = models.ReferenceItem{ID: models.NewID(), AccountID: &p.order.AccountID,
				Name: ideaName(prefs, i+1, n), Preferences: prefs, Status: models.RefStatusInProgress,
				OrderID: &p.order.ID, JobID: &j.ID}
			j.Prompt, j.RecordID, j.ProductLabel = prefs, &items[i].ID, items[i].Name
			p.recordIDs = append(p.recordIDs, items[i].ID)
		})
		p.records = func(tx *gorm.DB) error {
			for i := range items {
				if err := models.CreateReferenceItem(tx, kind, &items[i]); err != nil {
					return err
				}
			}
			return nil
		}
		h.submit(c, p)
	}
}

// ideaName names the i-th of n ideas after the preferences: "<preferences> #i".
func ideaName(prefs string, i, n int) string {
	name := prefs
	if utf8.RuneCountInString(name) > 60 {
		name = strings.TrimSpace(string([]rune(name)[:59])) + "…"
	}
	if n > 1 {
		name = fmt.Sprintf("%s #%d", name, i)
	}
	return name
}

// ---- packshots/register-ideas ------------------------------------------------------------------

// GenerationConfig is the config of packshots/register-ideas and image-picker/register-ideas.
type GenerationConfig struct {
	Product     *ref    `json:"product"`
	Preset      *ref    `json:"preset"`
	Scenery     *ref    `json:"scenery"`
	Model       *ref    `json:"model"`
	Industry    *string `json:"industry"`
	Suggestions *string `json:"suggestions"`
}

// ConfigRequest is the body of packshots/register-ideas and image-picker/register-ideas.
type ConfigRequest struct {
	Config *GenerationConfig `json:"config"`
	Count  *int              `json:"count"`
}

// configured is a checked ConfigRequest: the product photo, the optional extras, the count and
// the prompt text of industry and suggestions.
type configured struct {
	photoID     string
	photo       *photo
	extras      extras
	suggestions string
	count       int
}

// readConfigRequest decodes and checks a ConfigRequest of at most maxCount records: 400 for bad
// values, 404 for a product photo, preset, scenery or model the account cannot use.
func (h *Handler) readConfigRequest(c *gin.Context, maxCount int) (*configured, error) {
	var req ConfigRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.Config == nil {
		return nil, refuse(http.StatusBadRequest, "config.product.id is required.")
	}
	photoID, err := id("config.product.id", req.Config.Product.id(), true)
	if err != nil {
		return nil, err
	}
	n, err := count("count", req.Count, maxCount)
	if err != nil {
		return nil, err
	}
	industry, err := text("config.industry", req.Config.Industry, false)
	if err != nil {
		return nil, err
	}
	suggestions, err := text("config.suggestions", req.Config.Suggestions, false)
	if err != nil {
		return nil, err
	}
	ctx, accountID := c.Request.Context(), key(c).AccountID
	ph, err := h.findPhoto(ctx, accountID, "config.product.id", photoID)
	if err != nil {
		return nil, err
	}
	x, err := h.resolveExtras(ctx, accountID, req.Config)
	if err != nil {
		return nil, err
	}
	return &configured{photoID: photoID, photo: ph, extras: x, count: n,
		suggestions: strings.TrimSpace(industry + " " + suggestions)}, nil
}

// photo is a product photo of the account with its product.
type photo struct {
	image   models.ProductImage
	product models.Product
	asset   models.Asset
}

// findPhoto loads a product photo of the account (GET /products): 404 when there is none, 400
// when its upload is unusable.
func (h *Handler) findPhoto(ctx context.Context, accountID, field, photoID string) (*photo, error) {
	db := h.DB.WithContext(ctx)
	var p photo
	err := db.Where("id = ? AND account_id = ? AND deleted_at IS NULL", photoID, accountID).Take(&p.image).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(http.StatusNotFound, "%s: product photo %s not found.", field, photoID)
	}
	if err != nil {
		return nil, err
	}
	if err := db.Where("id = ? AND deleted_at IS NULL", p.image.ProductID).Take(&p.product).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(http.StatusNotFound, "%s: product photo %s not found.", field, photoID)
	} else if err != nil {
		return nil, err
	}
	if err := db.Where("id = ?", p.image.AssetID).Take(&p.asset).Error; err != nil {
		return nil, err
	}
	switch p.asset.Status {
	case models.AssetReady, models.AssetProcessing: // a job waits for a photo still being prepared
	case models.AssetInvalid:
		return nil, refuse(http.StatusBadRequest, "%s: product photo %s cannot be used: %s.", field, photoID, p.asset.Problem)
	default:
		return nil, refuse(http.StatusBadRequest, "%s: product photo %s has not been uploaded yet.", field, photoID)
	}
	return &p, nil
}

// extras are the optional preset, scenery and fashion model of a config, resolved.
type extras struct {
	preset    *models.Preset
	sceneryID string
	modelID   string
}

// resolveExtras checks the config's optional preset, scenery and model: each must be one the
// account may use (404 otherwise).
func (h *Handler) resolveExtras(ctx context.Context, accountID string, cfg *GenerationConfig) (extras, error) {
	var x extras
	db := h.DB.WithContext(ctx)
	presetID, err := id("config.preset.id", cfg.Preset.id(), false)
	if err != nil {
		return x, err
	}
	if presetID != "" {
		var p models.Preset
		err := db.Where("id = ? AND status = ? AND (visibility = ? OR account_id = ?)", presetID,
			models.PresetPublished, models.PresetPublic, accountID).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return x, refuse(http.StatusNotFound, "config.preset.id: preset %s not found.", presetID)
		}
		if err != nil {
			return x, err
		}
		x.preset = &p
	}
	for _, f := range []struct {
		field string
		v     *string
		kind  models.ReferenceKind
		out   *string
	}{
		{"config.scenery.id", cfg.Scenery.id(), models.KindScenery, &x.sceneryID},
		{"config.model.id", cfg.Model.id(), models.KindFashionModel, &x.modelID},
	} {
		v, err := id(f.field, f.v, false)
		if err != nil {
			return x, err
		}
		if v == "" {
			continue
		}
		if _, err := models.FindUsableReferenceItem(db, f.kind, accountID, v); errors.Is(err, models.ErrNotFound) {
			return x, refuse(http.StatusNotFound, "%s: %s %s not found.", f.field, f.kind, v)
		} else if err != nil {
			return x, err
		}
		*f.out = v
	}
	return x, nil
}

// session is the order's session_config, which providers read.
func (x extras) session(suggestions string) gin.H {
	out := gin.H{}
	if x.preset != nil {
		out["preset_id"], out["style"] = x.preset.ID, x.preset.Name
	}
	if x.sceneryID != "" {
		out["scenery_id"] = x.sceneryID
	}
	if x.modelID != "" {
		out["model_id"] = x.modelID
	}
	if suggestions != "" {
		out["suggestions"] = suggestions
	}
	return out
}

func (x extras) surcharge() int64 {
	if x.preset == nil {
		return 0
	}
	return x.preset.CreditCost
}

// registerPackshots creates count packshots of a product photo; each is listed INPROGRESS under
// its record ID until its job completes.
func (h *Handler) registerPackshots(c *gin.Context) {
	r, err := h.readConfigRequest(c, MaxPackshotCount)
	if err != nil {
		h.answer(c, err)
		return
	}
	m, err := h.model(c.Request.Context(), models.JobTypePackshot, "")
	if err != nil {
		h.answer(c, err)
		return
	}
	session := r.extras.session(r.suggestions)
	session["product_photo_id"], session["count"] = r.photoID, r.count
	p := h.newPlan(c, models.JobTypePackshot, session)
	ph := r.photo
	p.add(r.count, m, r.extras.surcharge(), func(_ int, j *models.Job) {
		recordID := models.NewID()
		j.ProductID, j.ProductRef, j.ProductLabel = &ph.product.ID, ph.product.ExternalRef, productName(&ph.product)
		j.InputAssetID, j.RecordID = &ph.asset.ID, &recordID
		p.recordIDs = append(p.recordIDs, recordID)
	})
	h.submit(c, p)
}

func productName(p *models.Product) string {
	if p.DisplayName != "" {
		return p.DisplayName
	}
	return p.ExternalRef
}

// ---- image-picker/register-ideas ---------------------------------------------------------------

// registerPhotoShoot creates count photo-shoot images of a product photo from that photo's own
// accepted packshot (rules 1–4 of external-content-api.md).
func (h *Handler) registerPhotoShoot(c *gin.Context) {
	ctx := c.Request.Context()
	r, err := h.readConfigRequest(c, MaxIdeaCount)
	if err != nil {
		h.answer(c, err)
		return
	}
	accountID, photoID, x := key(c).AccountID, r.photoID, r.extras
	if x.preset != nil && x.sceneryID == "" && x.preset.SceneryRequirement != nil {
		switch *x.preset.SceneryRequirement {
		case models.SceneryRequired:
			h.answer(c, refuse(http.StatusBadRequest, "config.scenery.id is required: preset %q needs a scenery.", x.preset.Name))
			return
		case models.SceneryRecommended:
			if _, err := models.FindUsableReferenceItem(h.DB.WithContext(ctx), models.KindScenery, accountID, DefaultSceneryID); err == nil {
				x.sceneryID = DefaultSceneryID
			}
		}
	}
	session := x.session(r.suggestions)
	// Rule 2: that photo's own accepted packshot, never one of another photo of the product.
	var packshot models.Packshot
	err = h.DB.WithContext(ctx).Where("account_id = ? AND source_image_id = ? AND voting = ? AND deleted_at IS NULL AND archived_at IS NULL",
		accountID, photoID, models.VotingAccepted).Order("voting_at DESC, created_at DESC, id DESC").Take(&packshot).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		r := refuse(http.StatusUnprocessableEntity, "Product photo %s has no approved packshot: approve one of its packshots first (packshots/update-packshot with Voting APPROVED). Nothing was created and no credits were reserved.", photoID)
		r.errors = gin.H{"prerequisiteNotMet": gin.H{"details": []string{"packshot_not_approved"}, "productId": photoID}}
		h.answer(c, r)
		return
	}
	if err != nil {
		h.internal(c, err)
		return
	}
	m, err := h.model(ctx, models.JobTypePhotoShoot, "")
	if err != nil {
		h.answer(c, err)
		return
	}
	session["product_photo_id"], session["packshot_id"], session["count"] = photoID, packshot.ID, r.count
	p := h.newPlan(c, models.JobTypePhotoShoot, session)
	ph := r.photo
	p.add(r.count, m, x.surcharge(), func(_ int, j *models.Job) {
		j.ProductID, j.ProductRef, j.ProductLabel = &ph.product.ID, ph.product.ExternalRef, productName(&ph.product)
		j.PackshotID, j.InputAssetID = &packshot.ID, &packshot.AssetID
	})
	h.submit(c, p)
}

// ---- video-picker/register-videos, reel/register-reel ------------------------------------------

// VideoRequest is the body of video-picker/register-videos.
type VideoRequest struct {
	ImageID          *string `json:"imageId"`
	GeneratedImageID *string `json:"generatedImageId"`
	Suggestion       *string `json:"suggestion"`
	Provider         *string `json:"provider"`
}

// ReelRequest is the body of reel/register-reel.
type ReelRequest struct {
	ImagesIDs []string `json:"imagesIds"`
}

// source is an image a video starts from, with the product it shows when known.
type source struct {
	assetID string
	product *models.Product
}

// findImage resolves the ID of a product photo (GET /products) or of a DONE photo-shoot image
// (GET /image-picker) of the account to the image a video starts from.
func (h *Handler) findImage(ctx context.Context, accountID, field, imageID string, generated bool) (*source, error) {
	if !generated {
		ph, err := h.findPhoto(ctx, accountID, field, imageID)
		if err != nil {
			return nil, err
		}
		return &source{assetID: ph.asset.ID, product: &ph.product}, nil
	}
	db := h.DB.WithContext(ctx)
	var j models.Job
	err := db.Where("id = ? AND account_id = ? AND job_type = ?", imageID, accountID, models.JobTypePhotoShoot).Take(&j).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, refuse(http.StatusNotFound, "%s: image %s not found.", field, imageID)
	}
	if err != nil {
		return nil, err
	}
	outputs, err := models.JobOutputs(db, j.ID)
	if err != nil {
		return nil, err
	}
	if j.Status != models.JobCompleted || len(outputs[j.ID]) == 0 {
		return nil, refuse(http.StatusBadRequest, "%s: image %s is not DONE yet.", field, imageID)
	}
	s := &source{assetID: outputs[j.ID][0].ID}
	if j.ProductID != nil {
		var p models.Product
		if err := db.Where("id = ?", *j.ProductID).Take(&p).Error; err == nil {
			s.product = &p
		}
	}
	return s, nil
}

// findAnyImage resolves an ID that names either a product photo or a photo-shoot image.
func (h *Handler) findAnyImage(ctx context.Context, accountID, field, imageID string) (*source, error) {
	s, err := h.findImage(ctx, accountID, field, imageID, false)
	var r *refusal
	if errors.As(err, &r) && r.status == http.StatusNotFound {
		s, err = h.findImage(ctx, accountID, field, imageID, true)
		if errors.As(err, &r) && r.status == http.StatusNotFound {
			return nil, refuse(http.StatusNotFound, "%s: no product photo or photo-shoot image %s.", field, imageID)
		}
	}
	return s, err
}

// registerVideo creates one video of a product photo or of a photo-shoot image.
func (h *Handler) registerVideo(c *gin.Context) {
	ctx := c.Request.Context()
	var req VideoRequest
	if err := decode(c, &req); err != nil {
		h.answer(c, err)
		return
	}
	hasImage, hasGenerated := req.ImageID != nil && *req.ImageID != "", req.GeneratedImageID != nil && *req.GeneratedImageID != ""
	if hasImage == hasGenerated {
		h.answer(c, refuse(http.StatusBadRequest, "Send exactly one of imageId and generatedImageId."))
		return
	}
	field, v := "imageId", req.ImageID
	if hasGenerated {
		field, v = "generatedImageId", req.GeneratedImageID
	}
	imageID, err := id(field, v, true)
	if err != nil {
		h.answer(c, err)
		return
	}
	suggestion, err := text("suggestion", req.Suggestion, false)
	if err != nil {
		h.answer(c, err)
		return
	}
	provider := ""
	if req.Provider != nil {
		provider = strings.TrimSpace(*req.Provider)
		if _, ok := h.Generator.DefaultModel(models.JobTypeVideo, provider); provider != "" && !ok {
			h.answer(c, refuse(http.StatusBadRequest, "provider %q does not generate videos here; available: %s.", provider, strings.Join(h.videoProviders(), ", ")))
			return
		}
	}
	accountID := key(c).AccountID
	src, err := h.findImage(ctx, accountID, field, imageID, hasGenerated)
	if err != nil {
		h.answer(c, err)
		return
	}
	m, err := h.model(ctx, models.JobTypeVideo, provider)
	if err != nil {
		h.answer(c, err)
		return
	}
	config := gin.H{field: imageID, "provider": m.Provider}
	if suggestion != "" {
		config["suggestions"] = suggestion
	}
	p := h.newPlan(c, models.JobTypeVideo, config)
	p.add(1, m, 0, func(_ int, j *models.Job) {
		j.Prompt = suggestion
		j.SetInputs([]string{src.assetID})
		if src.product != nil {
			j.ProductID, j.ProductRef, j.ProductLabel = &src.product.ID, src.product.ExternalRef, productName(src.product)
		}
	})
	h.submit(c, p)
}

// videoProviders lists the configured providers that generate videos.
func (h *Handler) videoProviders() []string {
	var out []string
	for _, m := range h.Generator.Models() {
		if m.Serves(models.JobTypeVideo) && !slices.Contains(out, m.Provider) {
			out = append(out, m.Provider)
		}
	}
	return out
}

// registerReel creates one reel of 1 to 10 product photos or photo-shoot images, in order.
func (h *Handler) registerReel(c *gin.Context) {
	ctx := c.Request.Context()
	var req ReelRequest
	if err := decode(c, &req); err != nil {
		h.answer(c, err)
		return
	}
	if len(req.ImagesIDs) < 1 || len(req.ImagesIDs) > MaxReelImages {
		h.answer(c, refuse(http.StatusBadRequest, "imagesIds must hold 1 to %d image ids; it holds %d.", MaxReelImages, len(req.ImagesIDs)))
		return
	}
	for i, v := range req.ImagesIDs {
		if !models.IsUUID(v) {
			h.answer(c, refuse(http.StatusBadRequest, "imagesIds[%d] %q is not a valid id.", i, v))
			return
		}
	}
	accountID := key(c).AccountID
	var inputs []string
	var product *models.Product
	for i, v := range req.ImagesIDs {
		src, err := h.findAnyImage(ctx, accountID, fmt.Sprintf("imagesIds[%d]", i), v)
		if err != nil {
			h.answer(c, err)
			return
		}
		inputs = append(inputs, src.assetID)
		if product == nil {
			product = src.product
		}
	}
	m, err := h.model(ctx, models.JobTypeReel, "")
	if err != nil {
		h.answer(c, err)
		return
	}
	p := h.newPlan(c, models.JobTypeReel, gin.H{"imagesIds": req.ImagesIDs})
	p.add(1, m, 0, func(_ int, j *models.Job) {
		j.SetInputs(inputs)
		if product != nil {
			j.ProductID, j.ProductRef, j.ProductLabel = &product.ID, product.ExternalRef, productName(product)
		}
	})
	h.submit(c, p)
}
