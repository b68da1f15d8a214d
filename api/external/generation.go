package external

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/charge"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// Limits of the register-* routes (api/external/openapi.yaml, their request schemas).
const (
	DefaultIdeaCount = 10 // models, sceneries, photo-shoot images and packshots per request by default
	MaxIdeaCount     = 20 // models, sceneries and photo-shoot images per request
	MaxPackshotCount = 50 // packshots per request
	MaxReelImages    = 10 // images of a reel
	maxTextLen       = 2000
)

// DefaultSceneryID is the scenery a photo shoot uses when its preset recommends a scenery and the
// request names none: the marketplace's "White marble countertop".
const DefaultSceneryID = engine.DefaultSceneryID

// GenerationResponse answers every register-* route. Each request is one order, so BatchID (the
// batch of records it created) equals OrderID; ReservationID names the order's credit reservation.
type GenerationResponse struct {
	CreatedRecordIDs []string `json:"createdRecordIds"`
	BatchID          string   `json:"batchId"`
	OrderID          string   `json:"orderId"`
	ReservationID    string   `json:"reservationId"`
	CreditsReserved  int64    `json:"creditsReserved"`
	// Status is the order's status when answered: in_progress, unless the request waited for
	// the order to end (Prefer: wait).
	Status string `json:"status"`
	// Livemode is false for a test key's request.
	Livemode bool `json:"livemode"`
}

// registerGeneration mounts the register-* routes, each reading its Cancel-After header first.
func (h *Handler) registerGeneration(add route) {
	post, body := http.MethodPost, inputcheck.JSONBody(maxJSONBody)
	gen := func(path string, handler gin.HandlerFunc) {
		add(post, path, body, ScopeRegister, h.withCancelAfter(h.holding(handler)))
	}
	gen("/models/register-ideas", h.registerIdeas(jobtype.ModelIdea, engine.FashionModels))
	gen("/sceneries/register-ideas", h.registerIdeas(jobtype.SceneryIdea, engine.Sceneries))
	gen("/packshots/register-ideas", h.registerPackshots)
	gen("/image-picker/register-ideas", h.registerPhotoShoot)
	gen("/video-picker/register-videos", h.registerVideo)
	gen("/reel/register-reel", h.registerReel)
}

// cancelAfterKey is where withCancelAfter leaves the request's Cancel-After for requester.
const cancelAfterKey = "external.cancelAfter"

// withCancelAfter reads the request's Cancel-After header (engine.ParseCancelAfter) before
// handler runs: 400 naming the header for a value out of bounds or not a duration, or a header
// sent twice; else the duration (0 without one) for requester.
func (h *Handler) withCancelAfter(handler gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, err := engine.ParseCancelAfter(c.Request.Header.Values(engine.HeaderCancelAfter))
		if err != nil {
			h.answer(c, err)
			return
		}
		c.Set(cancelAfterKey, d)
		handler(c)
	}
}

// refusal is a request the external API refuses before the engine sees it (a body that does not
// parse or a value out of range): its status and {error} text. The engine's refusals are
// *engine.Error.
type refusal struct {
	status  int
	message string
}

func (r *refusal) Error() string { return r.message }

func refuse(status int, format string, args ...any) *refusal {
	return &refusal{status: status, message: fmt.Sprintf(format, args...)}
}

// answer writes the refusal err carries — an engine.Error (the one mapping of its kinds to the
// external statuses and body) or a parsing refusal — or a 500 (503 when a dependency is down) for
// any other error.
func (h *Handler) answer(c *gin.Context, err error) {
	if e, ok := engine.As(err); ok {
		h.refused(c, e)
		return
	}
	var r *refusal
	if !errors.As(err, &r) {
		h.internal(c, err)
		return
	}
	h.fail(c, r.status, r.message)
}

// externalStatus is the status of each kind of engine refusal.
var externalStatus = map[engine.Kind]int{
	engine.KindInvalid:             http.StatusBadRequest,
	engine.KindUnauthenticated:     http.StatusUnauthorized,
	engine.KindNotFound:            http.StatusNotFound,
	engine.KindForbidden:           http.StatusForbidden,
	engine.KindConflict:            http.StatusConflict,
	engine.KindInsufficientCredits: http.StatusPaymentRequired,
	engine.KindPrerequisite:        http.StatusUnprocessableEntity,
	engine.KindUnavailable:         http.StatusServiceUnavailable,
	engine.KindRateLimited:         http.StatusTooManyRequests,
}

// refused answers an engine refusal: its status, Retry-After when it names a delay, the body
// {error: "<field>: <message>"} and, for the refusals the spec names, the errors object
// (errors.prerequisiteNotMet, errors.modelNotResolved, errors.testQuotaExceeded,
// errors.spendLimitExceeded).
func (h *Handler) refused(c *gin.Context, e *engine.Error) {
	status, ok := externalStatus[e.Kind]
	if !ok {
		h.internal(c, e)
		return
	}
	if e.RetryAfter > 0 && (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) {
		c.Header("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	}
	message := e.Message
	if e.Field != "" {
		message = e.Field + ": " + e.Message
	}
	var extra gin.H
	switch {
	case e.Reason == engine.ReasonSpendLimitExceeded && e.SpendLimit != nil:
		extra = gin.H{"spendLimitExceeded": spendLimitExceeded(e.SpendLimit)}
	case e.Reason == engine.ReasonTestQuotaExceeded:
		extra = gin.H{"testQuotaExceeded": gin.H{"details": []string{engine.ReasonTestQuotaExceeded}}}
	case e.Reason == engine.ReasonPackshotNotApproved && len(e.Subjects) == 1:
		extra = gin.H{"prerequisiteNotMet": gin.H{"details": e.Details, "productId": e.Subjects[0]}}
	case e.Reason == engine.ReasonModelNotResolved && len(e.Subjects) == 1:
		extra = gin.H{"modelNotResolved": gin.H{"details": e.Details, "jobType": e.Subjects[0]}}
	}
	if extra != nil {
		c.AbortWithStatusJSON(status, gin.H{"error": message, "errors": extra})
		return
	}
	h.fail(c, status, message)
}

// decode reads a JSON object body into dst strictly (jsonbody: exact names, no unknown or
// repeated name, valid UTF-8), refusing it with a 400 that names the field and says what was
// expected and received.
func decode(c *gin.Context, dst any) error {
	_, err := readJSON(c, dst)
	return err
}

// readJSON is decode that also returns the body it read.
func readJSON(c *gin.Context, dst any) ([]byte, error) {
	raw, err := io.ReadAll(c.Request.Body) // Input held it to maxJSONBody
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "The body could not be read.")
	}
	if err := jsonbody.Decode(raw, dst); err != nil {
		return nil, refuse(http.StatusBadRequest, "%s.", err)
	}
	return raw, nil
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

// text checks a free-text field: at most maxTextLen characters as sent (the document's maxLength,
// spaces included), required or not, and trimmed.
func text(field string, v *string, required bool) (string, error) {
	s := ""
	if v != nil {
		if utf8.RuneCountInString(*v) > maxTextLen {
			return "", refuse(http.StatusBadRequest, "%s may be at most %d characters.", field, maxTextLen)
		}
		s = strings.TrimSpace(*v)
	}
	if s == "" && required {
		return "", refuse(http.StatusBadRequest, "%s is required.", field)
	}
	return s, nil
}

// id checks a record ID field: present (when required) and a UUID, in either case; it returns the
// ID as the store keeps it (ids.Canonical).
func id(field string, v *string, required bool) (string, error) {
	if v == nil || *v == "" {
		if required {
			return "", refuse(http.StatusBadRequest, "%s is required.", field)
		}
		return "", nil
	}
	if !ids.IsUUID(*v) {
		return "", refuse(http.StatusBadRequest, "%s %q is not a valid id.", field, *v)
	}
	return ids.Canonical(*v), nil
}

// optional is an optional field's value: "" when the body left it out (jsonbody refuses a null),
// a 400 when it sent an empty (or blank) string, which is a value and not an omission.
func optional(field string, v *string) (string, error) {
	if v == nil {
		return "", nil
	}
	if strings.TrimSpace(*v) == "" {
		return "", refuse(http.StatusBadRequest, "%s must not be empty; omit it to use the default.", field)
	}
	return *v, nil
}

// value is an optional field's value, "" when the body left it out.
func value(v *string) string {
	if v == nil {
		return ""
	}
	return *v
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

// requester is who asks: the key's account through the external API, at the catalog's default
// aspect ratio, with the request's Cancel-After (withCancelAfter); under an Idempotency-Key the
// order's transaction records the key's answer.
//
// outcome is the request's test_outcome (nil for none): the engine refuses it from a live key.
func (h *Handler) requester(c *gin.Context, outcome *engine.TestOutcome) engine.Requester {
	return engine.Requester{AccountID: key(c).AccountID, API: engine.APIExternal, CorrelationID: reqctx.CorrelationID(c),
		AspectRatio: h.Engine.Catalog.DefaultAspectRatio(), CancelAfter: c.GetDuration(cancelAfterKey), Record: generationRecord(c),
		Test: key(c).Test, TestOutcome: outcome, APIKeyID: key(c).ID}
}

// submitted answers the generation response of a submitted request, or the refusal of its
// planning or submission.
func (h *Handler) submitted(c *gin.Context, s engine.Submitted, err error) {
	if err != nil {
		h.answer(c, err)
		return
	}
	reqctx.Log(c, h.Log).Info("generation accepted", zap.String("correlation_id", s.CorrelationID),
		zap.String("order_id", s.OrderID), zap.String("account_id", s.AccountID),
		zap.String("job_type", s.JobType), zap.Int("jobs", s.Jobs), zap.Int64("credits_reserved", s.CreditsReserved))
	resp := generationResponse(s)
	charge.Set(c.Writer.Header(), s.CreditsReserved, s.CreditsRemaining)
	if held := heldOf(c); held.Wait > 0 {
		resp.Status = h.holdOrderStatus(c, held.Wait, s.OrderID, resp.Status)
	}
	c.PureJSON(http.StatusOK, resp)
}

// generationResponse is the answer of an accepted generation request (also what its
// Idempotency-Key records, generationRecord): its order is in progress.
func generationResponse(s engine.Submitted) GenerationResponse {
	return GenerationResponse{
		CreatedRecordIDs: s.RecordIDs, BatchID: s.OrderID, OrderID: s.OrderID,
		ReservationID: s.ReservationID, CreditsReserved: s.CreditsReserved, Status: status.OrderInProgress,
		Livemode: !s.TestMode,
	}
}

// ---- models/register-ideas, sceneries/register-ideas -------------------------------------------

// IdeasRequest is the body of models/register-ideas and sceneries/register-ideas.
type IdeasRequest struct {
	Preferences *string             `json:"preferences"`
	Count       *int                `json:"count"`
	TestOutcome *engine.TestOutcome `json:"test_outcome"`
}

// registerIdeas creates count fashion models or sceneries (INPROGRESS until their job is DONE)
// from the preferences text.
func (h *Handler) registerIdeas(jobType string, kind engine.ReferenceKind) gin.HandlerFunc {
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
		s, err := h.Engine.Generation.RegisterIdeas(c.Request.Context(), h.requester(c, req.TestOutcome),
			engine.IdeasInput{JobType: jobType, Kind: kind, Preferences: prefs, Count: n})
		h.submitted(c, s, err)
	}
}

// ---- packshots/register-ideas, image-picker/register-ideas -------------------------------------

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
	Config      *GenerationConfig   `json:"config"`
	Count       *int                `json:"count"`
	TestOutcome *engine.TestOutcome `json:"test_outcome"`
}

// readConfigRequest decodes and checks a ConfigRequest of at most maxCount records (400 for bad
// values) into the engine's input; the engine checks the IDs of the preset, scenery and model
// (after the product photo, as before). outcome is the request's test_outcome (nil for none).
func readConfigRequest(c *gin.Context, maxCount int) (in engine.ConfigInput, outcome *engine.TestOutcome, err error) {
	var req ConfigRequest
	if err := decode(c, &req); err != nil {
		return in, nil, err
	}
	if req.Config == nil {
		return in, nil, refuse(http.StatusBadRequest, "config.product.id is required.")
	}
	photoID, err := id(engine.FieldProductPhoto, req.Config.Product.id(), true)
	if err != nil {
		return in, nil, err
	}
	n, err := count("count", req.Count, maxCount)
	if err != nil {
		return in, nil, err
	}
	industry, err := text("config.industry", req.Config.Industry, false)
	if err != nil {
		return in, nil, err
	}
	suggestions, err := text("config.suggestions", req.Config.Suggestions, false)
	if err != nil {
		return in, nil, err
	}
	in = engine.ConfigInput{PhotoID: photoID, Count: n, Suggestions: strings.TrimSpace(industry + " " + suggestions)}
	for _, f := range []struct {
		field string
		ref   *ref
		out   *string
	}{
		{engine.FieldPreset, req.Config.Preset, &in.PresetID},
		{engine.FieldScenery, req.Config.Scenery, &in.SceneryID},
		{engine.FieldModel, req.Config.Model, &in.ModelID},
	} {
		if *f.out, err = optional(f.field, f.ref.id()); err != nil {
			return in, nil, err
		}
	}
	return in, req.TestOutcome, nil
}

// registerPackshots creates count packshots of a product photo; each is listed INPROGRESS under
// its record ID until its job completes.
func (h *Handler) registerPackshots(c *gin.Context) {
	in, outcome, err := readConfigRequest(c, MaxPackshotCount)
	if err != nil {
		h.answer(c, err)
		return
	}
	s, err := h.Engine.Generation.RegisterPackshots(c.Request.Context(), h.requester(c, outcome), in)
	h.submitted(c, s, err)
}

// registerPhotoShoot creates count photo-shoot images of a product photo from that photo's own
// accepted packshot (rules 1–4 of registerPhotoShoot in api/external/openapi.yaml; engine.RegisterPhotoShoot).
func (h *Handler) registerPhotoShoot(c *gin.Context) {
	in, outcome, err := readConfigRequest(c, MaxIdeaCount)
	if err != nil {
		h.answer(c, err)
		return
	}
	s, err := h.Engine.Generation.RegisterPhotoShoot(c.Request.Context(), h.requester(c, outcome), in)
	h.submitted(c, s, err)
}

// ---- video-picker/register-videos, reel/register-reel ------------------------------------------

// VideoRequest is the body of video-picker/register-videos.
type VideoRequest struct {
	ImageID          *string             `json:"imageId"`
	GeneratedImageID *string             `json:"generatedImageId"`
	Suggestion       *string             `json:"suggestion"`
	Provider         *string             `json:"provider"`
	TestOutcome      *engine.TestOutcome `json:"test_outcome"`
}

// ReelRequest is the body of reel/register-reel.
type ReelRequest struct {
	ImagesIDs   []string            `json:"imagesIds"`
	TestOutcome *engine.TestOutcome `json:"test_outcome"`
}

// registerVideo creates one video of a product photo or of a photo-shoot image.
func (h *Handler) registerVideo(c *gin.Context) {
	var req VideoRequest
	if err := decode(c, &req); err != nil {
		h.answer(c, err)
		return
	}
	for _, f := range []struct {
		field string
		v     *string
	}{{"imageId", req.ImageID}, {"generatedImageId", req.GeneratedImageID}, {"provider", req.Provider}} {
		if _, err := optional(f.field, f.v); err != nil {
			h.answer(c, err)
			return
		}
	}
	hasImage, hasGenerated := req.ImageID != nil, req.GeneratedImageID != nil
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
	provider := strings.TrimSpace(value(req.Provider))
	s, err := h.Engine.Generation.RegisterVideo(c.Request.Context(), h.requester(c, req.TestOutcome), engine.VideoInput{
		Field: field, ImageID: imageID, Generated: hasGenerated, Suggestion: suggestion, Provider: provider})
	h.submitted(c, s, err)
}

// registerReel creates one reel of 1 to 10 product photos or photo-shoot images, in order.
func (h *Handler) registerReel(c *gin.Context) {
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
		if !ids.IsUUID(v) {
			h.answer(c, refuse(http.StatusBadRequest, "imagesIds[%d] %q is not a valid id.", i, v))
			return
		}
		req.ImagesIDs[i] = ids.Canonical(v)
	}
	s, err := h.Engine.Generation.RegisterReel(c.Request.Context(), h.requester(c, req.TestOutcome), req.ImagesIDs,
		func(i int) string { return fmt.Sprintf("imagesIds[%d]", i) })
	h.submitted(c, s, err)
}
