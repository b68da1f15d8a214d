package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// genStudio is a registry of one local model that serves packshots, photo shoots and scenery ideas.
var genStudio = newRegistry(&catalog.Catalog{AIModels: []catalog.AIModel{{ID: "local/studio-v1", Provider: "local", BaseCreditCost: 2,
	JobTypes: []string{jobtype.Packshot, jobtype.PhotoShoot, jobtype.SceneryIdea}}}})

// genFixture is an engine over a fresh SQLite database whose Temporal answers that generators run
// (unless down) and accepts workflow starts, and an account with credits.
type genFixture struct {
	t       *testing.T
	db      *gorm.DB
	engine  *engine.Engine
	account string
	down    bool
	// lastPoll, when set, is when the fixture's one poller last polled.
	lastPoll time.Time
}

func newGenFixture(t *testing.T, credits int64) *genFixture {
	f := &genFixture{t: t, db: testdb.Open(t, testdb.SQLiteURL(t))}
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(&mocks.WorkflowRun{}, nil)
	c.On("DescribeTaskQueue", mock.Anything, mock.Anything, mock.Anything).Return(
		func(context.Context, string, enumspb.TaskQueueType) *workflowservice.DescribeTaskQueueResponse {
			if f.down {
				return &workflowservice.DescribeTaskQueueResponse{}
			}
			poller := &taskqueuepb.PollerInfo{Identity: "worker@test"}
			if !f.lastPoll.IsZero() {
				poller.LastAccessTime = timestamppb.New(f.lastPoll)
			}
			return &workflowservice.DescribeTaskQueueResponse{Pollers: []*taskqueuepb.PollerInfo{poller}}
		}, nil)
	f.engine = engine.New(engine.Config{Store: models.NewStore(f.db), Temporal: c, TaskQueue: "shotflow", Log: zap.NewNop(), Models: genStudio})
	f.account = f.newAccount(credits)
	return f
}

// newAccount creates an account with the credits and returns its ID.
func (f *genFixture) newAccount(credits int64) string {
	f.t.Helper()
	acc, err := models.CreateAccount(f.db, "Team "+models.NewID()[:6], credits)
	if err != nil {
		f.t.Fatal(err)
	}
	return acc.ID
}

func (f *genFixture) create(rows ...any) {
	f.t.Helper()
	for _, row := range rows {
		if err := f.db.Create(row).Error; err != nil {
			f.t.Fatal(err)
		}
	}
}

// photo inserts a ready product photo of the product (a new one when productID is "") and
// returns the photo's ID and its product's ID.
func (f *genFixture) photo(productID string) (string, string) {
	f.t.Helper()
	now := time.Now().UTC()
	if productID == "" {
		p := models.Product{ID: models.NewID(), AccountID: f.account, DisplayName: "Mug", CreatedAt: now, UpdatedAt: now}
		p.ExternalRef = p.ID
		f.create(&p)
		productID = p.ID
	}
	a := models.Asset{ID: models.NewID(), AccountID: f.account, Kind: models.AssetKindUpload, Status: status.AssetReady,
		Filename: "p.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "uploads/" + models.NewID(), Width: 64, Height: 64,
		CreatedAt: now, UpdatedAt: now}
	img := models.ProductImage{ID: models.NewID(), AccountID: f.account, ProductID: productID, AssetID: a.ID, CreatedAt: now}
	img.ExternalRef = img.ID
	f.create(&a, &img)
	return img.ID, productID
}

// packshot inserts a packshot cut from the photo with the voting, voted at votedAt, and returns it.
func (f *genFixture) packshot(photoID, productID, voting string, votedAt time.Time) models.Packshot {
	f.t.Helper()
	a := models.Asset{ID: models.NewID(), AccountID: f.account, Kind: models.AssetKindOutput, Status: status.AssetReady,
		Filename: "s.png", ContentType: "image/png", SizeBytes: 10, BlobKey: "outputs/" + models.NewID(), CreatedAt: votedAt, UpdatedAt: votedAt}
	p := models.Packshot{ID: models.NewID(), AccountID: f.account, ProductID: productID, AssetID: a.ID,
		Voting: voting, SourceImageID: &photoID, CreatedAt: votedAt}
	if voting == models.VotingAccepted {
		p.VotingAt = &votedAt
	}
	f.create(&a, &p)
	return p
}

func (f *genFixture) requester() engine.Requester {
	return engine.Requester{AccountID: f.account, API: models.APIExternal, CorrelationID: "test", AspectRatio: "1:1"}
}

// wantGenRefusal fails unless err is an engine.Error of the kind (and reason when not "").
func wantGenRefusal(t *testing.T, what string, err error, kind engine.Kind, reason string) *engine.Error {
	t.Helper()
	e, ok := engine.As(err)
	if !ok || e.Kind != kind || (reason != "" && e.Reason != reason) {
		t.Fatalf("%s: %v (%#v), want %s %s", what, err, e, kind, reason)
	}
	return e
}

// A photo shoot starts from the photo's own latest approved packshot: not a sibling photo's, not
// an archived, deleted or unapproved one. Without one it is a prerequisite refusal naming the photo.
func TestApprovedPackshotIsThePhotosOwn(t *testing.T) {
	f := newGenFixture(t, 100)
	ctx := t.Context()
	photo, product := f.photo("")
	sibling, _ := f.photo(product)
	t0 := time.Now().UTC().Add(-time.Hour)
	f.packshot(sibling, product, models.VotingAccepted, t0) // the sibling's approved packshot
	f.packshot(photo, product, models.VotingRejected, t0)
	f.packshot(photo, product, models.VotingPending, t0)
	archived := f.packshot(photo, product, models.VotingAccepted, t0.Add(time.Minute))
	f.db.Model(&models.Packshot{}).Where("id = ?", archived.ID).Update("archived_at", t0)
	deleted := f.packshot(photo, product, models.VotingAccepted, t0.Add(time.Minute))
	f.db.Model(&models.Packshot{}).Where("id = ?", deleted.ID).Update("deleted_at", t0)

	_, err := f.engine.Generation.ApprovedPackshot(ctx, f.account, photo)
	e := wantGenRefusal(t, "no approved packshot", err, engine.KindPrerequisite, engine.ReasonPackshotNotApproved)
	if !slices.Equal(e.Subjects, []string{photo}) || !slices.Equal(e.Details, []string{engine.DetailPackshotNotApproved}) ||
		!strings.Contains(e.Message, photo) {
		t.Errorf("refusal %#v, want details [packshot_not_approved] naming photo %s", e, photo)
	}
	// The plan stops there: nothing is resolved or created.
	if _, err := f.engine.Generation.PlanPhotoShoot(ctx, f.requester(), engine.ConfigInput{PhotoID: photo, Count: 1}); err == nil {
		t.Fatal("PlanPhotoShoot without an approved packshot succeeded")
	} else {
		wantGenRefusal(t, "plan without packshot", err, engine.KindPrerequisite, engine.ReasonPackshotNotApproved)
	}

	older := f.packshot(photo, product, models.VotingAccepted, t0.Add(2*time.Minute))
	latest := f.packshot(photo, product, models.VotingAccepted, t0.Add(3*time.Minute))
	got, err := f.engine.Generation.ApprovedPackshot(ctx, f.account, photo)
	if err != nil || got.ID != latest.ID {
		t.Fatalf("approved packshot %v %v, want the latest %s (not %s)", got, err, latest.ID, older.ID)
	}
	// Another account never sees it.
	other := f.newAccount(0)
	if _, err := f.engine.Generation.ApprovedPackshot(ctx, other, photo); err == nil {
		t.Error("another account's approved packshot was used")
	}

	p, err := f.engine.Generation.PlanPhotoShoot(ctx, f.requester(), engine.ConfigInput{PhotoID: photo, Count: 2, Suggestions: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 2 || p.Order.JobType != jobtype.PhotoShoot || !strings.Contains(string(p.Order.SessionConfig), latest.ID) {
		t.Fatalf("plan %+v, want 2 photo-shoot jobs from packshot %s", p.Order, latest.ID)
	}
	for _, j := range p.Jobs {
		if j.PackshotID == nil || *j.PackshotID != latest.ID || j.InputAssetID == nil || *j.InputAssetID != latest.AssetID ||
			j.ProductID == nil || *j.ProductID != product || j.CreditCost != 2 {
			t.Errorf("job %+v, want packshot %s, its asset, product %s and cost 2", j, latest.ID, product)
		}
	}
}

// A product photo must be the account's, of a live product, with a usable upload.
// A product photo that is not the account's, or is gone, is refused as the other references of a
// register route are: KindInvalid naming the field (400), never a 404 the contract does not list.
func TestFindPhoto(t *testing.T) {
	f := newGenFixture(t, 100)
	ctx := t.Context()
	photo, product := f.photo("")
	if p, err := f.engine.Generation.FindPhoto(ctx, f.account, "imageId", photo); err != nil || p.Product.ID != product {
		t.Fatalf("FindPhoto: %v %v", p, err)
	}
	other := f.newAccount(0)
	e := wantGenRefusal(t, "other account", func() error { _, err := f.engine.Generation.FindPhoto(ctx, other, "imageId", photo); return err }(),
		engine.KindInvalid, "")
	if e.Error() != "imageId: product photo "+photo+" not found." {
		t.Errorf("message %q", e.Error())
	}
	var img models.ProductImage
	f.db.Take(&img, "id = ?", photo)
	f.db.Model(&models.Asset{}).Where("id = ?", img.AssetID).Updates(map[string]any{"status": status.AssetInvalid, "problem": "too small"})
	_, err := f.engine.Generation.FindPhoto(ctx, f.account, "imageId", photo)
	if e := wantGenRefusal(t, "invalid upload", err, engine.KindInvalid, ""); !strings.HasSuffix(e.Message, "cannot be used: too small.") {
		t.Errorf("message %q", e.Message)
	}
	f.db.Model(&models.Product{}).Where("id = ?", product).Update("deleted_at", time.Now().UTC())
	_, err = f.engine.Generation.FindPhoto(ctx, f.account, "imageId", photo)
	wantGenRefusal(t, "deleted product", err, engine.KindInvalid, "")
}

// Presets: published and public or the account's own, with their surcharge per job; sceneries
// and fashion models: usable by the account. Anything else — not a UUID, missing, unusable or
// another account's — is refused alike: KindInvalid naming the field.
func TestResolveExtras(t *testing.T) {
	f := newGenFixture(t, 100)
	other := f.newAccount(0)
	ctx := t.Context()
	now := time.Now().UTC()
	preset := func(owner *string, status, visibility string, cost int64) string {
		p := models.Preset{ID: models.NewID(), AccountID: owner, Type: models.PresetTypeUser, Status: status, Visibility: visibility,
			Slug: "p-" + models.NewID(), Name: "Soft light", CreditCost: cost, IsFree: cost == 0, CreatedAt: now, UpdatedAt: now}
		f.create(&p)
		return p.ID
	}
	public := preset(&other, models.PresetPublished, models.PresetPublic, 3)
	own := preset(&f.account, models.PresetPublished, models.PresetPrivate, 1)
	foreign := preset(&other, models.PresetPublished, models.PresetPrivate, 1)
	draft := preset(&f.account, models.PresetDraft, models.PresetPublic, 1)

	for _, id := range []string{public, own} {
		x, err := f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{PresetID: id})
		if err != nil || x.Preset == nil || x.Preset.ID != id || x.Surcharge() != x.Preset.CreditCost {
			t.Errorf("preset %s: %+v %v", id, x, err)
		}
	}
	for _, id := range []string{foreign, draft, models.NewID()} {
		_, err := f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{PresetID: id})
		if e := wantGenRefusal(t, "preset "+id, err, engine.KindInvalid, ""); e.Field != engine.FieldPreset {
			t.Errorf("field %q", e.Field)
		}
	}
	_, err := f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{SceneryID: "nope"})
	if e := wantGenRefusal(t, "bad id", err, engine.KindInvalid, ""); e.Error() != `config.scenery.id: "nope" is not a valid id; use an id listed by GET /sceneries.` {
		t.Errorf("message %q", e.Error())
	}

	scenery := models.ReferenceItem{AccountID: &f.account, Name: "Dunes", Status: models.RefStatusDone}
	if err := models.CreateReferenceItem(f.db, models.KindScenery, &scenery); err != nil {
		t.Fatal(err)
	}
	x, err := f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{SceneryID: scenery.ID})
	if err != nil || x.SceneryID != scenery.ID || x.Session("")["scenery_id"] != scenery.ID || x.Surcharge() != 0 {
		t.Errorf("scenery: %+v %v", x, err)
	}
	x, err = f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{SceneryID: strings.ToUpper(scenery.ID), PresetID: strings.ToUpper(own)})
	if err != nil || x.SceneryID != scenery.ID || x.Preset == nil || x.Preset.ID != own {
		t.Errorf("upper-case ids: %+v %v", x, err)
	}
	_, err = f.engine.Generation.ResolveExtras(ctx, other, engine.ConfigInput{SceneryID: scenery.ID})
	if e := wantGenRefusal(t, "another account's scenery", err, engine.KindInvalid, ""); e.Field != engine.FieldScenery ||
		e.Message != `"`+scenery.ID+`" is not a scenery this account may use; see GET /sceneries.` {
		t.Errorf("another account's scenery: %q", e.Error())
	}
	_, err = f.engine.Generation.ResolveExtras(ctx, f.account, engine.ConfigInput{ModelID: scenery.ID})
	if e := wantGenRefusal(t, "a scenery as fashion model", err, engine.KindInvalid, ""); e.Field != engine.FieldModel {
		t.Errorf("field %q", e.Field)
	}

	// The surcharge is added to each job's cost.
	photo, _ := f.photo("")
	p, err := f.engine.Generation.PlanPackshots(ctx, f.requester(), engine.ConfigInput{PhotoID: photo, PresetID: public, Count: 3})
	if err != nil || len(p.Jobs) != 3 || len(p.RecordIDs) != 3 || p.Jobs[0].CreditCost != 2+3 {
		t.Fatalf("packshots with preset: %+v %v", p, err)
	}
}

// The model: none serving the job type is a prerequisite refusal naming the job type; a provider
// without a running generator is unavailable with a retry delay.
func TestResolveModel(t *testing.T) {
	f := newGenFixture(t, 100)
	ctx := t.Context()
	_, err := f.engine.Generation.ResolveModel(ctx, jobtype.Reel, "")
	e := wantGenRefusal(t, "no reel model", err, engine.KindPrerequisite, engine.ReasonModelNotResolved)
	if !slices.Equal(e.Subjects, []string{jobtype.Reel}) || !slices.Equal(e.Details, []string{engine.DetailNoGenerationModel}) {
		t.Errorf("refusal %#v, want details [no_generation_model] naming %s", e, jobtype.Reel)
	}
	f.down = true
	_, err = f.engine.Generation.ResolveModel(ctx, jobtype.Packshot, "")
	if e := wantGenRefusal(t, "no generator", err, engine.KindUnavailable, engine.ReasonGeneratorDown); e.RetryAfter != 30*time.Second {
		t.Errorf("retry after %v", e.RetryAfter)
	}
	f.down = false
	// Temporal lists a worker that stopped for minutes after its last poll: one that has not
	// polled for three is no generator; one that polled a minute ago (a live worker's long poll
	// lasts about 70 s) is.
	f.lastPoll = time.Now().Add(-3 * time.Minute)
	_, err = f.engine.Generation.ResolveModel(ctx, jobtype.Packshot, "")
	wantGenRefusal(t, "a generator that stopped polling", err, engine.KindUnavailable, engine.ReasonGeneratorDown)
	f.lastPoll = time.Now().Add(-time.Minute)
	if m, err := f.engine.Generation.ResolveModel(ctx, jobtype.Packshot, ""); err != nil || m.ID != "local/studio-v1" {
		t.Errorf("packshot model %v %v", m, err)
	}
}

// Submitting a plan the balance does not cover creates nothing and says what it needed.
func TestSubmitPlanInsufficientCredits(t *testing.T) {
	f := newGenFixture(t, 3)
	ctx := t.Context()
	p, err := f.engine.Generation.PlanIdeas(ctx, f.requester(), engine.IdeasInput{JobType: jobtype.SceneryIdea,
		Kind: engine.Sceneries, Preferences: "dunes", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.engine.Generation.SubmitPlan(ctx, p)
	e := wantGenRefusal(t, "short balance", err, engine.KindInsufficientCredits, "")
	if e.Message != "Insufficient credits: this request needs 4 and 3 are available; nothing was created." || e.CreditsRequired != 4 ||
		!errors.Is(err, models.ErrInsufficientCredits) {
		t.Errorf("message %q, credits required %d", e.Message, e.CreditsRequired)
	}
	// When the balance cannot be read for the message, the answer is still the 402, without it.
	require.NoError(t, f.db.Callback().Raw().Before("gorm:raw").Register("balance_down", func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.SQL.String(), "accounts") {
			tx.AddError(errors.New("the database went away"))
		}
	}))
	require.NoError(t, f.db.Callback().Query().Before("gorm:query").Register("balance_down_query", func(tx *gorm.DB) {
		if tx.Statement.Table == "accounts" {
			tx.AddError(errors.New("the database went away"))
		}
	}))
	_, err = f.engine.Generation.SubmitPlan(ctx, p)
	e = wantGenRefusal(t, "short balance, balance unreadable", err, engine.KindInsufficientCredits, "")
	if e.Message != "Insufficient credits: this request needs 4; nothing was created." || e.CreditsRequired != 4 {
		t.Errorf("without the balance: message %q, credits required %d", e.Message, e.CreditsRequired)
	}
	require.NoError(t, f.db.Callback().Raw().Remove("balance_down"))
	require.NoError(t, f.db.Callback().Query().Remove("balance_down_query"))
	var orders, items int64
	f.db.Model(&models.Order{}).Where("account_id = ?", f.account).Count(&orders)
	f.db.Table(models.KindScenery.Table()).Where("account_id = ?", f.account).Count(&items)
	if orders != 0 || items != 0 {
		t.Errorf("%d orders, %d sceneries created", orders, items)
	}

	g := newGenFixture(t, 100)
	p, err = g.engine.Generation.PlanIdeas(ctx, g.requester(), engine.IdeasInput{JobType: jobtype.SceneryIdea,
		Kind: engine.Sceneries, Preferences: "dunes", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.engine.Generation.SubmitPlan(ctx, p)
	if err != nil || s.CreditsReserved != 4 || len(s.RecordIDs) != 2 || s.OrderID != p.Order.ID || s.Jobs != 2 {
		t.Fatalf("submit: %v, %+v", err, s)
	}
	g.db.Table(models.KindScenery.Table()).Where("account_id = ? AND status = ?", g.account, models.RefStatusInProgress).Count(&items)
	if items != 2 {
		t.Errorf("%d sceneries in progress, want 2", items)
	}
}
