package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/reqctx"
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

// POST /jobs: one session. With an Idempotency-Key header the session is created at most once per
// key (idempotency.go); without one every call creates a new order.
func (h *Handler) createSession(c *gin.Context) {
	key, keyed, ok := h.idempotencyKey(c, false)
	if !ok {
		return
	}
	body, ok := h.readBody(c)
	if !ok {
		return
	}
	req, f := parseSession(body)
	if f != nil {
		h.refuse(c, f)
		return
	}
	inst := caller(c).Installation
	if !keyed {
		h.writeSession(c, h.acceptSession(c, inst, req, nil, nil))
		return
	}
	hash, err := requestHash(c.Request.Method, c.Request.URL.Path, body)
	if err != nil {
		h.internal(c, err) // parseSession accepted the body, so it is JSON
		return
	}
	h.idempotent(c, key, hash, func(record recorder) sessionOutcome {
		return h.acceptSession(c, inst, req, nil, record)
	})
}

// readBody reads the request body, which Input has already held to the route's limit.
func (h *Handler) readBody(c *gin.Context) ([]byte, bool) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "The request body could not be read.")
		return nil, false
	}
	return body, true
}

// parseSession decodes and validates a session body; the retired single-job body is refused with
// a message that says how to migrate.
func parseSession(body []byte) (*SessionRequest, *failure) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if _, hasSubjects := top["subjects"]; !hasSubjects {
			for _, f := range retiredSessionFields {
				if _, ok := top[f]; ok {
					return nil, invalid("%s", migrateSessionMessage)
				}
			}
		}
	}
	var req SessionRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, invalid("%s", describeBindError(err))
	}
	return &req, nil
}

// sessionOutcome is what became of one session: created (session) or refused (fail). claimLost
// reports that its Idempotency-Key claim was taken over before the order committed, so nothing
// was created and the caller has to look at the key again.
type sessionOutcome struct {
	session   *SessionResponse
	fail      *failure
	claimLost bool
}

// recorder runs inside the transaction that creates a session, with its response.
type recorder func(tx *gorm.DB, resp *SessionResponse) error

// acceptSession plans the session, then creates the order, its jobs and their reservation in one
// transaction (in which record, when not nil, also runs) and starts the order. sourceOrderID is
// set on a clone.
func (h *Handler) acceptSession(c *gin.Context, inst *models.Installation, req *SessionRequest, sourceOrderID *string, record recorder) sessionOutcome {
	out, order, jobs := h.commitSession(c, inst, req, sourceOrderID, record)
	if out.session != nil {
		h.Engine.StartCommitted(c.Request.Context(), order, jobs)
	}
	return out
}

// commitSession is acceptSession without the start: on success the order is committed and its
// workflow still has to be started (h.Engine.Start; the sweeper does it otherwise).
func (h *Handler) commitSession(c *gin.Context, inst *models.Installation, req *SessionRequest, sourceOrderID *string, record recorder) (sessionOutcome, *models.Order, []models.Job) {
	order, jobs, f := h.planSession(c, inst, req)
	if f != nil {
		return sessionOutcome{fail: f}, nil, nil
	}
	order.SourceOrderID = sourceOrderID
	var inTx func(tx *gorm.DB) error
	if record != nil {
		inTx = func(tx *gorm.DB) error { return record(tx, sessionResponse(order, jobs)) }
	}
	err := h.Engine.Commit(c.Request.Context(), order, jobs, inTx)
	switch {
	case errors.Is(err, models.ErrInsufficientCredits):
		var need int64
		for _, j := range jobs {
			need += j.CreditCost
		}
		return sessionOutcome{fail: &failure{status: http.StatusPaymentRequired, code: CodeInsufficientCredits,
			message: fmt.Sprintf("This session costs %d credits, more than the account has available.", need),
			details: gin.H{"credits_required": need}}}, nil, nil
	case errors.Is(err, models.ErrIdempotencyClaimLost):
		return sessionOutcome{claimLost: true}, nil, nil
	case err != nil:
		return sessionOutcome{fail: unexpected(c, err)}, nil, nil
	}
	return sessionOutcome{session: sessionResponse(order, jobs)}, order, jobs
}

// sessionResponse lists the jobs of a created order per subject, in input order.
func sessionResponse(order *models.Order, jobs []models.Job) *SessionResponse {
	resp := &SessionResponse{OrderID: order.ID, Status: order.Status, CreditsReserved: order.CreditsReserved,
		Subjects: []SubjectResponse{}}
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
	return resp
}

// writeSession answers 201 with the session, or the failure's envelope.
func (h *Handler) writeSession(c *gin.Context, out sessionOutcome) {
	if out.fail != nil {
		h.refuse(c, out.fail)
		return
	}
	body, err := encodeJSON(out.session)
	if err != nil {
		h.internal(c, err)
		return
	}
	c.Data(http.StatusCreated, jsonContentType, body)
}

const jsonContentType = "application/json; charset=utf-8"

// encodeJSON encodes v the way c.PureJSON does (no HTML escaping, trailing newline), so that a
// stored answer replays byte for byte.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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

// refuse answers the failure's envelope.
func (h *Handler) refuse(c *gin.Context, f *failure) {
	h.FailWith(c, f.status, f.code, f.message, f.details)
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
		if !ok || !slices.ContainsFunc(JobTypes, m.Serves) {
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
		JobType: jobType, SessionConfig: models.JSON(configJSON), CorrelationID: reqctx.CorrelationID(c),
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
				return nil, nil, unexpected(c, err)
			}
			if f != nil {
				return nil, nil, f
			}
			product, inputAssetID = p, &assetID
		} else {
			p, packshot, err := resolvePackshot(db, inst, s)
			if err != nil {
				return nil, nil, unexpected(c, err)
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
	if asset.Status == models.AssetInvalid {
		return nil, "", invalid("subjects[%d].packshot_asset_id %q cannot be used: %s.", i, s.PackshotAssetID, asset.Problem), nil
	}
	return &product, asset.ID, nil, nil
}
