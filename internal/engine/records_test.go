package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// accountFixture is an engine over a test database with two accounts (the marketplace's system
// presets seeded), a blob store and a recording Temporal client.
type accountFixture struct {
	eng        *engine.Engine
	db         *gorm.DB
	blobs      *blobstore.Store
	temporal   *apitest.Temporal
	mine, them string // account IDs
}

func newAccountFixture(t *testing.T) *accountFixture {
	t.Helper()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	require.NoError(t, models.SeedReference(db))
	d := apitest.NewDeps(t, db, apitest.Options{})
	f := &accountFixture{eng: d.Engine, db: db, blobs: d.Blobs, temporal: d.Temporal}
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

// pngFile is a small PNG image sent in the form field.
func pngFile(t *testing.T, field string) engine.ImageFile {
	data := testimage.GradientPNG(t, 4, 4)
	return engine.ImageFile{Field: field, Name: "p.png", Size: int64(len(data)),
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// unopened are n image files of the form field that the test fails on if they are opened.
func unopened(t *testing.T, field string, n int) []engine.ImageFile {
	out := make([]engine.ImageFile, n)
	for i := range out {
		out[i] = engine.ImageFile{Field: field, Name: "never.png", Size: 10, Open: func() (io.ReadCloser, error) {
			t.Errorf("a refused change opened its file %d", i)
			return nil, errors.New("opened")
		}}
	}
	return out
}

// stored reports whether the file of the asset is in the blob store.
func (f *accountFixture) stored(t *testing.T, assetID string) bool {
	t.Helper()
	var a models.Asset
	require.NoError(t, f.db.Take(&a, "id = ?", assetID).Error)
	_, err := f.blobs.Get(context.Background(), a.BlobKey)
	if errors.Is(err, blobstore.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

func ptr(s string) *string { return &s }

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

// A /files asset is found by ID; an unknown one is the not_found refusal api/files answers 404.
func TestFileAsset(t *testing.T) {
	f := newAccountFixture(t)
	a := upload(f.mine)
	require.NoError(t, f.db.Create(a).Error)
	got, err := f.eng.Uploads.FileAsset(context.Background(), a.ID)
	require.NoError(t, err)
	assert.Equal(t, engine.FileAsset{Status: status.AssetReady, BlobKey: a.BlobKey, ContentType: "image/png"}, got)

	_, err = f.eng.Uploads.FileAsset(context.Background(), models.NewID())
	refusal(t, err, engine.KindNotFound, "", "No such file.")
}

// A preset change is refused as the external API answers it: not_found for a preset the account
// does not see, forbidden for one it sees but does not own, invalid naming the field for a gallery
// it cannot have; the refusals come before any file is opened, and change nothing. A change that
// commits deletes the files of the images it removed.
func TestAccountPresetRefusals(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	mine, err := f.eng.Records.CreateAccountPreset(ctx, f.mine, engine.NewPreset{
		Fields:  engine.PresetFields{Name: ptr("Mine"), QuantityGuidelines: ptr("q"), QualityGuidelines: ptr("q")},
		Gallery: []engine.ImageFile{pngFile(t, "gallery"), pngFile(t, "gallery")}})
	require.NoError(t, err)
	require.Len(t, mine.Gallery, 2)
	assert.Nil(t, mine.Cover)
	assert.False(t, mine.System)
	first, second := mine.Gallery[0], mine.Gallery[1]
	assert.True(t, f.stored(t, first.File.AssetID) && f.stored(t, second.File.AssetID), "the gallery files are stored")
	var system models.Preset
	require.NoError(t, f.db.Take(&system, "type = ?", models.PresetTypeSystem).Error)

	rename := engine.PresetChange{Fields: engine.PresetFields{Name: ptr("Taken")}, AddGallery: unopened(t, "gallery", 1)}
	_, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, models.NewID(), rename)
	refusal(t, err, engine.KindNotFound, "", "Preset not found.")
	_, err = f.eng.Records.UpdateAccountPreset(ctx, f.them, mine.ID, rename)
	refusal(t, err, engine.KindNotFound, "", "Preset not found.")
	_, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, system.ID, rename)
	refusal(t, err, engine.KindForbidden, "",
		"Not the owner: only the account that created a preset may change it (system presets cannot be changed).")
	_, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, mine.ID, engine.PresetChange{KeepGallery: []string{system.ID}})
	refusal(t, err, engine.KindInvalid, "existingGalleryIds", fmt.Sprintf("%q is not an image of this preset's gallery.", system.ID))
	_, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, mine.ID, engine.PresetChange{AddGallery: unopened(t, "gallery", models.MaxPresetGallery-1)})
	refusal(t, err, engine.KindInvalid, "gallery", fmt.Sprintf("the preset would have %d gallery images (2 kept, %d new); at most %d.",
		models.MaxPresetGallery+1, models.MaxPresetGallery-1, models.MaxPresetGallery))
	var n int64
	require.NoError(t, f.db.Model(&models.Preset{}).Where("name = ?", "Taken").Count(&n).Error)
	assert.Zero(t, n, "a refused change renamed a preset")

	// Keeping one image, the gallery has room for MaxPresetGallery-1 new ones.
	added := make([]engine.ImageFile, models.MaxPresetGallery-1)
	for i := range added {
		added[i] = pngFile(t, "gallery")
	}
	p, err := f.eng.Records.UpdateAccountPreset(ctx, f.mine, mine.ID, engine.PresetChange{KeepGallery: []string{first.ID}, AddGallery: added})
	require.NoError(t, err)
	require.Len(t, p.Gallery, models.MaxPresetGallery)
	assert.Equal(t, first, p.Gallery[0], "the kept image first")
	assert.False(t, f.stored(t, second.File.AssetID), "the removed image's file is deleted")

	p, err = f.eng.Records.UpdateAccountPreset(ctx, f.mine, mine.ID, engine.PresetChange{KeepGallery: []string{first.ID},
		Fields: engine.PresetFields{Name: ptr("Renamed")}})
	require.NoError(t, err)
	assert.Equal(t, "Renamed", p.Name)
	assert.Equal(t, "q", p.QualityGuidelines, "a field not sent stays")
	assert.Equal(t, []engine.PresetImage{first}, p.Gallery)
	assert.True(t, f.stored(t, first.File.AssetID), "the kept image's file stays")

	tooMany := make([]engine.ImageFile, models.MaxPresetGallery+1)
	for i := range tooMany {
		tooMany[i] = pngFile(t, "gallery")
	}
	_, err = f.eng.Records.CreateAccountPreset(ctx, f.mine, engine.NewPreset{Fields: engine.PresetFields{Name: ptr("Big")}, Gallery: tooMany})
	refusal(t, err, engine.KindInvalid, "gallery", fmt.Sprintf("the preset would have %d gallery images (0 kept, %d new); at most %d.",
		models.MaxPresetGallery+1, models.MaxPresetGallery+1, models.MaxPresetGallery))
}

// A file that is not a usable image is refused naming its field, and nothing is stored.
func TestAccountPresetImageRefusals(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	text := []byte("not an image")
	_, err := f.eng.Records.CreateAccountPreset(ctx, f.mine, engine.NewPreset{Fields: engine.PresetFields{Name: ptr("P")},
		Gallery: []engine.ImageFile{pngFile(t, "gallery"), {Field: "gallery", Name: "notes.txt", Size: int64(len(text)),
			Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(text)), nil }}}})
	refusal(t, err, engine.KindInvalid, "gallery", `"notes.txt" is text/plain; charset=utf-8; send a PNG, JPEG or WebP image.`)
	_, err = f.eng.Records.CreateAccountPreset(ctx, f.mine, engine.NewPreset{Fields: engine.PresetFields{Name: ptr("P")},
		Cover: &engine.ImageFile{Field: "cover", Name: "huge.png", Size: engine.MaxImageBytes + 1}})
	refusal(t, err, engine.KindInvalid, "cover", fmt.Sprintf(`"huge.png" is %d bytes; images may be at most 20 MiB.`, engine.MaxImageBytes+1))
	var presets, assets int64
	require.NoError(t, f.db.Model(&models.Preset{}).Where("account_id = ?", f.mine).Count(&presets).Error)
	require.NoError(t, f.db.Model(&models.Asset{}).Where("account_id = ?", f.mine).Count(&assets).Error)
	assert.Zero(t, presets+assets, "a refused preset created %d presets and %d assets", presets, assets)
}

// The record use cases are scoped to the account: another account's product photo, packshot or
// image is not_found, and an image still generating cannot be reviewed.
func TestAccountRecordRefusals(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	photo, err := f.eng.Records.UploadAccountPhoto(ctx, f.them, engine.NewPhoto{Name: "Vase", File: pngFile(t, "file")})
	require.NoError(t, err)
	assert.Equal(t, status.AssetProcessing, photo.AssetStatus, "being prepared")
	assert.Equal(t, []string{"prepare-input/" + photo.AssetID}, f.temporal.Started("prepare-input/"))
	assert.True(t, f.stored(t, photo.AssetID))
	photos, more, err := f.eng.Records.ListAccountPhotos(ctx, f.them, engine.RecordPage{})
	require.NoError(t, err)
	require.Len(t, photos, 1)
	require.False(t, more)
	assert.Equal(t, photo.ID, photos[0].ID)
	assert.Equal(t, "Vase", photos[0].ProductName)

	_, _, err = f.eng.Records.ListAccountShoots(ctx, f.mine, false, photo.ID, engine.RecordPage{})
	refusal(t, err, engine.KindNotFound, "", "Product not found.")
	shoots, more, err := f.eng.Records.ListAccountShoots(ctx, f.them, false, photo.ID, engine.RecordPage{})
	require.NoError(t, err)
	assert.Empty(t, shoots)
	assert.False(t, more)

	err = f.eng.Records.ReviewAccountPackshot(ctx, f.mine, models.NewID(), engine.PackshotReview{Archive: true}, now)
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
