package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// webhookScopes is an engine over db with two installations of one account, that account's own
// scope and another account's, plus the box that seals account endpoint secrets.
type webhookScopes struct {
	eng                           *engine.Engine
	box                           *secrets.Box
	inst, sibling, account, other engine.WebhookScope
}

func newWebhookScopes(t *testing.T, db *gorm.DB, allowPrivate bool) webhookScopes {
	t.Helper()
	box, err := secrets.NewBox(make([]byte, 32))
	require.NoError(t, err)
	acc, err := models.CreateAccount(db, "Acme", 0)
	require.NoError(t, err)
	other, err := models.CreateAccount(db, "Other", 0)
	require.NoError(t, err)
	var insts []string
	for _, name := range []string{"shop", "sibling"} {
		created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: name}, "whsec")
		require.NoError(t, err)
		insts = append(insts, created.Installation.ID)
	}
	return webhookScopes{
		eng: engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop(), Secrets: box,
			WebhookAllowPrivateNetworks: allowPrivate}),
		box:     box,
		inst:    engine.WebhookScope{AccountID: acc.ID, InstallationID: insts[0]},
		sibling: engine.WebhookScope{AccountID: acc.ID, InstallationID: insts[1]},
		account: engine.WebhookScope{AccountID: acc.ID},
		other:   engine.WebhookScope{AccountID: other.ID},
	}
}

func str(s string) *string { return &s }

func list(s ...string) *[]string { return &s }

func TestCreateEndpointDefaultsAndSecrets(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		before := time.Now().Add(-time.Second)

		// An installation's endpoint: the job ends by default, no secret of its own.
		created, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
		require.NoError(t, err)
		assert.Empty(t, created.Secret)
		assert.Equal(t, webhooks.DefaultPluginEvents, created.Events)
		assert.Equal(t, "", created.Description)
		assert.Equal(t, models.EndpointEnabled, created.Status)
		assert.Nil(t, created.DisabledReason)
		assert.Nil(t, created.DisabledAt)
		assert.True(t, created.CreatedAt.After(before) && created.CreatedAt.Equal(created.UpdatedAt), "created_at %v", created.CreatedAt)
		var row models.WebhookEndpoint
		require.NoError(t, db.Take(&row, "id = ?", created.ID).Error)
		assert.Empty(t, row.SecretEnc)
		assert.Equal(t, w.inst.InstallationID, *row.InstallationID)

		// An account's endpoint: the external defaults and its own secret, shown once, stored sealed.
		own, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://93.184.216.34/own"),
			Description: str("ERP"), Events: list("record.done", "record.done", "order.completed")})
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(own.Secret, webhooks.SecretPrefix), "secret %q", own.Secret)
		assert.Equal(t, []string{"record.done", "order.completed"}, own.Events, "duplicates removed, order kept")
		assert.Equal(t, "ERP", own.Description)
		row = models.WebhookEndpoint{}
		require.NoError(t, db.Take(&row, "id = ?", own.ID).Error)
		assert.Nil(t, row.InstallationID)
		assert.NotContains(t, row.SecretEnc, own.Secret)
		signing, err := models.EndpointSecrets(w.box, &row, nil, time.Now())
		require.NoError(t, err)
		assert.Equal(t, []string{own.Secret}, signing)
		def, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://93.184.216.34/def")})
		require.NoError(t, err)
		assert.Equal(t, webhooks.DefaultExternalEvents, def.Events)
		assert.NotEqual(t, own.Secret, def.Secret)

		// Rotation: a new secret, the old one signs for 48 hours; an installation's scope is refused.
		rotated, err := w.eng.Webhooks.RotateEndpointSecret(ctx, w.account, own.ID)
		require.NoError(t, err)
		assert.NotEqual(t, own.Secret, rotated.Secret)
		assert.WithinDuration(t, time.Now().Add(models.PreviousSecretGrace), rotated.PreviousSecretValidUntil, 5*time.Second)
		row = models.WebhookEndpoint{}
		require.NoError(t, db.Take(&row, "id = ?", own.ID).Error)
		signing, err = models.EndpointSecrets(w.box, &row, nil, time.Now())
		require.NoError(t, err)
		assert.Equal(t, []string{rotated.Secret, own.Secret}, signing)
		wantKind(t, mustFail(w.eng.Webhooks.RotateEndpointSecret(ctx, w.other, own.ID)), engine.KindNotFound, "rotate another account's")
		wantKind(t, mustFail(w.eng.Webhooks.RotateEndpointSecret(ctx, w.account, created.ID)), engine.KindNotFound, "rotate an installation's from the account")
		wantKind(t, mustFail(w.eng.Webhooks.RotateEndpointSecret(ctx, w.inst, created.ID)), engine.KindInvalid, "rotate in an installation's scope")

		// A disabled endpoint can be created as such.
		off, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/off"), Status: str("disabled")})
		require.NoError(t, err)
		assert.Equal(t, models.EndpointDisabled, off.Status)
		require.NotNil(t, off.DisabledReason)
		assert.Equal(t, models.EndpointDisabledManually, *off.DisabledReason)
	})
}

func TestEndpointInputValidation(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	w := newWebhookScopes(t, db, false)
	ok := "https://93.184.216.34/hook"
	ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: &ok})
	require.NoError(t, err)
	cases := []struct {
		name  string
		scope engine.WebhookScope
		in    engine.EndpointInput
		field string
	}{
		{"url missing", w.inst, engine.EndpointInput{Description: str("x")}, "url"},
		{"url empty", w.inst, engine.EndpointInput{URL: str("")}, "url"},
		{"url relative", w.inst, engine.EndpointInput{URL: str("/hook")}, "url"},
		{"url ftp", w.inst, engine.EndpointInput{URL: str("ftp://93.184.216.34/hook")}, "url"},
		{"url without host", w.inst, engine.EndpointInput{URL: str("https:///hook")}, "url"},
		{"url loopback", w.inst, engine.EndpointInput{URL: str("http://127.0.0.1:8080/hook")}, "url"},
		{"url private", w.inst, engine.EndpointInput{URL: str("https://10.0.0.8/hook")}, "url"},
		{"url localhost", w.account, engine.EndpointInput{URL: str("http://localhost/hook")}, "url"},
		{"url metadata", w.account, engine.EndpointInput{URL: str("http://169.254.169.254/latest")}, "url"},
		{"url too long", w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/" + strings.Repeat("a", engine.MaxEndpointURLLength))}, "url"},
		{"events empty", w.inst, engine.EndpointInput{URL: &ok, Events: list()}, "events"},
		{"events unknown", w.inst, engine.EndpointInput{URL: &ok, Events: list("job.completed", "job.exploded")}, "events[1]"},
		{"events of the other API", w.inst, engine.EndpointInput{URL: &ok, Events: list("record.done")}, "events[0]"},
		{"events of the plugin API", w.account, engine.EndpointInput{URL: &ok, Events: list("job.started")}, "events[0]"},
		{"description too long", w.inst, engine.EndpointInput{URL: &ok, Description: str(strings.Repeat("é", engine.MaxEndpointDescriptionLength+1))}, "description"},
		{"status unknown", w.inst, engine.EndpointInput{URL: &ok, Status: str("paused")}, "status"},
	}
	for _, c := range cases {
		e := wantKind(t, mustFail(w.eng.Webhooks.CreateEndpoint(ctx, c.scope, c.in)), engine.KindInvalid, "create: "+c.name)
		assert.Equal(t, c.field, e.Field, c.name)
		assert.NotEmpty(t, e.Message, c.name)
		if c.field == "url" && c.in.URL == nil {
			continue // PATCH does not require url
		}
		e = wantKind(t, mustFail(w.eng.Webhooks.UpdateEndpoint(ctx, c.scope, ep.ID, c.in)), engine.KindInvalid, "update: "+c.name)
		assert.Equal(t, c.field, e.Field, c.name)
	}
	// A description of exactly 500 characters and a URL of exactly 2048 are accepted.
	long := "https://93.184.216.34/" + strings.Repeat("a", engine.MaxEndpointURLLength-len("https://93.184.216.34/"))
	_, err = w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: &long, Description: str(strings.Repeat("é", engine.MaxEndpointDescriptionLength))})
	require.NoError(t, err)
	// An update naming nothing is refused.
	wantKind(t, mustFail(w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, ep.ID, engine.EndpointInput{})), engine.KindInvalid, "empty update")
	// Nothing refused was written: the two accepted endpoints only, the first unchanged.
	var rows []models.WebhookEndpoint
	require.NoError(t, db.Order("created_at").Find(&rows).Error)
	require.Len(t, rows, 2)
	assert.Equal(t, ok, rows[0].URL)
	assert.Equal(t, models.StringList(webhooks.DefaultPluginEvents), rows[0].Events)
	assert.True(t, rows[0].CreatedAt.Equal(rows[0].UpdatedAt), "a refused update touched the endpoint")

	// WEBHOOK_ALLOW_PRIVATE_NETWORKS lets private addresses through.
	open := newWebhookScopes(t, db, true)
	_, err = open.eng.Webhooks.CreateEndpoint(ctx, open.inst, engine.EndpointInput{URL: str("http://127.0.0.1:8080/hook")})
	require.NoError(t, err)
}

func TestEndpointLimitIsAConflict(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	w := newWebhookScopes(t, db, false)
	for _, scope := range []engine.WebhookScope{w.inst, w.account} {
		for range models.MaxWebhookEndpoints {
			_, err := w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
			require.NoError(t, err)
		}
		e := wantKind(t, mustFail(w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})),
			engine.KindConflict, "11th endpoint")
		assert.Contains(t, e.Message, "10")
	}
	_, err := w.eng.Webhooks.CreateEndpoint(ctx, w.sibling, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
	require.NoError(t, err, "the sibling installation has its own ten")
}

func TestEndpointsAcrossInstallationsAndAccounts(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		scopes := []engine.WebhookScope{w.inst, w.sibling, w.account, w.other}
		eps := make([]engine.CreatedEndpoint, len(scopes))
		for i, scope := range scopes {
			var err error
			eps[i], err = w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
			require.NoError(t, err)
		}
		for i, scope := range scopes {
			page, next, err := w.eng.Webhooks.ListEndpoints(ctx, scope, 0, "")
			require.NoError(t, err)
			require.Len(t, page, 1)
			assert.Equal(t, eps[i].ID, page[0].ID)
			assert.Empty(t, next)
			for j, ep := range eps {
				if i == j {
					got, err := w.eng.Webhooks.GetEndpoint(ctx, scope, ep.ID)
					require.NoError(t, err)
					assert.Equal(t, ep.Endpoint, got)
					continue
				}
				wantKind(t, mustFail(w.eng.Webhooks.GetEndpoint(ctx, scope, ep.ID)), engine.KindNotFound, "get across")
				wantKind(t, mustFail(w.eng.Webhooks.UpdateEndpoint(ctx, scope, ep.ID, engine.EndpointInput{Status: str("disabled")})), engine.KindNotFound, "update across")
				wantKind(t, w.eng.Webhooks.DeleteEndpoint(ctx, scope, ep.ID), engine.KindNotFound, "delete across")
			}
		}
		// Update and delete in the endpoint's own scope.
		updated, err := w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, eps[0].ID, engine.EndpointInput{Status: str("disabled"), Events: list("job.started")})
		require.NoError(t, err)
		assert.Equal(t, models.EndpointDisabled, updated.Status)
		require.NotNil(t, updated.DisabledReason)
		assert.Equal(t, "manual", *updated.DisabledReason)
		assert.NotNil(t, updated.DisabledAt)
		assert.Equal(t, []string{"job.started"}, updated.Events)
		assert.Equal(t, eps[0].URL, updated.URL)
		updated, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, eps[0].ID, engine.EndpointInput{Status: str("enabled")})
		require.NoError(t, err)
		assert.Nil(t, updated.DisabledReason)
		assert.Nil(t, updated.DisabledAt)
		require.NoError(t, w.eng.Webhooks.DeleteEndpoint(ctx, w.inst, eps[0].ID))
		wantKind(t, mustFail(w.eng.Webhooks.GetEndpoint(ctx, w.inst, eps[0].ID)), engine.KindNotFound, "get deleted")
		wantKind(t, w.eng.Webhooks.DeleteEndpoint(ctx, w.inst, eps[0].ID), engine.KindNotFound, "delete deleted")
	})
}

func TestListEndpointsPages(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	w := newWebhookScopes(t, db, false)
	var created []string
	for range 5 {
		ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
		require.NoError(t, err)
		created = append([]string{ep.ID}, created...)
	}
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		page, next, err := w.eng.Webhooks.ListEndpoints(ctx, w.inst, 2, cursor)
		require.NoError(t, err)
		for _, ep := range page {
			seen = append(seen, ep.ID)
		}
		if next == "" {
			assert.Len(t, page, 1)
			break
		}
		assert.Len(t, page, 2)
		cursor = next
	}
	assert.ElementsMatch(t, created, seen)
	all, _, err := w.eng.Webhooks.ListEndpoints(ctx, w.inst, 200, "")
	require.NoError(t, err)
	for i, ep := range all {
		assert.Equal(t, seen[i], ep.ID, "pages keep the newest-first order")
	}
	for _, limit := range []int{-1, 201} {
		e := wantKind(t, mustFail2(w.eng.Webhooks.ListEndpoints(ctx, w.inst, limit, "")), engine.KindInvalid, "limit")
		assert.Equal(t, "limit", e.Field)
	}
	for _, cursor := range []string{"nope", "eyJ0IjoiMjAyNi0wMS0wMVQwMDowMDowMFoiLCJpZCI6Im5vdC1hLXV1aWQifQ", strings.Repeat("a", 600)} {
		e := wantKind(t, mustFail2(w.eng.Webhooks.ListEndpoints(ctx, w.inst, 10, cursor)), engine.KindInvalid, "cursor "+cursor)
		assert.Equal(t, "cursor", e.Field)
	}
	n, err := engine.ParseWebhookLimit("200")
	require.NoError(t, err)
	assert.Equal(t, 200, n)
	for _, raw := range []string{"0", "201", "-3", "ten", ""} {
		e := wantKind(t, mustFail(engine.ParseWebhookLimit(raw)), engine.KindInvalid, "limit "+raw)
		assert.Equal(t, "limit", e.Field)
	}
	e := wantKind(t, mustFail(engine.ParseWebhookTime("created_after", "yesterday")), engine.KindInvalid, "time")
	assert.Equal(t, "created_after", e.Field)
	// RFC 3339, but the year 10000 in UTC: SQLite would compare it as text before 2026.
	e = wantKind(t, mustFail(engine.ParseWebhookTime("created_before", "9999-12-31T23:00:00-01:00")), engine.KindInvalid, "year 10000")
	assert.Equal(t, "created_before", e.Field)
}

// mustFail2 is the error of a call with three results.
func mustFail2[A, B any](_ A, _ B, err error) error { return err }
