package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// Generation planning: the rules that turn a generation request (ideas, packshots, photo shoot,
// video, reel) into one order of jobs, and the submission of that order. The external API calls
// these with plain inputs it has parsed; the refusals are *Error.

// Reasons of generation refusals (see errors.go for the kinds).
const (
	// ReasonGeneratorDown: no worker generates with the model's provider right now (KindUnavailable).
	ReasonGeneratorDown = "generator_down"
)

// Details of generation refusals, as façades surface them.
const (
	DetailNoGenerationModel   = "no_generation_model"
	DetailPackshotNotApproved = "packshot_not_approved"
)

// DefaultSceneryID is the scenery a photo shoot uses when its preset recommends a scenery and the
// request names none: the marketplace's "White marble countertop".
const DefaultSceneryID = "8c4e3d43-4a63-469d-b601-22b6bf85d70c"

// generatorRetryAfter is the Retry-After of a request refused because no generator runs.
const generatorRetryAfter = 30 * time.Second

// Requester is who asks for a generation and how: the account charged, the API, the request's
// correlation ID, the jobs' aspect ratio and the request's Cancel-After.
type Requester struct {
	AccountID     string
	API           string // APIExternal, …
	CorrelationID string
	AspectRatio   string
	// CancelAfter, when not 0, is the request's Cancel-After (ParseCancelAfter): every job that
	// has not started that long after acceptance is cancelled.
	CancelAfter time.Duration
	// Record, when not nil, runs in the transaction that creates the request's order: a keyed
	// request records its Idempotency-Key's answer there (KeyClaim.SubmittedRecord).
	Record SubmittedRecord
	// Test marks a request of a test key (the account is a test twin): its order and jobs are
	// test mode's.
	Test bool
	// TestOutcome is the request's test_outcome (a test key's only): what becomes of its jobs.
	// Every Plan… checks it first (checkTestOutcome).
	TestOutcome *TestOutcome
	// APIKeyID is the API key that made the request: its order records it (usage by key).
	APIKeyID string
}

// testOutcome checks the requester's test_outcome and returns it as its jobs keep it.
func (r Requester) testOutcome() (*string, error) {
	return checkTestOutcome("test_outcome", r.TestOutcome, r.Test)
}

// SubmittedRecord runs inside the transaction that commits a generation request's order, with the
// store of that transaction and the request as it is accepted (its credits reserved); an error
// from it rolls the order back and is the request's (ErrClaimLost when the request's
// Idempotency-Key claim was taken over).
type SubmittedRecord func(ctx context.Context, tx *models.Store, s Submitted) error

// Plan is a generation request planned into an order: the order, its jobs, the records created
// beside them (in the order's transaction) and the IDs the answer lists.
type Plan struct {
	Order *models.Order
	Jobs  []models.Job
	// Records, when not nil, inserts the records that exist before their job ran, with the store
	// of the order's transaction.
	Records func(ctx context.Context, tx *models.Store) error
	// RecordIDs are the IDs of the records the request creates; SubmitPlan sets them to the job
	// IDs when the plan has none.
	RecordIDs []string
	// record is the requester's Record.
	record SubmittedRecord
}

// newPlan starts an order of the requester's account for the job type with the request's config.
func newPlan(r Requester, jobType string, config any) *Plan {
	cfg, _ := json.Marshal(config)
	return &Plan{Order: &models.Order{
		ID: models.NewID(), AccountID: r.AccountID, API: r.API, JobType: jobType,
		SessionConfig: models.JSON(cfg), CorrelationID: r.CorrelationID, TestMode: r.Test,
		APIKeyID: optional(r.APIKeyID),
	}, record: r.Record}
}

// add appends n jobs built by job (given the job's index) with the model and a surcharge per job.
func (p *Plan) add(r Requester, n int, m catalog.AIModel, surcharge int64, job func(i int, j *models.Job)) {
	now := time.Now().UTC()
	deadline := startDeadline(now, r.CancelAfter)
	outcome, _ := r.testOutcome() // every Plan… has checked it
	for i := range n {
		j := models.Job{
			ID: models.NewID(), AccountID: p.Order.AccountID, JobType: p.Order.JobType, Position: len(p.Jobs),
			AIModel: m.ID, AspectRatio: r.AspectRatio, CreditCost: m.BaseCreditCost + surcharge, Run: 1,
			Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now,
			StartDeadline: deadline, TestMode: p.Order.TestMode, TestOutcome: outcome,
		}
		job(i, &j)
		p.Jobs = append(p.Jobs, j)
	}
}

func (e *core) logger() *zap.Logger {
	if e.cfg.Log == nil {
		return zap.NewNop()
	}
	return e.cfg.Log
}

// ResolveModel resolves the generation model of a job type (of the provider when not empty) and
// checks that a worker generates with its provider right now: KindPrerequisite
// (ReasonModelNotResolved, Details [DetailNoGenerationModel], Subjects [jobType]) when no model serves the job type, KindUnavailable
// (ReasonGeneratorDown) when its provider has no active generator.
func (e *Generation) ResolveModel(ctx context.Context, jobType, provider string) (catalog.AIModel, error) {
	m, ok := e.cfg.Models.DefaultModel(jobType, provider)
	if !ok {
		err := refuse(KindPrerequisite, ReasonModelNotResolved, "", "No generation model is available for %s; nothing was created.", strings.ReplaceAll(jobType, "_", " "))
		err.Details, err.Subjects = []string{DetailNoGenerationModel}, []string{jobType}
		return m, err
	}
	live, err := e.GeneratorLive(ctx, m.Provider)
	if err != nil {
		e.logger().Warn("generator liveness", zap.String("provider", m.Provider), zap.Error(err))
	}
	if !live {
		r := unavailable(fmt.Sprintf("No %s generator is running right now; nothing was created. Retry in 30 to 60 seconds.", m.Provider), generatorRetryAfter, err)
		r.Reason = ReasonGeneratorDown
		return m, r
	}
	return m, nil
}

// Submitted is an accepted generation request: its order, the credit reservation the order holds,
// the records it creates, and what the façade logs of it.
type Submitted struct {
	OrderID         string
	ReservationID   string
	CreditsReserved int64
	// CreditsRemaining is the account's available balance right after the request's reservation.
	CreditsRemaining int64
	RecordIDs        []string
	AccountID        string
	JobType          string
	Jobs             int // how many jobs the order has
	CorrelationID    string
	TestMode         bool // a test key's request
}

// SubmitPlan creates the plan's order, jobs and records and reserves their credits in one
// transaction (SubmitWith), in which the requester's Record runs too, then starts the order.
// KindInsufficientCredits (CreditsRequired set), with nothing created, when the balance is short.
func (e *Generation) SubmitPlan(ctx context.Context, p *Plan) (Submitted, error) {
	if p.RecordIDs == nil {
		for _, j := range p.Jobs {
			p.RecordIDs = append(p.RecordIDs, j.ID)
		}
	}
	var inTx func(tx *models.Store) error
	if p.Records != nil || p.record != nil {
		inTx = func(tx *models.Store) error {
			if p.Records != nil {
				if err := p.Records(ctx, tx); err != nil {
					return err
				}
			}
			if p.record != nil {
				return p.record(ctx, tx, p.submitted()) // the reservation is made: CreditsReserved is set
			}
			return nil
		}
	}
	err := e.app.Orders.SubmitWith(ctx, p.Order, p.Jobs, inTx)
	if errors.Is(err, models.ErrInsufficientCredits) {
		need := models.ReservationTotal(p.Jobs)
		// The balance only words the refusal: when it cannot be read, the refusal stands without it.
		msg := fmt.Sprintf("Insufficient credits: this request needs %d; nothing was created.", need)
		if acc, aerr := e.store.GetAccount(ctx, p.Order.AccountID); aerr == nil {
			msg = fmt.Sprintf("Insufficient credits: this request needs %d and %d are available; nothing was created.", need, acc.CreditBalance)
		} else {
			e.logger().Warn("credit balance for a refusal", zap.String("account_id", p.Order.AccountID), zap.Error(aerr))
		}
		r := refuse(KindInsufficientCredits, "", "", "%s", msg)
		r.CreditsRequired, r.Cause = need, err
		return Submitted{}, r
	}
	if err != nil {
		return Submitted{}, err
	}
	return p.submitted(), nil
}

// submitted is the accepted request of a plan whose order is committed (or being committed, past
// its reservation).
func (p *Plan) submitted() Submitted {
	o := p.Order
	return Submitted{OrderID: o.ID, ReservationID: models.ReservationID(o.ID), CreditsReserved: o.CreditsReserved,
		CreditsRemaining: o.CreditsRemaining, TestMode: o.TestMode,
		RecordIDs: p.RecordIDs, AccountID: o.AccountID, JobType: o.JobType, Jobs: len(p.Jobs), CorrelationID: o.CorrelationID}
}

// submitted submits a plan that planning produced, or returns planning's refusal.
func (e *Generation) submitted(ctx context.Context, p *Plan, err error) (Submitted, error) {
	if err != nil {
		return Submitted{}, err
	}
	return e.SubmitPlan(ctx, p)
}

// RegisterIdeas plans (PlanIdeas) and submits (SubmitPlan) fashion models or sceneries.
func (e *Generation) RegisterIdeas(ctx context.Context, r Requester, in IdeasInput) (Submitted, error) {
	p, err := e.PlanIdeas(ctx, r, in)
	return e.submitted(ctx, p, err)
}

// RegisterPackshots plans (PlanPackshots) and submits (SubmitPlan) packshots of a product photo.
func (e *Generation) RegisterPackshots(ctx context.Context, r Requester, in ConfigInput) (Submitted, error) {
	p, err := e.PlanPackshots(ctx, r, in)
	return e.submitted(ctx, p, err)
}

// RegisterPhotoShoot plans (PlanPhotoShoot) and submits (SubmitPlan) photo-shoot images of a
// product photo.
func (e *Generation) RegisterPhotoShoot(ctx context.Context, r Requester, in ConfigInput) (Submitted, error) {
	p, err := e.PlanPhotoShoot(ctx, r, in)
	return e.submitted(ctx, p, err)
}

// RegisterVideo plans (PlanVideo) and submits (SubmitPlan) one video.
func (e *Generation) RegisterVideo(ctx context.Context, r Requester, in VideoInput) (Submitted, error) {
	p, err := e.PlanVideo(ctx, r, in)
	return e.submitted(ctx, p, err)
}

// RegisterReel plans (PlanReel) and submits (SubmitPlan) one reel of the images.
func (e *Generation) RegisterReel(ctx context.Context, r Requester, imageIDs []string, field func(i int) string) (Submitted, error) {
	p, err := e.PlanReel(ctx, r, imageIDs, field)
	return e.submitted(ctx, p, err)
}

// ---- ideas: fashion models and sceneries ------------------------------------------------------

// IdeasInput asks for Count fashion models or sceneries (Kind, made by JobType jobs) from the
// Preferences text.
type IdeasInput struct {
	JobType     string
	Kind        ReferenceKind
	Preferences string
	Count       int
}

// PlanIdeas plans Count reference items, INPROGRESS until their job is DONE.
func (e *Generation) PlanIdeas(ctx context.Context, r Requester, in IdeasInput) (*Plan, error) {
	if _, err := r.testOutcome(); err != nil {
		return nil, err
	}
	m, err := e.ResolveModel(ctx, in.JobType, "")
	if err != nil {
		return nil, err
	}
	n, prefs := in.Count, in.Preferences
	p := newPlan(r, in.JobType, map[string]any{"preferences": prefs, "count": n})
	items := make([]models.ReferenceItem, n)
	p.add(r, n, m, 0, func(i int, j *models.Job) {
		items[i] = models.ReferenceItem{ID: models.NewID(), AccountID: &p.Order.AccountID,
			Name: ideaName(prefs, i+1, n), Preferences: prefs, Status: models.RefStatusInProgress,
			OrderID: &p.Order.ID, JobID: &j.ID}
		j.Prompt, j.RecordID, j.ProductLabel = prefs, &items[i].ID, items[i].Name
		p.RecordIDs = append(p.RecordIDs, items[i].ID)
	})
	p.Records = func(ctx context.Context, tx *models.Store) error {
		return tx.CreateReferenceItems(ctx, models.ReferenceKind(in.Kind), items)
	}
	return p, nil
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

// ---- packshots and photo shoots -----------------------------------------------------------------

// The request fields a product-photo config names, as errors report them.
const (
	FieldProductPhoto = "config.product.id"
	FieldPreset       = "config.preset.id"
	FieldScenery      = "config.scenery.id"
	FieldModel        = "config.model.id"
)

// ConfigInput asks for Count packshots or photo-shoot images of a product photo, with an optional
// preset, scenery and fashion model (IDs as sent; "" for none) and the prompt's suggestions.
type ConfigInput struct {
	PhotoID     string // a valid ID
	PresetID    string
	SceneryID   string
	ModelID     string
	Suggestions string
	Count       int
}

// Photo is a product photo of an account with its product and upload.
type Photo struct {
	Image   models.ProductImage
	Product models.Product
	Asset   models.Asset
}

// FindPhoto loads a product photo of the account: KindNotFound when there is none (or its product
// is deleted), KindInvalid when its upload is unusable. field names the request field.
func (e *Generation) FindPhoto(ctx context.Context, accountID, field, photoID string) (*Photo, error) {
	image, product, upload, err := e.store.AccountProductPhoto(ctx, accountID, photoID)
	if errors.Is(err, models.ErrNotFound) {
		// The register routes refuse a bad reference with 400 naming the field, as for a preset,
		// scenery or model: their contract has no 404.
		r := refuse(KindInvalid, "", field, "product photo %s not found.", photoID)
		r.Cause = err // FindAnyImage looks further on it
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	p := Photo{Image: *image, Product: *product, Asset: *upload}
	if p.Asset.PurgedAt != nil {
		return nil, refuse(KindInvalid, "", field, "product photo %s was removed by the retention policy; upload it again.", photoID)
	}
	switch p.Asset.Status {
	case status.AssetReady, status.AssetProcessing: // a job waits for a photo still being prepared
	case status.AssetInvalid:
		return nil, refuse(KindInvalid, "", field, "product photo %s cannot be used: %s.", photoID, p.Asset.Problem)
	default:
		return nil, refuse(KindInvalid, "", field, "product photo %s has not been uploaded yet.", photoID)
	}
	return &p, nil
}

// Extras are the optional preset, scenery and fashion model of a config, resolved.
type Extras struct {
	Preset    *models.Preset
	SceneryID string
	ModelID   string
}

// ResolveExtras checks the config's optional preset, scenery and model (VisiblePreset,
// UsableReference): each must be the ID of one the account may use, else KindInvalid naming the
// field (config.preset.id, config.scenery.id, config.model.id).
func (e *Generation) ResolveExtras(ctx context.Context, accountID string, in ConfigInput) (Extras, error) {
	var x Extras
	var err error
	if x.Preset, err = e.app.Records.VisiblePreset(ctx, accountID, FieldPreset, in.PresetID); err != nil {
		return x, err
	}
	if x.SceneryID, err = e.app.Records.UsableReference(ctx, accountID, models.KindScenery, FieldScenery, in.SceneryID); err != nil {
		return x, err
	}
	x.ModelID, err = e.app.Records.UsableReference(ctx, accountID, models.KindFashionModel, FieldModel, in.ModelID)
	return x, err
}

// Session is the order's session_config, which providers read.
func (x Extras) Session(suggestions string) map[string]any {
	out := map[string]any{}
	if x.Preset != nil {
		out["preset_id"], out["style"] = x.Preset.ID, x.Preset.Name
	}
	if x.SceneryID != "" {
		out["scenery_id"] = x.SceneryID
	}
	if x.ModelID != "" {
		out["model_id"] = x.ModelID
	}
	if suggestions != "" {
		out["suggestions"] = suggestions
	}
	return out
}

// Surcharge is the preset's credit cost added to each job.
func (x Extras) Surcharge() int64 {
	if x.Preset == nil {
		return 0
	}
	return x.Preset.CreditCost
}

// configured resolves a ConfigInput's product photo and extras.
func (e *Generation) configured(ctx context.Context, accountID string, in ConfigInput) (*Photo, Extras, error) {
	ph, err := e.FindPhoto(ctx, accountID, FieldProductPhoto, in.PhotoID)
	if err != nil {
		return nil, Extras{}, err
	}
	x, err := e.ResolveExtras(ctx, accountID, in)
	return ph, x, err
}

// PlanPackshots plans Count packshots of a product photo; each is listed INPROGRESS under its
// record ID until its job completes.
func (e *Generation) PlanPackshots(ctx context.Context, r Requester, in ConfigInput) (*Plan, error) {
	if _, err := r.testOutcome(); err != nil {
		return nil, err
	}
	ph, x, err := e.configured(ctx, r.AccountID, in)
	if err != nil {
		return nil, err
	}
	m, err := e.ResolveModel(ctx, jobtype.Packshot, "")
	if err != nil {
		return nil, err
	}
	session := x.Session(in.Suggestions)
	session["product_photo_id"], session["count"] = in.PhotoID, in.Count
	p := newPlan(r, jobtype.Packshot, session)
	p.add(r, in.Count, m, x.Surcharge(), func(_ int, j *models.Job) {
		recordID := models.NewID()
		j.ProductID, j.ProductRef, j.ProductLabel = &ph.Product.ID, ph.Product.ExternalRef, ProductName(&ph.Product)
		j.InputAssetID, j.RecordID = &ph.Asset.ID, &recordID
		p.RecordIDs = append(p.RecordIDs, recordID)
	})
	return p, nil
}

// ProductName is how jobs label a product: its display name, else its external reference.
func ProductName(p *models.Product) string {
	if p.DisplayName != "" {
		return p.DisplayName
	}
	return p.ExternalRef
}

// ApprovedPackshot is the product photo's own latest accepted packshot, never one of another photo
// of the same product: KindPrerequisite (ReasonPackshotNotApproved, Details [DetailPackshotNotApproved], Subjects [photoID]) when it has
// none.
func (e *Generation) ApprovedPackshot(ctx context.Context, accountID, photoID string) (*models.Packshot, error) {
	packshot, err := e.store.LatestApprovedPackshot(ctx, accountID, photoID)
	if errors.Is(err, models.ErrNotFound) {
		r := refuse(KindPrerequisite, ReasonPackshotNotApproved, "", "Product photo %s has no approved packshot: approve one of its packshots first (packshots/update-packshot with Voting APPROVED). Nothing was created and no credits were reserved.", photoID)
		r.Details, r.Subjects = []string{DetailPackshotNotApproved}, []string{photoID}
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	return packshot, nil
}

// PlanPhotoShoot plans Count photo-shoot images of a product photo from that photo's own approved
// packshot (rules 1–4 of registerPhotoShoot in api/external/openapi.yaml). A preset that requires a scenery needs one in
// the request (KindInvalid); one that recommends a scenery gets DefaultSceneryID when the request
// names none and the account may use it.
func (e *Generation) PlanPhotoShoot(ctx context.Context, r Requester, in ConfigInput) (*Plan, error) {
	if _, err := r.testOutcome(); err != nil {
		return nil, err
	}
	ph, x, err := e.configured(ctx, r.AccountID, in)
	if err != nil {
		return nil, err
	}
	if x.Preset != nil && x.SceneryID == "" && x.Preset.SceneryRequirement != nil {
		switch *x.Preset.SceneryRequirement {
		case models.SceneryRequired:
			return nil, refuse(KindInvalid, "", "", "%s is required: preset %q needs a scenery.", FieldScenery, x.Preset.Name)
		case models.SceneryRecommended:
			if _, err := e.store.FindUsableReferenceItem(ctx, models.KindScenery, r.AccountID, DefaultSceneryID); err == nil {
				x.SceneryID = DefaultSceneryID
			}
		}
	}
	session := x.Session(in.Suggestions)
	packshot, err := e.ApprovedPackshot(ctx, r.AccountID, in.PhotoID)
	if err != nil {
		return nil, err
	}
	m, err := e.ResolveModel(ctx, jobtype.PhotoShoot, "")
	if err != nil {
		return nil, err
	}
	session["product_photo_id"], session["packshot_id"], session["count"] = in.PhotoID, packshot.ID, in.Count
	p := newPlan(r, jobtype.PhotoShoot, session)
	p.add(r, in.Count, m, x.Surcharge(), func(_ int, j *models.Job) {
		j.ProductID, j.ProductRef, j.ProductLabel = &ph.Product.ID, ph.Product.ExternalRef, ProductName(&ph.Product)
		j.PackshotID, j.InputAssetID = &packshot.ID, &packshot.AssetID
	})
	return p, nil
}

// ---- videos and reels ---------------------------------------------------------------------------

// Source is an image a video or reel starts from, with the product it shows when known.
type Source struct {
	AssetID string
	Product *models.Product
}

// FindImage resolves the ID of a product photo, or (generated) of a DONE photo-shoot image of the
// account, to the image a video starts from: KindInvalid naming the field when there is none or
// it is not usable (yet).
func (e *Generation) FindImage(ctx context.Context, accountID, field, imageID string, generated bool) (*Source, error) {
	if !generated {
		ph, err := e.FindPhoto(ctx, accountID, field, imageID)
		if err != nil {
			return nil, err
		}
		return &Source{AssetID: ph.Asset.ID, Product: &ph.Product}, nil
	}
	j, err := e.store.AccountJob(ctx, accountID, imageID, jobtype.PhotoShoot)
	if errors.Is(err, models.ErrNotFound) {
		r := refuse(KindInvalid, "", field, "image %s not found.", imageID)
		r.Cause = err // FindAnyImage looks further on it
		return nil, r
	}
	if err != nil {
		return nil, err
	}
	outputs, err := e.store.JobOutputs(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	if j.Status != status.JobCompleted || len(outputs[j.ID]) == 0 {
		return nil, refuse(KindInvalid, "", field, "image %s is not DONE yet.", imageID)
	}
	if outputs[j.ID][0].PurgedAt != nil {
		// As the plugin API refuses a purged input up front: its job could only fail INPUT_MISSING.
		return nil, refuse(KindInvalid, "", field, "image %s was removed by the retention policy.", imageID)
	}
	s := &Source{AssetID: outputs[j.ID][0].ID}
	if p, err := e.store.JobProduct(ctx, j); err == nil {
		s.Product = p
	}
	return s, nil
}

// FindAnyImage resolves an ID that names either a product photo or a photo-shoot image.
func (e *Generation) FindAnyImage(ctx context.Context, accountID, field, imageID string) (*Source, error) {
	s, err := e.FindImage(ctx, accountID, field, imageID, false)
	if errors.Is(err, models.ErrNotFound) {
		s, err = e.FindImage(ctx, accountID, field, imageID, true)
		if errors.Is(err, models.ErrNotFound) {
			return nil, refuse(KindInvalid, "", field, "no product photo or photo-shoot image %s.", imageID)
		}
	}
	return s, err
}

// VideoInput asks for one video of a product photo (ImageID) or of a photo-shoot image
// (Generated), named by the request field Field, with an optional provider ("" for the default).
type VideoInput struct {
	Field      string
	ImageID    string // a valid ID
	Generated  bool
	Suggestion string
	Provider   string
}

// PlanVideo plans one video: KindInvalid when the provider does not generate videos here.
func (e *Generation) PlanVideo(ctx context.Context, r Requester, in VideoInput) (*Plan, error) {
	if _, err := r.testOutcome(); err != nil {
		return nil, err
	}
	if _, ok := e.cfg.Models.DefaultModel(jobtype.Video, in.Provider); in.Provider != "" && !ok {
		return nil, refuse(KindInvalid, "", "", "provider %q does not generate videos here; available: %s.", in.Provider, strings.Join(e.app.Catalog.VideoProviders(), ", "))
	}
	src, err := e.FindImage(ctx, r.AccountID, in.Field, in.ImageID, in.Generated)
	if err != nil {
		return nil, err
	}
	m, err := e.ResolveModel(ctx, jobtype.Video, in.Provider)
	if err != nil {
		return nil, err
	}
	config := map[string]any{in.Field: in.ImageID, "provider": m.Provider}
	if in.Suggestion != "" {
		config["suggestions"] = in.Suggestion
	}
	p := newPlan(r, jobtype.Video, config)
	p.add(r, 1, m, 0, func(_ int, j *models.Job) {
		j.Prompt = in.Suggestion
		j.SetInputs([]string{src.AssetID})
		if src.Product != nil {
			j.ProductID, j.ProductRef, j.ProductLabel = &src.Product.ID, src.Product.ExternalRef, ProductName(src.Product)
		}
	})
	return p, nil
}

// PlanReel plans one reel of the images (valid IDs of product photos or photo-shoot images), in
// order; field names the i-th image in errors.
func (e *Generation) PlanReel(ctx context.Context, r Requester, imageIDs []string, field func(i int) string) (*Plan, error) {
	if _, err := r.testOutcome(); err != nil {
		return nil, err
	}
	var inputs []string
	var product *models.Product
	for i, v := range imageIDs {
		src, err := e.FindAnyImage(ctx, r.AccountID, field(i), v)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, src.AssetID)
		if product == nil {
			product = src.Product
		}
	}
	m, err := e.ResolveModel(ctx, jobtype.Reel, "")
	if err != nil {
		return nil, err
	}
	p := newPlan(r, jobtype.Reel, map[string]any{"imagesIds": imageIDs})
	p.add(r, 1, m, 0, func(_ int, j *models.Job) {
		j.SetInputs(inputs)
		if product != nil {
			j.ProductID, j.ProductRef, j.ProductLabel = &product.ID, product.ExternalRef, ProductName(product)
		}
	})
	return p, nil
}
