package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/testdb"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// accountFixture is an engine over a test database with two accounts (the marketplace's system
// presets seeded).
type accountFixture struct {
	eng        *engine.Engine
	db         *gorm.DB
	mine, them string // account IDs
}

func newAccountFixture(t *testing.T) *accountFixture {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	require.NoError(t, models.SeedReference(db))
	f := &accountFixture{eng: engine.New(engine.Config{DB: db, Log: zap.NewNop()}), db: db}
	for _, id := range []*string{&f.mine, &f.them} {
		acc, err := models.CreateAccount(db, "team", 100)
		require.NoError(t, err)
		*id = acc.ID
	}
	return f
}

// upload is a ready uploaded image of the account, not yet inserted.
func upload(accountID string) *models.Asset {
	id, now := models.NewID(), time.Now().UTC()
	return &models.Asset{ID: id, AccountID: accountID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		ContentType: "image/png", BlobKey: "uploads/" + accountID + "/" + id, CreatedAt: now, UpdatedAt: now}
}

// refusal asserts err is an engine refusal of kind, naming field, with message.
func refusal(t *testing.T, err error, kind engine.Kind, field, message string) {
	t.Helper()
	e, ok := engine.As(err)
	require.True(t, ok, "want a %s refusal, got %v", kind, err)
	assert.Equal(t, kind, e.Kind)
	assert.Equal(t, field, e.Field)
	assert.Equal(t, message, e.Message)
}

// An external key authenticates while live and is recorded as used at most once a minute; a
// malformed, unknown, revoked or expired key is refused as unauthenticated.
func TestAuthenticateAccountKey(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	issued, err := models.IssueKey(f.db, models.KeyKindExternal, f.mine, nil, "k", models.ExternalScopes, nil)
	require.NoError(t, err)
	lastUsed := func() *time.Time {
		var k models.APIKey
		require.NoError(t, f.db.Take(&k, "id = ?", issued.Key.ID).Error)
		return k.LastUsedAt
	}
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

	k, err := f.eng.Accounts.AuthenticateAccountKey(ctx, issued.Secret, start)
	require.NoError(t, err)
	assert.Equal(t, f.mine, k.AccountID)
	require.NotNil(t, lastUsed())
	assert.True(t, lastUsed().Equal(start), "last_used_at %v, want %v", lastUsed(), start)

	_, err = f.eng.Accounts.AuthenticateAccountKey(ctx, issued.Secret, start.Add(engine.KeyUseRecordedEvery-time.Second))
	require.NoError(t, err)
	assert.True(t, lastUsed().Equal(start), "last_used_at written again within a minute: %v", lastUsed())

	later := start.Add(engine.KeyUseRecordedEvery)
	_, err = f.eng.Accounts.AuthenticateAccountKey(ctx, issued.Secret, later)
	require.NoError(t, err)
	assert.True(t, lastUsed().Equal(later), "last_used_at %v after a minute, want %v", lastUsed(), later)

	expiry := later.Add(time.Hour)
	expiring, err := models.IssueKey(f.db, models.KeyKindExternal, f.mine, nil, "e", models.ExternalScopes, &expiry)
	require.NoError(t, err)
	_, err = f.eng.Accounts.AuthenticateAccountKey(ctx, expiring.Secret, expiry)
	wantKind(t, err, engine.KindUnauthenticated, "expired")
	for name, raw := range map[string]string{"malformed": "nope", "unknown secret": issued.Secret + "x"} {
		_, err := f.eng.Accounts.AuthenticateAccountKey(ctx, raw, later)
		wantKind(t, err, engine.KindUnauthenticated, name)
	}
	require.NoError(t, models.RevokeKey(f.db, issued.Key.ID))
	_, err = f.eng.Accounts.AuthenticateAccountKey(ctx, issued.Secret, later)
	e := wantKind(t, err, engine.KindUnauthenticated, "revoked")
	assert.Equal(t, "The API key is invalid, expired or revoked.", e.Message)
}

// A /files asset is found by ID; an unknown one is a not_found refusal that api/files still
// tells by models.ErrNotFound.
func TestFileAsset(t *testing.T) {
	f := newAccountFixture(t)
	a := upload(f.mine)
	require.NoError(t, f.db.Create(a).Error)
	got, err := f.eng.Uploads.FileAsset(context.Background(), a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.BlobKey, got.BlobKey)

	_, err = f.eng.Uploads.FileAsset(context.Background(), models.NewID())
	refusal(t, err, engine.KindNotFound, "", "No such file.")
	assert.ErrorIs(t, err, models.ErrNotFound)
}

// A preset change is refused as the external API answers it: not_found for a preset the account
// does not see, forbidden for one it sees but does not own, invalid naming the field for a gallery
// it cannot have; the refusals change nothing.
func TestAccountPresetRefusals(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	mine := &models.Preset{Name: "Mine", QuantityGuidelines: "q", QualityGuidelines: "q"}
	images, err := f.eng.Records.CreateAccountPreset(ctx, f.mine, mine, nil, []*models.Asset{upload(f.mine), upload(f.mine)})
	require.NoError(t, err)
	require.Len(t, images, 2)
	var system models.Preset
	require.NoError(t, f.db.Take(&system, "type = ?", models.PresetTypeSystem).Error)

	err = f.eng.Records.CheckAccountPresetUpdate(ctx, f.mine, models.NewID(), nil, 0)
	refusal(t, err, engine.KindNotFound, "", "Preset not found.")
	err = f.eng.Records.CheckAccountPresetUpdate(ctx, f.them, mine.ID, nil, 0)
	refusal(t, err, engine.KindNotFound, "", "Preset not found.")
	err = f.eng.Records.CheckAccountPresetUpdate(ctx, f.mine, system.ID, nil, 0)
	refusal(t, err, engine.KindForbidden, "",
		"Not the owner: only the account that created a preset may change it (system presets cannot be changed).")
	err = f.eng.Records.CheckAccountPresetUpdate(ctx, f.mine, mine.ID, []string{system.ID}, 0)
	refusal(t, err, engine.KindInvalid, "existingGalleryIds", fmt.Sprintf("%q is not an image of this preset's gallery.", system.ID))
	err = f.eng.Records.CheckAccountPresetUpdate(ctx, f.mine, mine.ID, nil, models.MaxPresetGallery-1)
	refusal(t, err, engine.KindInvalid, "gallery", fmt.Sprintf("the preset would have %d gallery images (2 kept, %d new); at most %d.",
		models.MaxPresetGallery+1, models.MaxPresetGallery-1, models.MaxPresetGallery))
	require.NoError(t, f.eng.Records.CheckAccountPresetUpdate(ctx, f.mine, mine.ID, []string{images[0].ID}, models.MaxPresetGallery-1))

	rename := &models.PresetUpdate{Edit: func(p *models.Preset) { p.Name = "Taken" }}
	_, _, _, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, system.ID, rename)
	refusal(t, err, engine.KindForbidden, "",
		"Not the owner: only the account that created a preset may change it (system presets cannot be changed).")
	_, _, _, err = f.eng.Records.UpdateAccountPreset(ctx, f.them, mine.ID, rename)
	refusal(t, err, engine.KindNotFound, "", "Preset not found.")
	var n int64
	require.NoError(t, f.db.Model(&models.Preset{}).Where("name = ?", "Taken").Count(&n).Error)
	assert.Zero(t, n, "a refused change renamed a preset")

	p, _, removed, err := f.eng.Records.UpdateAccountPreset(ctx, f.mine, mine.ID, &models.PresetUpdate{KeepGallery: []string{images[1].ID},
		Edit: func(p *models.Preset) { p.Name = "Renamed" }})
	require.NoError(t, err)
	assert.Equal(t, "Renamed", p.Name)
	require.Len(t, removed, 1)
	assert.Equal(t, *images[0].AssetID, removed[0].ID)

	tooMany := make([]*models.Asset, models.MaxPresetGallery+1)
	for i := range tooMany {
		tooMany[i] = upload(f.mine)
	}
	_, err = f.eng.Records.CreateAccountPreset(ctx, f.mine, &models.Preset{Name: "Big"}, nil, tooMany)
	refusal(t, err, engine.KindInvalid, "gallery", fmt.Sprintf("the preset would have %d gallery images (0 kept, %d new); at most %d.",
		models.MaxPresetGallery+1, models.MaxPresetGallery+1, models.MaxPresetGallery))
}

// The record use cases are scoped to the account: another account's product photo, packshot or
// image is not_found, and an image still generating cannot be reviewed.
func TestAccountRecordRefusals(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	asset := upload(f.them)
	photo, err := f.eng.Records.CreateAccountPhoto(ctx, asset, "Vase", "")
	require.NoError(t, err)
	photos, err := f.eng.Records.ListAccountPhotos(ctx, f.them)
	require.NoError(t, err)
	require.Len(t, photos, 1)
	assert.Equal(t, photo.ID, photos[0].ID)

	_, err = f.eng.Records.ListAccountShoots(ctx, f.mine, false, photo.ID)
	refusal(t, err, engine.KindNotFound, "", "Product not found.")
	shoots, err := f.eng.Records.ListAccountShoots(ctx, f.them, false, photo.ID)
	require.NoError(t, err)
	assert.Empty(t, shoots)

	err = f.eng.Records.ReviewAccountPackshot(ctx, f.mine, models.NewID(), models.PackshotReview{Archive: true}, now)
	refusal(t, err, engine.KindNotFound, "", "Packshot not found.")

	order := models.Order{ID: models.NewID(), AccountID: f.them, API: models.APIExternal, JobType: jobtype.PhotoShoot,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.db.Create(&order).Error)
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: f.them, JobType: jobtype.PhotoShoot,
		AIModel: "p/shoot", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobPending, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.db.Create(&job).Error)
	err = f.eng.Records.ReviewAccountShoot(ctx, f.mine, job.ID, models.VotingAccepted, now)
	refusal(t, err, engine.KindNotFound, "", "Image not found.")
	err = f.eng.Records.ReviewAccountShoot(ctx, f.them, job.ID, models.VotingAccepted, now)
	refusal(t, err, engine.KindConflict, "", "The image is not DONE; only a generated image can be reviewed.")
	e, _ := engine.As(err)
	assert.Equal(t, engine.ReasonJobNotCompleted, e.Reason)
}
