package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// testModels is a registry of three models: a photo-shoot one, a packshot one, and one the
// façade does not offer (video).
var testModels = newRegistry(&catalog.Catalog{
	AspectRatios: []catalog.AspectRatio{{ID: "1:1", Default: true}},
	AIModels: []catalog.AIModel{
		{ID: "p/shoot", Provider: "p", JobTypes: []string{jobtype.PhotoShoot}, SupportedAspectRatios: []string{"1:1", "4:5"}, BaseCreditCost: 3},
		{ID: "p/packshot", Provider: "p", JobTypes: []string{jobtype.Packshot}, SupportedAspectRatios: []string{"1:1"}, BaseCreditCost: 2},
		{ID: "p/video", Provider: "p", JobTypes: []string{"video"}, SupportedAspectRatios: []string{"1:1"}, BaseCreditCost: 9},
	},
})

// sessionFixture is an installation whose catalog has "ok" (an approved packshot), "pending" (a
// packshot not rated yet) and "bare" (no packshot), an upload "up" and an invalid upload "bad".
type sessionFixture struct {
	eng  *engine.Engine
	cfg  engine.Config // what eng was built from
	db   *gorm.DB
	inst models.Installation
}

func newSessionFixture(t *testing.T, balance int64) *sessionFixture {
	return newSessionFixtureOn(t, testdb.Open(t, testdb.SQLiteURL(t)), balance)
}

// newSessionFixtureOn is newSessionFixture over the database db (testdb.Dialects).
func newSessionFixtureOn(t *testing.T, db *gorm.DB, balance int64) *sessionFixture {
	now := time.Now().UTC()
	acct := models.Account{ID: models.NewID(), Name: "a", CreditBalance: balance, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&acct).Error)
	inst := models.Installation{ID: models.NewID(), AccountID: acct.ID, Name: "i", Status: "active", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Create(&inst).Error)
	asset := func(id, status, problem string) {
		require.NoError(t, db.Create(&models.Asset{ID: id, AccountID: acct.ID, InstallationID: &inst.ID, Kind: models.AssetKindUpload,
			Status: status, Problem: problem, CreatedAt: now}).Error)
	}
	asset("up", status.AssetReady, "")
	asset("bad", status.AssetInvalid, "the file is not an image")
	for _, ref := range []string{"ok", "pending", "bare"} {
		p := models.Product{ID: models.NewID(), AccountID: acct.ID, InstallationID: &inst.ID, ExternalRef: ref, DisplayName: "Product " + ref,
			CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&p).Error)
		voting := map[string]string{"ok": models.VotingAccepted, "pending": models.VotingPending}[ref]
		if voting == "" {
			continue
		}
		asset("ps-"+ref, status.AssetReady, "")
		require.NoError(t, db.Create(&models.Packshot{ID: models.NewID(), AccountID: acct.ID, InstallationID: &inst.ID, ProductID: p.ID,
			AssetID: "ps-" + ref, ExternalRef: ref, Voting: voting, VotingAt: &now, CreatedAt: now}).Error)
	}
	cfg := engine.Config{Store: models.NewStore(db), Log: zap.NewNop(), Models: testModels}
	return &sessionFixture{eng: engine.New(cfg), cfg: cfg, db: db, inst: inst}
}

// withEngine rebuilds the fixture's engine from its configuration as change leaves it.
func (f *sessionFixture) withEngine(change func(*engine.Config)) {
	change(&f.cfg)
	f.eng = engine.New(f.cfg)
}

func (f *sessionFixture) request(jobType string, subjects ...engine.SessionSubject) engine.SessionRequest {
	return engine.SessionRequest{AccountID: f.inst.AccountID, InstallationID: f.inst.ID, API: models.APIPlugin, JobType: jobType,
		Subjects: subjects, JobTypes: []string{jobtype.PhotoShoot, jobtype.Packshot}}
}

func shoot(ref string, n int) engine.SessionSubject {
	return engine.SessionSubject{ProductRef: ref, ImagesCount: n, AIModel: "p/shoot"}
}

func photo(ref, asset string, register bool) engine.SessionSubject {
	return engine.SessionSubject{ProductRef: ref, ImagesCount: 1, AIModel: "p/packshot", PackshotAssetID: asset, AutoRegisterPackshot: register}
}

func TestPlanSessionRefusals(t *testing.T) {
	f := newSessionFixture(t, 1000)
	for _, tc := range []struct {
		name     string
		req      engine.SessionRequest
		kind     engine.Kind
		reason   string
		field    string
		message  string
		subjects []string
	}{
		{"duplicate product", f.request("", shoot("ok", 1), shoot("ok", 2)), engine.KindInvalid, "", "subjects[1].product_ref",
			`"ok" appears twice; give one subject per product with its images_count.`, nil},
		{"unknown model", f.request("", engine.SessionSubject{ProductRef: "ok", ImagesCount: 1, AIModel: "nope"}), engine.KindInvalid, "",
			"subjects[0].ai_model", `"nope" is not a model listed by GET /ai-models.`, nil},
		{"model the façade does not offer", f.request("", engine.SessionSubject{ProductRef: "ok", ImagesCount: 1, AIModel: "p/video"}),
			engine.KindInvalid, "", "subjects[0].ai_model", `"p/video" is not a model listed by GET /ai-models.`, nil},
		{"model of another job type", f.request(jobtype.Packshot, shoot("ok", 1)), engine.KindInvalid, "",
			"subjects[0].ai_model", `"p/shoot" does not generate packshot jobs.`, nil},
		{"aspect ratio", func() engine.SessionRequest {
			r := f.request("", shoot("ok", 1))
			r.Config.AspectRatio = "9:16"
			return r
		}(), engine.KindInvalid, "", "session_config.aspect_ratio", `"9:16" is not supported by p/shoot; it supports 1:1, 4:5.`, nil},
		{"packshot without auto-register", f.request(jobtype.Packshot, photo("bare", "up", false)), engine.KindInvalid, "",
			"subjects[0].auto_register_packshot", "must be true for packshot jobs.", nil},
		{"packshot without input", f.request(jobtype.Packshot, photo("bare", "", true)), engine.KindInvalid, "",
			"subjects[0].packshot_asset_id", "is required for packshot jobs: it is the input photo.", nil},
		{"packshot of an unknown product", f.request(jobtype.Packshot, photo("missing", "up", true)), engine.KindInvalid, "",
			"subjects[0].product_ref", `"missing" is not in the catalog; register it with POST /images or POST /packshots.`, nil},
		{"packshot of a foreign asset", f.request(jobtype.Packshot, photo("bare", "elsewhere", true)), engine.KindInvalid, "",
			"subjects[0].packshot_asset_id", `"elsewhere" is not an upload of this installation.`, nil},
		{"packshot of an invalid upload", f.request(jobtype.Packshot, photo("bare", "bad", true)), engine.KindInvalid, "",
			"subjects[0].packshot_asset_id", `"bad" cannot be used: the file is not an image.`, nil},
		{"no approved packshot", f.request("", shoot("pending", 1), shoot("ok", 1), shoot("missing", 1), shoot("bare", 1)),
			engine.KindPrerequisite, engine.ReasonPackshotNotApproved, "",
			"These products have no approved packshot: bare, missing, pending. Nothing was created and no credits were charged.",
			[]string{"bare", "missing", "pending"}},
		{"approved packshot not the one named", f.request("", engine.SessionSubject{ProductRef: "ok", ImagesCount: 1, AIModel: "p/shoot",
			PackshotAssetID: "ps-pending"}), engine.KindPrerequisite, engine.ReasonPackshotNotApproved, "",
			"These products have no approved packshot: ok. Nothing was created and no credits were charged.", []string{"ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), tc.req)
			assert.Nil(t, order)
			assert.Nil(t, jobs)
			e, ok := engine.As(err)
			require.True(t, ok, "want an engine refusal, got %v", err)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.reason, e.Reason)
			assert.Equal(t, tc.field, e.Field)
			assert.Equal(t, tc.message, e.Message)
			assert.Equal(t, tc.subjects, e.Subjects)
		})
	}
}

func TestPlanSessionPlansJobs(t *testing.T) {
	f := newSessionFixture(t, 1000)
	src := "source"
	req := f.request("", shoot("ok", 2))
	req.SourceOrderID = &src
	order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, jobtype.PhotoShoot, order.JobType)
	assert.Equal(t, &src, order.SourceOrderID)
	assert.JSONEq(t, `{"aspect_ratio":"1:1"}`, string(order.SessionConfig))
	require.Len(t, jobs, 2)
	for i, j := range jobs {
		assert.Equal(t, i, j.Position)
		assert.Equal(t, "Product ok", j.ProductLabel)
		assert.Equal(t, "ps-ok", *j.InputAssetID)
		assert.NotNil(t, j.PackshotID)
		assert.Equal(t, int64(3), j.CreditCost)
	}

	order, jobs, err = f.eng.Sessions.PlanSession(t.Context(), f.request(jobtype.Packshot, photo("bare", "up", true)))
	require.NoError(t, err)
	assert.Equal(t, jobtype.Packshot, order.JobType)
	require.Len(t, jobs, 1)
	assert.Equal(t, "up", *jobs[0].InputAssetID)
	assert.Nil(t, jobs[0].PackshotID)
}

func TestCommitSessionInsufficientCredits(t *testing.T) {
	f := newSessionFixture(t, 5)
	_, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 2)), nil)
	e, ok := engine.As(err)
	require.True(t, ok, "want an engine refusal, got %v", err)
	assert.Equal(t, engine.KindInsufficientCredits, e.Kind)
	assert.Equal(t, "This session costs 6 credits, more than the account has available.", e.Message)
	assert.Equal(t, int64(6), e.CreditsRequired)
	assert.Empty(t, e.Details)
	var n int64
	require.NoError(t, f.db.Model(&models.Order{}).Count(&n).Error)
	assert.Zero(t, n, "nothing is created")

	session, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(3), session.CreditsReserved)
	assert.Len(t, session.Jobs, 1)
}

func TestCloneSession(t *testing.T) {
	f := newSessionFixture(t, 1000)
	committed, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 2)), nil)
	require.NoError(t, err)

	_, err = f.eng.Sessions.CloneSession(t.Context(), "another-installation", committed.OrderID, nil)
	e, ok := engine.As(err)
	require.True(t, ok, "want an engine refusal, got %v", err)
	assert.Equal(t, engine.KindNotFound, e.Kind)

	req, err := f.eng.Sessions.CloneSession(t.Context(), f.inst.ID, committed.OrderID, nil)
	require.NoError(t, err)
	assert.Equal(t, committed.OrderID, *req.SourceOrderID)
	assert.Equal(t, "1:1", req.Config.AspectRatio)
	assert.Equal(t, []engine.SessionSubject{{ProductRef: "ok", ProductLabel: "Product ok", ImagesCount: 2, AIModel: "p/shoot"}}, req.Subjects)

	_, err = f.eng.Sessions.CloneSession(t.Context(), f.inst.ID, committed.OrderID, []engine.CloneSubject{{ProductRef: "ok", ImagesCount: 1}, {ProductRef: "new", ImagesCount: 1}})
	e, ok = engine.As(err)
	require.True(t, ok, "want an engine refusal, got %v", err)
	assert.Equal(t, engine.KindInvalid, e.Kind)
	assert.Equal(t, "subjects[1].ai_model", e.Field)
	assert.Equal(t, `is required: product_ref "new" is not in the source order`, e.Message)
}

// A packshot session's upload must be one that is stored or may still arrive: an upload whose URL
// expired before its bytes came (or one retention removed) is refused naming the subject's
// packshot_asset_id, as POST /images refuses it, before anything is reserved.
func TestPackshotSessionOfAnUploadThatCannotArriveIsRefused(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 1000)
	past := time.Now().UTC().Add(-time.Hour)
	now := time.Now().UTC()
	require.NoError(t, f.db.Create(&models.Asset{ID: "gone", AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
		Kind: models.AssetKindUpload, Status: status.AssetAwaitingUpload, ContentType: "image/png", BlobKey: "uploads/x/gone",
		UploadExpiresAt: &past, CreatedAt: now, UpdatedAt: now}).Error)
	require.NoError(t, f.db.Create(&models.Asset{ID: "purged", AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
		Kind: models.AssetKindUpload, Status: status.AssetReady, ContentType: "image/png", BlobKey: "uploads/x/purged",
		PurgedAt: &past, CreatedAt: now, UpdatedAt: now}).Error)
	for id, want := range map[string]string{"gone": "upload URL has expired", "purged": "removed by the retention policy"} {
		_, _, err := f.eng.Sessions.PlanSession(t.Context(), f.request(jobtype.Packshot, photo("bare", id, true)))
		var refusal *engine.Error
		require.ErrorAs(t, err, &refusal, id)
		assert.Equal(t, engine.KindInvalid, refusal.Kind, id)
		assert.Equal(t, "subjects[0].packshot_asset_id", refusal.Field, id)
		assert.Contains(t, refusal.Message, want, id)
	}
}
