package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/charge"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/status"
)

// Session bounds (the service chooses them; api/openapi.yaml documents them).
const (
	MaxSubjectsPerSession = 100
	MaxImagesPerSubject   = 20
	maxSessionBodyBytes   = 1 << 20
)

// SessionConfig is the session_config shared by every subject of a session. The fields that
// have a default, or name a record, are pointers: an empty string is a value the body sent (and
// refused: "nonempty"), not an omission.
type SessionConfig struct {
	AspectRatio *string `json:"aspect_ratio,omitempty" binding:"omitempty,nonempty,max=10"`
	Style       string  `json:"style,omitempty" binding:"max=500"`
	Suggestions string  `json:"suggestions,omitempty" binding:"max=2000"`
	SceneryID   *string `json:"scenery_id,omitempty" binding:"omitempty,nonempty,max=64"`
	ModelID     *string `json:"model_id,omitempty" binding:"omitempty,nonempty,max=64"`
}

// Subject is one product of a session; product_label and packshot_asset_id, when sent, are not
// empty.
type Subject struct {
	ProductRef           string  `json:"product_ref" binding:"required,max=200"`
	ProductLabel         *string `json:"product_label" binding:"omitempty,nonempty,max=500"`
	PackshotAssetID      *string `json:"packshot_asset_id" binding:"omitempty,nonempty,max=64"`
	ImagesCount          int     `json:"images_count" binding:"required,min=1,max=20"`
	AIModel              string  `json:"ai_model" binding:"required,max=200"`
	AutoRegisterPackshot bool    `json:"auto_register_packshot"`
	// TestOutcome is the subject's rehearsed outcome, a test key's only (engine.TestOutcome;
	// the engine refuses it from a live key, naming subjects[i].test_outcome).
	TestOutcome *engine.TestOutcome `json:"test_outcome"`
}

// SessionRequest is the body of POST /jobs; job_type, when sent, is not empty.
type SessionRequest struct {
	JobType       *string        `json:"job_type" binding:"omitempty,nonempty,oneof=photo_shoot packshot"`
	SessionConfig *SessionConfig `json:"session_config" binding:"required"`
	Subjects      []Subject      `json:"subjects" binding:"required,min=1,max=100,dive"`
}

// SessionResponse answers an accepted session.
type SessionResponse struct {
	OrderID         string            `json:"order_id"`
	Status          string            `json:"status"`
	Subjects        []SubjectResponse `json:"subjects"`
	CreditsReserved int64             `json:"credits_reserved"`
	Livemode        bool              `json:"livemode"` // false for a test key's session
}

// SubjectResponse lists the jobs created for one subject.
type SubjectResponse struct {
	ProductRef string   `json:"product_ref"`
	JobIDs     []string `json:"job_ids"`
}

// retiredSessionFields are top-level keys of the single-job body retired in May 2026.
var retiredSessionFields = []string{"provider", "model", "unit_cost", "settings"}

const migrateSessionMessage = "retired in May 2026 with the single-job body, and refused alone or next to a session. Send a session instead: " +
	"{\"job_type\", \"session_config\": {aspect_ratio, style, suggestions, scenery_id, model_id}, " +
	"\"subjects\": [{\"product_ref\", \"images_count\", \"ai_model\": \"provider/model\"}]}; " +
	"ai_model replaces provider, model and unit_cost, and settings move into session_config."

// POST /jobs: one session. With an Idempotency-Key header the session is created at most once per
// key (idempotency.go, which runs this handler); without one every call creates a new order. A
// Cancel-After header (10 s to 24 h) cancels every job of the session that has not started by then
// (engine.ParseCancelAfter; 400 naming the header for anything else).
func (h *Handler) createSession(c *gin.Context) {
	cancelAfter, ok := h.cancelAfter(c)
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
	sreq := h.sessionRequest(c, req)
	sreq.CancelAfter = cancelAfter
	held, ok := h.takeWait(c) // before anything is created
	if !ok {
		return
	}
	defer held.Release()
	h.writeSession(c, held.Wait, h.acceptSession(c, sreq, sessionRecord(c)))
}

// cancelAfter reads the request's Cancel-After header (engine.ParseCancelAfter): 0 when there is
// none; ok is false when the request was answered 400 invalid_input naming the header.
func (h *Handler) cancelAfter(c *gin.Context) (d time.Duration, ok bool) {
	d, err := engine.ParseCancelAfter(c.Request.Header.Values(engine.HeaderCancelAfter))
	if err != nil {
		h.fail(c, err)
		return 0, false
	}
	return d, true
}

// readBody reads the request body, which Input has already held to the route's limit.
func (h *Handler) readBody(c *gin.Context) ([]byte, bool) {
	if body, ok := inputcheck.Bytes(c); ok { // the bytes the input check read, not a copy
		return body, true
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, "The request body could not be read.")
		return nil, false
	}
	return body, true
}

// parseSession decodes and validates a session body strictly; a body with a field of the retired
// single-job body, alone or next to the session shape, is refused naming those fields, with a
// message that says how to migrate. The strict decoder refuses any member a session does not
// have, so only a refused body is looked at again for retired fields: an accepted one is parsed
// once.
func parseSession(body []byte) (*SessionRequest, *failure) {
	var req SessionRequest
	err := decodeJSON(body, &req)
	if err == nil {
		return &req, nil
	}
	if top, membersErr := jsonbody.Members(body); membersErr == nil {
		var retired []string
		for _, f := range retiredSessionFields {
			if _, ok := top[f]; ok {
				retired = append(retired, f)
			}
		}
		if len(retired) > 0 {
			return nil, invalid("%s: %s", strings.Join(retired, ", "), migrateSessionMessage)
		}
	}
	return nil, invalid("%s", describeBindError(err))
}

// sessionOutcome is what became of one session: created (session) or refused (fail). claimLost
// reports that its Idempotency-Key claim was taken over before the order committed, so nothing
// was created and the caller has to look at the key again.
type sessionOutcome struct {
	session   *SessionResponse
	charge    http.Header // the charge headers of a created session (api/charge)
	fail      *failure
	claimLost bool
}

// acceptSession plans the session, then creates the order, its jobs and their reservation in one
// transaction (in which record, when not nil, also runs) and starts the order.
func (h *Handler) acceptSession(c *gin.Context, req engine.SessionRequest, record recorder) sessionOutcome {
	s, err := h.Engine.Sessions.SubmitSession(c.Request.Context(), req, record)
	return sessionOutcomeOf(c, s, err)
}

// commitSession is acceptSession without the start: on success the session is committed, and
// returned, and its workflow still has to be started (engine.Sessions.StartAll; the sweeper does
// it otherwise).
func (h *Handler) commitSession(c *gin.Context, req engine.SessionRequest, record recorder) (sessionOutcome, *engine.Session) {
	s, err := h.Engine.Sessions.CommitSession(c.Request.Context(), req, record)
	out := sessionOutcomeOf(c, s, err)
	if err != nil {
		return out, nil
	}
	return out, &s
}

// sessionOutcomeOf maps the engine's answer to a session: created, refused, or its key's claim lost.
func sessionOutcomeOf(c *gin.Context, s engine.Session, err error) sessionOutcome {
	switch {
	case errors.Is(err, engine.ErrClaimLost):
		return sessionOutcome{claimLost: true}
	case err != nil:
		return sessionOutcome{fail: engineFailure(c, err)}
	}
	return sessionOutcome{session: sessionResponse(s), charge: charge.Headers(s.CreditsReserved, s.CreditsRemaining)}
}

// sessionRequest is the engine's request for a parsed session of the caller's installation.
func (h *Handler) sessionRequest(c *gin.Context, req *SessionRequest) engine.SessionRequest {
	subjects := make([]engine.SessionSubject, len(req.Subjects))
	for i, s := range req.Subjects {
		subjects[i] = engine.SessionSubject{ProductRef: s.ProductRef, ProductLabel: value(s.ProductLabel),
			PackshotAssetID: value(s.PackshotAssetID), ImagesCount: s.ImagesCount, AIModel: s.AIModel,
			AutoRegisterPackshot: s.AutoRegisterPackshot, TestOutcome: s.TestOutcome}
	}
	cfg := req.SessionConfig
	return h.pluginSession(c, engine.SessionRequest{JobType: value(req.JobType), Subjects: subjects,
		Config: engine.SessionConfig{AspectRatio: value(cfg.AspectRatio), Style: cfg.Style, Suggestions: cfg.Suggestions,
			SceneryID: value(cfg.SceneryID), ModelID: value(cfg.ModelID)}})
}

// value is an optional field's value, "" when the body left it out (the validator refused an
// empty one).
func value(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}

// pluginSession completes a session request with what the plugin API sets on every session: the
// caller's account and installation, the request's correlation ID and its job types.
func (h *Handler) pluginSession(c *gin.Context, req engine.SessionRequest) engine.SessionRequest {
	inst := caller(c).Installation
	req.AccountID, req.InstallationID, req.API = inst.AccountID, inst.ID, engine.APIPlugin
	req.CorrelationID = reqctx.CorrelationID(c)
	req.JobTypes = JobTypes
	req.Test = caller(c).Key.Test
	req.APIKeyID = caller(c).Key.ID
	return req
}

// sessionResponse lists the jobs of a created session per subject, in input order.
func sessionResponse(s engine.Session) *SessionResponse {
	resp := &SessionResponse{OrderID: s.OrderID, Status: s.Status, CreditsReserved: s.CreditsReserved,
		Subjects: []SubjectResponse{}, Livemode: !s.TestMode}
	index := map[string]int{}
	for _, j := range s.Jobs {
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

// writeSession answers 201 with the session, held wait long (Prefer: wait) when not zero, or the
// failure's envelope; nothing for a session whose key's claim was lost (the key's wrapper looks
// at the key again).
func (h *Handler) writeSession(c *gin.Context, wait time.Duration, out sessionOutcome) {
	if out.claimLost {
		return
	}
	if out.fail != nil {
		h.refuse(c, out.fail)
		return
	}
	for k, v := range out.charge {
		c.Writer.Header()[k] = v
	}
	if wait > 0 {
		h.holdSession(c, wait, out.session)
	}
	body, err := encodeJSON(out.session)
	if err != nil {
		h.internal(c, err)
		return
	}
	c.Data(http.StatusCreated, jsonContentType, body)
}

// holdSession holds a created session with Prefer: wait until its order has ended or the wait is
// over, and sets the session's status to the order's of then. The order exists: should the
// database fail meanwhile, the session is answered with the status last read.
func (h *Handler) holdSession(c *gin.Context, wait time.Duration, s *SessionResponse) {
	inst := caller(c).Installation
	scope := engine.OrderScope{AccountID: inst.AccountID, InstallationID: inst.ID}
	st, err := prefer.Hold(c, h.Engine.Feed, wait, func(ctx context.Context) (prefer.Read[string], error) {
		o, err := h.Engine.Feed.Order(ctx, scope, s.OrderID)
		return prefer.Read[string]{Value: o.Status, OrderID: s.OrderID, Seen: o.EventSeq, Ended: o.Status != status.OrderInProgress}, err
	})
	if err != nil {
		reqctx.Log(c, h.Log).Info("a held session is answered as it was created: its order could not be read", zap.String("order_id", s.OrderID), zap.Error(err))
		return
	}
	s.Status = st
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
	// retryAfter, when not 0, is the refusal's Retry-After (an engine refusal's RetryAfter).
	retryAfter time.Duration
}

func invalid(format string, args ...any) *failure {
	return &failure{status: http.StatusBadRequest, code: CodeInvalidInput, message: fmt.Sprintf(format, args...)}
}

// refuse answers the failure's envelope.
func (h *Handler) refuse(c *gin.Context, f *failure) {
	if f.retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int((f.retryAfter+time.Second-1)/time.Second)))
	}
	h.FailWith(c, f.status, f.code, f.message, f.details)
}
