package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// Sessions: a session (api/openapi.yaml, createSession) is an order of jobs for several products, each product a
// subject with its images_count and AI model. The engine plans it (the catalog, pricing and
// packshot approval rules), commits it idempotently with the caller's record, and starts it.

// The APIs an order is accepted through (SessionRequest.API, Requester.API): the engine stores
// them on the order, and the metrics count orders by them.
const (
	APIPlugin   = models.APIPlugin
	APIExternal = models.APIExternal
)

// SessionConfig is the configuration shared by every subject of a session; it is stored on the
// order as JSON, under these names.
type SessionConfig struct {
	AspectRatio string `json:"aspect_ratio,omitempty"`
	Style       string `json:"style,omitempty"`
	Suggestions string `json:"suggestions,omitempty"`
	SceneryID   string `json:"scenery_id,omitempty"`
	ModelID     string `json:"model_id,omitempty"`
}

// SessionSubject is one product of a session.
type SessionSubject struct {
	ProductRef           string
	ProductLabel         string
	PackshotAssetID      string
	ImagesCount          int
	AIModel              string
	AutoRegisterPackshot bool
	// TestOutcome is the subject's test_outcome (a test key's only): what becomes of its jobs.
	TestOutcome *TestOutcome
}

// SessionRequest is a session to plan, already checked for shape (required fields, bounds) by the
// façade. Refusals name fields as session_config.* and subjects[i].*.
type SessionRequest struct {
	AccountID      string
	InstallationID string
	API            string // APIPlugin, APIExternal
	JobType        string // "" is a photo shoot
	Config         SessionConfig
	Subjects       []SessionSubject
	CorrelationID  string
	// SourceOrderID is set on a clone.
	SourceOrderID *string
	// JobTypes are the job types the façade offers: a model that serves none of them is unknown.
	JobTypes []string
	// CancelAfter, when not 0, is the request's Cancel-After (ParseCancelAfter): every job that
	// has not started that long after acceptance is cancelled.
	CancelAfter time.Duration
	// Test marks a request of a test key (the installation is a test twin): its order and jobs
	// are test mode's.
	Test bool
	// APIKeyID is the API key that made the request: its order records it (usage by key).
	APIKeyID string
}

// PlanSession validates a session against the catalog and resolves each subject's input: the
// approved packshot of a photo-shoot subject, the uploaded photo of a packshot subject (the rules
// of createSession in api/openapi.yaml), and the config's scenery_id and model_id (which must be ones the account
// may use). It returns the order and jobs to commit, or a refusal: KindInvalid naming the field, or KindPrerequisite (ReasonPackshotNotApproved) listing the products without an
// approved packshot. Nothing is written.
func (e *Sessions) PlanSession(ctx context.Context, req SessionRequest) (*models.Order, []models.Job, error) {
	jobType := req.JobType
	if jobType == "" {
		jobType = jobtype.PhotoShoot
	}
	cfg := req.Config
	if cfg.AspectRatio == "" {
		cfg.AspectRatio = e.app.Catalog.DefaultAspectRatio()
	}
	total := 0
	seen := map[string]bool{}
	req.Subjects = canonicalSubjects(req.Subjects)
	outcomes := make([]*string, len(req.Subjects))
	for i, s := range req.Subjects {
		field := "subjects[" + strconv.Itoa(i) + "]"
		var err error
		if outcomes[i], err = checkTestOutcome(field+".test_outcome", s.TestOutcome, req.Test); err != nil {
			return nil, nil, err
		}
		if seen[s.ProductRef] {
			return nil, nil, refuse(KindInvalid, "", field+".product_ref",
				"%q appears twice; give one subject per product with its images_count.", s.ProductRef)
		}
		seen[s.ProductRef] = true
		m, ok := e.cfg.Models.Model(s.AIModel)
		if !ok || !slices.ContainsFunc(req.JobTypes, m.Serves) {
			return nil, nil, refuse(KindInvalid, "", field+".ai_model", "%q is not a model listed by GET /ai-models.", s.AIModel)
		}
		if !m.Serves(jobType) {
			return nil, nil, refuse(KindInvalid, "", field+".ai_model", "%q does not generate %s jobs.", s.AIModel, jobType)
		}
		if !m.SupportsAspectRatio(cfg.AspectRatio) {
			return nil, nil, refuse(KindInvalid, "", "session_config.aspect_ratio", "%q is not supported by %s; it supports %s.",
				cfg.AspectRatio, s.AIModel, strings.Join(m.SupportedAspectRatios, ", "))
		}
		if jobType == jobtype.Packshot {
			if !s.AutoRegisterPackshot {
				return nil, nil, refuse(KindInvalid, "", field+".auto_register_packshot", "must be true for packshot jobs.")
			}
			if s.PackshotAssetID == "" {
				return nil, nil, refuse(KindInvalid, "", field+".packshot_asset_id", "is required for packshot jobs: it is the input photo.")
			}
		}
		total += s.ImagesCount
	}
	if err := e.sessionReferences(ctx, req.AccountID, &cfg); err != nil {
		return nil, nil, err
	}

	now := time.Now().UTC()
	configJSON, _ := json.Marshal(cfg)
	instID := req.InstallationID
	order := &models.Order{
		ID: models.NewID(), AccountID: req.AccountID, InstallationID: &instID, API: req.API,
		JobType: jobType, SessionConfig: models.JSON(configJSON), CorrelationID: req.CorrelationID,
		SourceOrderID: req.SourceOrderID, TestMode: req.Test, APIKeyID: optional(req.APIKeyID),
	}
	jobs := make([]models.Job, 0, total)
	deadline := startDeadline(now, req.CancelAfter)
	var approved map[string]*models.ApprovedProduct
	if jobType != jobtype.Packshot {
		// One query for every subject's product and approved packshots.
		var err error
		refs, named := subjectRefs(req.Subjects)
		if approved, err = e.store.LiveProductsWithApprovedPackshots(ctx, instID, refs, named); err != nil {
			return nil, nil, err
		}
	}
	var missing []string
	unusable := map[string]string{} // product ref: why its approved packshot's file cannot be read
	for i, s := range req.Subjects {
		var productID, productName string
		var packshotID, inputAssetID *string
		if jobType == jobtype.Packshot {
			// A packshot job starts from a plain photo: no approved packshot is needed.
			p, assetID, err := e.resolvePhotoInput(ctx, instID, i, s)
			if err != nil {
				return nil, nil, err
			}
			productID, productName, inputAssetID = p.ID, p.DisplayName, &assetID
		} else {
			p, packshot := approvedPackshot(approved, s)
			if packshot == nil {
				missing = append(missing, s.ProductRef)
				continue
			}
			if problem := approvedFileProblem(packshot); problem != "" {
				// Approved while its upload was being prepared, and found unusable since: no job
				// could read it, so it is refused as a missing one, before any credit is reserved.
				missing = append(missing, s.ProductRef)
				unusable[s.ProductRef] = problem
				continue
			}
			productID, productName, packshotID, inputAssetID = p.ID, p.DisplayName, &packshot.ID, &packshot.AssetID
		}
		m, _ := e.cfg.Models.Model(s.AIModel)
		label := s.ProductLabel
		if label == "" {
			label = productName
		}
		for range s.ImagesCount {
			jobs = append(jobs, models.Job{
				ID: models.NewID(), AccountID: req.AccountID, InstallationID: &instID, JobType: jobType,
				Position: len(jobs), ProductID: &productID, ProductRef: s.ProductRef, ProductLabel: label,
				PackshotID: packshotID, InputAssetID: inputAssetID, AIModel: m.ID, AspectRatio: cfg.AspectRatio,
				CreditCost: m.BaseCreditCost, Run: 1, Status: status.JobPending, Voting: models.VotingPending,
				CreatedAt: now, UpdatedAt: now, StartDeadline: deadline, TestMode: req.Test, TestOutcome: outcomes[i],
			})
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		var none, why []string
		for _, ref := range missing {
			if problem, ok := unusable[ref]; ok {
				why = append(why, fmt.Sprintf("the approved packshot of %s %s", ref, problem))
			} else {
				none = append(none, ref)
			}
		}
		msg := ""
		if len(none) > 0 {
			msg = "These products have no approved packshot: " + strings.Join(none, ", ") + ". "
		}
		if len(why) > 0 {
			msg += "No job can start from " + strings.Join(why, "; ") + ": approve another packshot. "
		}
		err := refuse(KindPrerequisite, ReasonPackshotNotApproved, "", "%sNothing was created and no credits were charged.", msg)
		err.Subjects = missing
		return nil, nil, err
	}
	return order, jobs, nil
}

// canonicalSubjects is a copy of subjects with their packshot_asset_id as the store keeps IDs
// (models.CanonicalID), so that one sent in upper case finds its asset.
func canonicalSubjects(subjects []SessionSubject) []SessionSubject {
	out := slices.Clone(subjects)
	for i := range out {
		out[i].PackshotAssetID = models.CanonicalID(out[i].PackshotAssetID)
	}
	return out
}

// subjectRefs are the product refs of the subjects, in order, and the packshot assets they name.
func subjectRefs(subjects []SessionSubject) (refs, named []string) {
	refs = make([]string, len(subjects))
	for i, s := range subjects {
		refs[i] = s.ProductRef
		if s.PackshotAssetID != "" {
			named = append(named, s.PackshotAssetID)
		}
	}
	return refs, named
}

// approvedPackshot is the subject's product in approved (models.LiveProductsWithApprovedPackshots)
// and the approved packshot its photo-shoot jobs start from: its packshot_asset_id when that is an
// approved packshot of the product, else the latest approved one. A nil product or packshot means
// there is none.
func approvedPackshot(approved map[string]*models.ApprovedProduct, s SessionSubject) (*models.ApprovedProduct, *models.ApprovedPackshot) {
	a := approved[s.ProductRef]
	if a == nil {
		return nil, nil
	}
	return a, a.Approved(s.PackshotAssetID)
}

// approvedFileProblem tells why no job can read an approved packshot's file ("" when one can): it
// was found invalid when prepared after the approval, or removed.
func approvedFileProblem(p *models.ApprovedPackshot) string {
	switch {
	case p.AssetPurged:
		return "was removed by the retention policy"
	case p.AssetStatus == status.AssetInvalid:
		return "cannot be used (" + p.AssetProblem + ")"
	}
	return ""
}

// resolvePhotoInput checks the input of a packshot job: the subject's product must be in the
// catalog and packshot_asset_id an upload of this installation that is stored or may still arrive.
func (e *Sessions) resolvePhotoInput(ctx context.Context, installationID string, i int, s SessionSubject) (*models.Product, string, error) {
	field := "subjects[" + strconv.Itoa(i) + "]"
	// An upload sent straight to the store is first used here.
	if err := e.app.Uploads.CollectUpload(ctx, installationID, s.PackshotAssetID, field+".packshot_asset_id"); err != nil {
		return nil, "", err
	}
	product, asset, err := e.store.PackshotJobInput(ctx, installationID, s.ProductRef, s.PackshotAssetID)
	switch {
	case errors.Is(err, models.ErrNotFound) && product == nil:
		return nil, "", refuse(KindInvalid, "", field+".product_ref",
			"%q is not in the catalog; register it with POST /images or POST /packshots.", s.ProductRef)
	case errors.Is(err, models.ErrNotFound):
		return nil, "", refuse(KindInvalid, "", field+".packshot_asset_id", "%q is not an upload of this installation.", s.PackshotAssetID)
	case err != nil:
		return nil, "", err
	}
	// What POST /images refuses of a source image cannot be a packshot job's input either: one
	// removed by retention, never uploaded with its upload URL expired, or invalid.
	if problem := sourceImageProblem(asset, e.now()); problem != "" {
		return nil, "", refuse(KindInvalid, "", field+".packshot_asset_id", "%q %s", s.PackshotAssetID, problem)
	}
	return product, asset.ID, nil
}

// Session is a committed session as the façades show it: its order, the credits it reserved and
// the jobs created for its subjects, in order of position.
type Session struct {
	OrderID         string
	Status          string
	CreditsReserved int64
	// CreditsRemaining is the account's available balance right after the session's reservation.
	CreditsRemaining int64
	Jobs             []SessionJob
	TestMode         bool // a test key's session
	// order and jobs are what was committed, for StartAll.
	order *models.Order
	jobs  []models.Job
}

// SessionJob is one job of a committed session and the product of its subject.
type SessionJob struct {
	ID         string
	ProductRef string
}

// sessionOf is the view of a committed order and its jobs.
func sessionOf(order *models.Order, jobs []models.Job) Session {
	s := Session{OrderID: order.ID, Status: order.Status, CreditsReserved: order.CreditsReserved,
		CreditsRemaining: order.CreditsRemaining, TestMode: order.TestMode,
		Jobs: make([]SessionJob, len(jobs)), order: order, jobs: jobs}
	for i, j := range jobs {
		s.Jobs[i] = SessionJob{ID: j.ID, ProductRef: j.ProductRef}
	}
	return s
}

// SessionRecord runs inside the transaction that commits a session, with the store of that
// transaction and the session (credits reserved); an error from it rolls the session back. The
// plugin API records an Idempotency-Key's answer this way (KeyClaim.SessionRecord).
type SessionRecord func(ctx context.Context, tx *models.Store, s Session) error

// CommitSession plans the session and commits its order, jobs and reservation in one transaction
// (in which record, when not nil, also runs); the workflow is not started (StartAll). Besides
// PlanSession's refusals it answers KindInsufficientCredits, with CreditsRequired holding what the
// session costs, when the balance is short; ErrClaimLost when record found its Idempotency-Key
// claim taken over, in which case nothing was committed.
func (e *Sessions) CommitSession(ctx context.Context, req SessionRequest, record SessionRecord) (Session, error) {
	order, jobs, err := e.PlanSession(ctx, req)
	if err != nil {
		return Session{}, err
	}
	var inTx func(tx *models.Store) error
	if record != nil {
		inTx = func(tx *models.Store) error { return record(ctx, tx, sessionOf(order, jobs)) }
	}
	err = e.app.Orders.Commit(ctx, order, jobs, inTx)
	if errors.Is(err, models.ErrInsufficientCredits) {
		need := models.ReservationTotal(jobs)
		unit := "credits"
		if need == 1 {
			unit = "credit"
		}
		refusal := refuse(KindInsufficientCredits, "", "",
			"This session costs %d %s, more than the account has available.", need, unit)
		refusal.CreditsRequired = need
		return Session{}, refusal
	}
	if err != nil {
		return Session{}, err
	}
	return sessionOf(order, jobs), nil
}

// SubmitSession is CommitSession followed by the workflow's start (StartCommitted).
func (e *Sessions) SubmitSession(ctx context.Context, req SessionRequest, record SessionRecord) (Session, error) {
	s, err := e.CommitSession(ctx, req, record)
	if err != nil {
		return Session{}, err
	}
	e.app.Orders.StartCommitted(ctx, s.order, s.jobs)
	return s, nil
}

// StartAll starts the workflows of committed sessions, several at a time, within timeout as a
// whole (so that an unreachable Temporal delays the caller by seconds, not by a timeout per order).
// A start that fails, panics or does not finish in time is logged and left to the Sweeper: the
// orders are committed. POST /jobs/batch commits all its sessions, then starts them this way.
func (e *Sessions) StartAll(ctx context.Context, sessions []Session, timeout time.Duration) {
	if len(sessions) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					e.cfg.Log.Error("order workflow start panicked; the sweeper will start it",
						zap.String("order_id", s.OrderID), zap.Any("panic", p))
				}
			}()
			_ = e.gatedStart(ctx, orderStartLeft, zap.String("order_id", s.OrderID),
				func(ctx context.Context) error { return e.app.Orders.Start(ctx, s.order, s.jobs) })
		}()
	}
	wg.Wait()
}

// sessionReferences checks a session config's scenery_id and model_id against what the account
// may use and stores them as the catalog spells them.
func (e *Sessions) sessionReferences(ctx context.Context, accountID string, cfg *SessionConfig) error {
	var err error
	if cfg.SceneryID, err = e.app.Records.UsableReference(ctx, accountID, models.KindScenery, "session_config.scenery_id", cfg.SceneryID); err != nil {
		return err
	}
	cfg.ModelID, err = e.app.Records.UsableReference(ctx, accountID, models.KindFashionModel, "session_config.model_id", cfg.ModelID)
	return err
}
