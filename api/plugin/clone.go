package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// CloneRequest is the optional body of POST /orders/{id}/clone.
type CloneRequest struct {
	Subjects []CloneSubject `json:"subjects" binding:"omitempty,min=1,max=100,dive"`
}

// CloneSubject is one subject of a clone's replacement list. Fields left out are taken from the
// source order's subject with the same product_ref (ai_model, product_label and, for packshot
// jobs, packshot_asset_id and auto_register_packshot); a product that was not in the source needs
// its ai_model.
type CloneSubject struct {
	ProductRef           string `json:"product_ref" binding:"required,max=200"`
	ProductLabel         string `json:"product_label" binding:"max=500"`
	PackshotAssetID      string `json:"packshot_asset_id" binding:"max=64"`
	ImagesCount          int    `json:"images_count" binding:"required,min=1,max=20"`
	AIModel              string `json:"ai_model" binding:"max=200"`
	AutoRegisterPackshot *bool  `json:"auto_register_packshot"`
}

// POST /orders/{id}/clone: a new order from an order of the installation, charged anew.
//
// The Idempotency-Key header is required (1–200 characters). An empty body (or {}) reuses the
// source's subjects 1:1: the same product_ref, images_count (its number of jobs), ai_model and
// product_label, under the same job_type and session_config. A non-empty subjects array replaces
// the list entirely, keyed by product_ref (see CloneSubject). Photo-shoot subjects resolve their
// packshot again under the approval rules (the product's latest approved packshot, unless the
// replacement names one), so a product without one now makes the call 422; packshot jobs reuse
// their input photo. Ratings are not carried over: every new job starts with voting pending. The new
// order carries source_order_id; the answer is 201 with the session response, 200 on a replay.
func (h *Handler) cloneOrder(c *gin.Context) {
	key, _, ok := h.idempotencyKey(c, true)
	if !ok {
		return
	}
	body, ok := h.readBody(c)
	if !ok {
		return
	}
	creq, f := parseClone(body)
	if f != nil {
		h.refuse(c, f)
		return
	}
	hash, err := requestHash(c.Request.Method, c.Request.URL.Path, body)
	if err != nil {
		h.internal(c, err) // parseClone accepted the body, so it is empty or JSON
		return
	}
	inst := caller(c).Installation
	sourceID := c.Param("id")
	h.idempotent(c, key, hash, func(record recorder) sessionOutcome {
		req, source, f := h.cloneSession(c, inst, sourceID, creq)
		if f != nil {
			return sessionOutcome{fail: f}
		}
		return h.acceptSession(c, inst, req, &source.ID, record)
	})
}

// parseClone decodes the optional body of a clone: nothing, {} or {"subjects": [...]}.
func parseClone(body []byte) (*CloneRequest, *failure) {
	var req CloneRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return &req, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, invalid("%s", describeBindError(err))
	}
	var extra []string
	for k := range top {
		if k != "subjects" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, invalid("a clone takes only subjects; %s cannot be given (job_type and session_config are those of the source order)",
			strings.Join(extra, ", "))
	}
	if err := decodeJSON(body, &req); err != nil {
		msg := describeBindError(err)
		if strings.Contains(msg, "subjects must have at least 1") {
			msg = "subjects must not be empty: omit it (or send no body) to reuse the source order's subjects"
		}
		return nil, invalid("%s", msg)
	}
	return &req, nil
}

// sourceSubject is a subject of the source order, rebuilt from its jobs.
type sourceSubject struct {
	Subject
	order int
}

// cloneSession builds the session of a clone from its source order and the replacement subjects.
func (h *Handler) cloneSession(c *gin.Context, inst *models.Installation, sourceID string, creq *CloneRequest) (*SessionRequest, *models.Order, *failure) {
	db := h.DB.WithContext(c.Request.Context())
	var source models.Order
	err := db.Where("id = ? AND installation_id = ?", sourceID, inst.ID).Take(&source).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, &failure{status: http.StatusNotFound, code: CodeNotFound, message: "No order with this ID."}
	}
	if err != nil {
		return nil, nil, unexpected(c, err)
	}
	var cfg SessionConfig
	if len(source.SessionConfig) > 0 {
		if err := json.Unmarshal(source.SessionConfig, &cfg); err != nil {
			return nil, nil, unexpected(c, err)
		}
	}
	var jobs []models.Job
	if err := db.Where("order_id = ?", source.ID).Order("position").Find(&jobs).Error; err != nil {
		return nil, nil, unexpected(c, err)
	}
	packshotJobs := source.JobType == models.JobTypePackshot
	bySource := map[string]*sourceSubject{}
	for _, j := range jobs {
		s, ok := bySource[j.ProductRef]
		if !ok {
			s = &sourceSubject{order: len(bySource), Subject: Subject{
				ProductRef: j.ProductRef, ProductLabel: j.ProductLabel, AIModel: j.AIModel,
				AutoRegisterPackshot: packshotJobs,
			}}
			if packshotJobs && j.InputAssetID != nil {
				s.PackshotAssetID = *j.InputAssetID
			}
			bySource[j.ProductRef] = s
		}
		s.ImagesCount++
	}
	req := &SessionRequest{JobType: source.JobType, SessionConfig: &cfg}
	if len(creq.Subjects) == 0 {
		req.Subjects = make([]Subject, len(bySource))
		for _, s := range bySource {
			req.Subjects[s.order] = s.Subject
		}
		return req, &source, nil
	}
	for i, cs := range creq.Subjects {
		s := Subject{ProductRef: cs.ProductRef, ProductLabel: cs.ProductLabel, PackshotAssetID: cs.PackshotAssetID,
			ImagesCount: cs.ImagesCount, AIModel: cs.AIModel}
		src, inSource := bySource[cs.ProductRef]
		if s.AIModel == "" {
			if !inSource {
				return nil, nil, invalid("subjects[%d].ai_model is required: product_ref %q is not in the source order", i, cs.ProductRef)
			}
			s.AIModel = src.AIModel
		}
		if s.ProductLabel == "" && inSource {
			s.ProductLabel = src.ProductLabel
		}
		if packshotJobs {
			if s.PackshotAssetID == "" && inSource {
				s.PackshotAssetID = src.PackshotAssetID
			}
			s.AutoRegisterPackshot = cs.AutoRegisterPackshot == nil || *cs.AutoRegisterPackshot
		} else if cs.AutoRegisterPackshot != nil {
			s.AutoRegisterPackshot = *cs.AutoRegisterPackshot
		}
		req.Subjects = append(req.Subjects, s)
	}
	return req, &source, nil
}
