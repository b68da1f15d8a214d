package plugin

import (
	"bytes"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/internal/engine"
)

// CloneRequest is the optional body of POST /orders/{id}/clone.
type CloneRequest struct {
	Subjects []CloneSubject `json:"subjects" binding:"omitempty,min=1,max=100,dive"`
}

// CloneSubject is one subject of a clone's replacement list. Fields left out are taken from the
// source order's subject with the same product_ref (ai_model, product_label and, for packshot
// jobs, packshot_asset_id and auto_register_packshot); a product that was not in the source needs
// its ai_model. An empty string is refused, not taken for an omission.
type CloneSubject struct {
	ProductRef           string  `json:"product_ref" binding:"required,max=200"`
	ProductLabel         *string `json:"product_label" binding:"omitempty,nonempty,max=500"`
	PackshotAssetID      *string `json:"packshot_asset_id" binding:"omitempty,nonempty,max=64"`
	ImagesCount          int     `json:"images_count" binding:"required,min=1,max=20"`
	AIModel              *string `json:"ai_model" binding:"omitempty,nonempty,max=200"`
	AutoRegisterPackshot *bool   `json:"auto_register_packshot"`
	// TestOutcome is the subject's rehearsed outcome, a test key's only (engine.TestOutcome).
	TestOutcome *engine.TestOutcome `json:"test_outcome"`
}

// POST /orders/{id}/clone: a new order from an order of the installation, charged anew. A
// Cancel-After header sets the new jobs' start deadline, as on POST /jobs (not the source's).
//
// The Idempotency-Key header is required (1–200 characters; idempotency.go, which runs this
// handler, refuses a request without one). An empty body (or {}) reuses the
// source's subjects 1:1: the same product_ref, images_count (its number of jobs), ai_model and
// product_label, under the same job_type and session_config. A non-empty subjects array replaces
// the list entirely, keyed by product_ref (see CloneSubject). Photo-shoot subjects resolve their
// packshot again under the approval rules (the product's latest approved packshot, unless the
// replacement names one), so a product without one now makes the call 422; packshot jobs reuse
// their input photo. Ratings are not carried over: every new job starts with voting pending. The new
// order carries source_order_id; the answer is 201 with the session response, 200 on a replay.
func (h *Handler) cloneOrder(c *gin.Context) {
	cancelAfter, ok := h.cancelAfter(c)
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
	subjects := make([]engine.CloneSubject, len(creq.Subjects))
	for i, s := range creq.Subjects {
		subjects[i] = engine.CloneSubject{ProductRef: s.ProductRef, ProductLabel: value(s.ProductLabel),
			PackshotAssetID: value(s.PackshotAssetID), ImagesCount: s.ImagesCount, AIModel: value(s.AIModel),
			AutoRegisterPackshot: s.AutoRegisterPackshot, TestOutcome: s.TestOutcome}
	}
	req, err := h.Engine.Sessions.CloneSession(c.Request.Context(), caller(c).Installation.ID, c.Param("id"), subjects)
	if err != nil {
		h.fail(c, err)
		return
	}
	req.CancelAfter = cancelAfter
	held, ok := h.takeWait(c) // before anything is created
	if !ok {
		return
	}
	defer held.Release()
	h.writeSession(c, held.Wait, h.acceptSession(c, h.pluginSession(c, *req), sessionRecord(c)))
}

// parseClone decodes the optional body of a clone: nothing, {} or {"subjects": [...]}.
func parseClone(body []byte) (*CloneRequest, *failure) {
	var req CloneRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return &req, nil
	}
	top, err := jsonbody.Members(body)
	if err != nil {
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
