package plugin_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/jobtype"
)

// An upload whose bytes never arrived cannot become a packshot (it would feed sessions a file
// that does not exist).
func TestRegisterPackshotRefusesAnUploadThatHasNotArrived(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, _ := e.createUpload(e.key, "a.png", "image/png", 100)
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": id, "product_ref": "P", "product_metadata": map[string]any{"display_name": "P"},
	})
	msg := requireItemError(t, res[0], http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "not been uploaded")
	assert.Zero(t, e.count(&models.Packshot{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Product{}, "1 = 1"))
}

func TestMePermissionsAreAnArrayEvenWhenEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := e.do(http.MethodGet, p("/me"), e.issueKey("nothing.grants.this"), nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, []any{}, decode(t, rec)["permissions"])
}

// packshotCatalog is the shipped catalog plus a model that generates packshot jobs.
func packshotCatalog(t *testing.T) *catalog.Catalog {
	c, err := catalog.Load()
	require.NoError(t, err)
	c.AIModels = append(c.AIModels, catalog.AIModel{ID: "local/packshot-test", Provider: "local", OutputType: "image",
		JobTypes: []string{jobtype.Packshot}, SupportedAspectRatios: []string{"1:1"}, BaseCreditCost: 1})
	return c
}

// A packshot job starts from a plain photo, so the approved-packshot rule of photo sessions does
// not apply: with no credits the session gets as far as the reservation (402), never 422.
func TestPackshotSessionDoesNotNeedAnApprovedPackshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	now := time.Now().UTC()
	require.NoError(t, e.db.Create(&models.Product{ID: models.NewID(), AccountID: e.account.ID, InstallationID: &e.inst.ID,
		ExternalRef: "shoe", DisplayName: "Shoe", CreatedAt: now, UpdatedAt: now}).Error)
	photo, _ := e.createUpload(e.key, "shoe.png", "image/png", 100)
	_, otherKey := e.otherInstallation()
	foreign, _ := e.createUpload(otherKey, "x.png", "image/png", 100)

	post := func(subject map[string]any) (int, map[string]any) {
		rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
			"job_type": "packshot", "session_config": map[string]any{"aspect_ratio": "1:1"},
			"subjects": []map[string]any{subject},
		})
		return rec.Code, decode(t, rec)
	}
	base := func() map[string]any {
		return map[string]any{"product_ref": "shoe", "images_count": 2, "ai_model": "local/packshot-test",
			"auto_register_packshot": true, "packshot_asset_id": photo}
	}

	code, body := post(base())
	require.Equal(t, http.StatusPaymentRequired, code, body)
	assert.Equal(t, plugin.CodeInsufficientCredits, body["error"].(map[string]any)["code"])

	for name, tc := range map[string]struct {
		change func(map[string]any)
		field  string
	}{
		"auto_register_packshot false": {func(s map[string]any) { s["auto_register_packshot"] = false }, "auto_register_packshot"},
		"packshot_asset_id missing":    {func(s map[string]any) { delete(s, "packshot_asset_id") }, "packshot_asset_id"},
		"another installation's photo": {func(s map[string]any) { s["packshot_asset_id"] = foreign }, "packshot_asset_id"},
		"product not in the catalog":   {func(s map[string]any) { s["product_ref"] = "nope" }, "product_ref"},
	} {
		t.Run(name, func(t *testing.T) {
			s := base()
			tc.change(s)
			code, body := post(s)
			require.Equal(t, http.StatusBadRequest, code, body)
			errBody := body["error"].(map[string]any)
			assert.Equal(t, plugin.CodeInvalidInput, errBody["code"])
			assert.Contains(t, errBody["message_i18n"].(map[string]any)["en"], tc.field)
		})
	}
	assert.Zero(t, e.count(&models.Order{}, "1 = 1"))
}
