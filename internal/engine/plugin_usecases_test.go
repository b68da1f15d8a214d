package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// wantKind fails unless err is an engine refusal of the kind.
func wantKind(t *testing.T, err error, kind engine.Kind, what string) *engine.Error {
	t.Helper()
	e, ok := engine.As(err)
	require.True(t, ok, "%s: %v is no engine refusal", what, err)
	require.Equal(t, kind, e.Kind, "%s: %v", what, err)
	return e
}

func TestAuthenticatePluginKey(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx, now := context.Background(), time.Now()
	eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
	acc, err := models.CreateAccount(db, "acme", 0)
	require.NoError(t, err)
	box, err := secrets.NewBox(make([]byte, 32))
	require.NoError(t, err)
	created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec")
	require.NoError(t, err)

	who, err := eng.Accounts.AuthenticatePluginKey(ctx, created.APIKey.Secret, now)
	require.NoError(t, err)
	assert.Equal(t, created.Installation.ID, who.Installation.ID)
	assert.Equal(t, created.APIKey.Key.ID, who.Key.ID, "the installation's own key")
	assert.Equal(t, created.Installation.ID, *created.APIKey.Key.InstallationID)
	assert.Equal(t, models.PluginScopes, who.Key.Scopes)
	// The key's use is recorded, at most once a minute (engine.KeyUseRecordedEvery).
	lastUsed := func() time.Time {
		var k models.APIKey
		require.NoError(t, db.Take(&k, "id = ?", created.APIKey.Key.ID).Error)
		require.NotNil(t, k.LastUsedAt, "a plugin key's use is not recorded")
		return *k.LastUsedAt
	}
	assert.True(t, lastUsed().Equal(now.UTC()), "last_used_at %v, want %v", lastUsed(), now)
	_, err = eng.Accounts.AuthenticatePluginKey(ctx, created.APIKey.Secret, now.Add(time.Second))
	require.NoError(t, err)
	assert.True(t, lastUsed().Equal(now.UTC()), "last_used_at written again within a minute")
	later := now.Add(engine.KeyUseRecordedEvery)
	_, err = eng.Accounts.AuthenticatePluginKey(ctx, created.APIKey.Secret, later)
	require.NoError(t, err)
	assert.True(t, lastUsed().Equal(later.UTC()), "last_used_at %v after a minute, want %v", lastUsed(), later)

	e := wantKind(t, mustFail(eng.Accounts.AuthenticatePluginKey(ctx, "pk_live_nope.nope", now)), engine.KindUnauthenticated, "unknown key")
	assert.Equal(t, "The API key is invalid, expired or revoked.", e.Message)

	unbound, err := models.IssueKey(db, models.KeyKindPlugin, acc.ID, nil, "unbound", models.PluginScopes, nil)
	require.NoError(t, err)
	e = wantKind(t, mustFail(eng.Accounts.AuthenticatePluginKey(ctx, unbound.Secret, now)), engine.KindUnauthenticated, "key without installation")
	assert.Equal(t, "The API key is not bound to an installation.", e.Message)

	require.NoError(t, db.Model(&models.Installation{}).Where("id = ?", created.Installation.ID).Update("status", "suspended").Error)
	e = wantKind(t, mustFail(eng.Accounts.AuthenticatePluginKey(ctx, created.APIKey.Secret, now)), engine.KindUnauthenticated, "suspended installation")
	assert.Equal(t, "The installation of this key is not active.", e.Message)
}

// mustFail is the error of a call's results.
func mustFail[T any](_ T, err error) error { return err }

func TestRotateWebhookSecretOnlyOfTheCallersInstallation(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
	inst, other := twoInstallations(t, db)
	box, err := secrets.NewBox(make([]byte, 32))
	require.NoError(t, err)

	wantKind(t, mustFail(eng.Webhooks.RotateWebhookSecret(ctx, box, inst.ID, other.ID)), engine.KindNotFound, "another installation")
	var unchanged models.Installation
	require.NoError(t, db.Take(&unchanged, "id = ?", other.ID).Error)
	assert.Equal(t, other.WebhookSecretEnc, unchanged.WebhookSecretEnc, "the other installation's secret stays")

	rotated, err := eng.Webhooks.RotateWebhookSecret(ctx, box, inst.ID, inst.ID)
	require.NoError(t, err)
	var after models.Installation
	require.NoError(t, db.Take(&after, "id = ?", inst.ID).Error)
	current, err := box.Open(after.WebhookSecretEnc)
	require.NoError(t, err)
	assert.Equal(t, rotated.Secret, current)
	assert.WithinDuration(t, time.Now().Add(models.PreviousSecretGrace), rotated.PreviousSecretValidUntil, time.Minute)
}

func TestUploadClaimsOnce(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
	inst, _ := twoInstallations(t, db)
	id, err := eng.Uploads.DeclareUpload(ctx, engine.UploadDeclaration{AccountID: inst.AccountID, InstallationID: inst.ID,
		Filename: "dir/p.png", ContentType: "image/png", SizeBytes: 10, ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	found, err := eng.Uploads.FindUpload(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "p.png", found.Filename, "only the last element of the client's name")
	assert.Equal(t, status.AssetAwaitingUpload, found.Status)
	wantKind(t, mustFail(eng.Uploads.FindUpload(ctx, models.NewID())), engine.KindNotFound, "unknown upload")

	require.NoError(t, eng.Uploads.ClaimUpload(ctx, id))
	e := wantKind(t, eng.Uploads.ClaimUpload(ctx, id), engine.KindConflict, "second claim")
	assert.Equal(t, engine.ReasonUploadNotAccepted, e.Reason)

	ended, cancel := context.WithCancel(ctx)
	cancel()
	eng.Uploads.ReleaseUpload(ended, id) // runs although the request ended
	require.NoError(t, eng.Uploads.ClaimUpload(ctx, id), "a released upload can be sent again")
}

func TestCatalogRegistrationRefusals(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop()})
	inst, other := twoInstallations(t, db)
	theirs, err := eng.Uploads.DeclareUpload(ctx, engine.UploadDeclaration{AccountID: other.AccountID, InstallationID: other.ID,
		Filename: "p.png", ContentType: "image/png", SizeBytes: 10, ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	mine, err := eng.Uploads.DeclareUpload(ctx, engine.UploadDeclaration{AccountID: inst.AccountID, InstallationID: inst.ID,
		Filename: "p.png", ContentType: "image/png", SizeBytes: 10, ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	named := &engine.ProductMetadata{DisplayName: "Mug"}
	caller := engine.Installation{ID: inst.ID, AccountID: inst.AccountID}

	_, _, err = eng.Catalog.RegisterPackshot(ctx, caller, engine.PackshotRegistration{AssetID: theirs, ProductRef: "mug", Product: named})
	e := wantKind(t, err, engine.KindNotFound, "another installation's asset")
	assert.Equal(t, "asset_id "+theirs+" does not exist.", e.Message)
	_, _, err = eng.Catalog.RegisterPackshot(ctx, caller, engine.PackshotRegistration{AssetID: mine, ProductRef: "mug", Product: named})
	e = wantKind(t, err, engine.KindInvalid, "an upload without its bytes")
	assert.Contains(t, e.Message, "has not been uploaded yet")
	_, _, err = eng.Catalog.RegisterImage(ctx, caller, engine.ImageRegistration{ExternalRef: "img", AssetID: mine, ProductRef: "mug"})
	e = wantKind(t, err, engine.KindNotFound, "an unknown product without metadata")
	assert.Equal(t, "product_ref mug does not exist; give product_metadata.display_name to create it.", e.Message)

	img, existing, err := eng.Catalog.RegisterImage(ctx, caller, engine.ImageRegistration{ExternalRef: "img", AssetID: mine, ProductRef: "mug", Product: named})
	require.NoError(t, err)
	assert.False(t, existing)
	again, existing, err := eng.Catalog.RegisterImage(ctx, caller, engine.ImageRegistration{ExternalRef: "img", AssetID: mine, ProductRef: "mug"})
	require.NoError(t, err)
	assert.True(t, existing, "the same external_ref answers the image registered first")
	assert.Equal(t, img.ID, again.ID)

	wantKind(t, mustFail(eng.Catalog.FindProduct(ctx, other.ID, "mug", 10)), engine.KindNotFound, "another installation's product")
	wantKind(t, eng.Catalog.DeleteProduct(ctx, other.ID, "mug"), engine.KindNotFound, "deleting another installation's product")
	detail, err := eng.Catalog.FindProduct(ctx, inst.ID, "mug", 10)
	require.NoError(t, err)
	assert.Len(t, detail.Images, 1)
}
