package plugin_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// UUIDs are matched case-insensitively, on SQLite and PostgreSQL: upper-case IDs in paths find
// the order, the job and the product (another installation's stay 404), and an upper-case
// packshot_asset_id or asset_id in a body finds its asset. A merchant reference is still matched
// exactly, even one shaped like an upper-case UUID.
func TestUpperCaseIDsFindTheirRecords(t *testing.T) {
	for name, opts := range map[string][]envOption{"sqlite": nil, "postgres": {onPostgres()}} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, opts...).committing()
			order, job, _ := e.storeJob(e.inst)
			e.getOK(p("/orders/"+strings.ToUpper(order.ID)), e.key)
			got := e.getOK(p("/jobs/"+strings.ToUpper(job.ID)), e.key)
			assert.Equal(t, job.ID, got["id"])
			theirInst, _ := e.otherInstallation()
			theirOrder, theirJob, _ := e.storeJob(theirInst)
			e.requireError(e.do(http.MethodGet, p("/orders/"+strings.ToUpper(theirOrder.ID)), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
			e.requireError(e.do(http.MethodGet, p("/jobs/"+strings.ToUpper(theirJob.ID)), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)

			// A photo session names its packshot's asset in upper case.
			product := e.product(e.inst, "mug")
			asset := e.readyAsset(e.inst)
			e.packshot(e.inst, product.ID, asset.ID, models.VotingAccepted)
			rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{"session_config": map[string]any{}, "subjects": []any{
				map[string]any{"product_ref": "mug", "images_count": 1, "ai_model": "local/studio-v1", "packshot_asset_id": strings.ToUpper(asset.ID)}}})
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			var s plugin.SessionResponse
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
			var j models.Job
			require.NoError(t, e.db.Take(&j, "id = ?", s.Subjects[0].JobIDs[0]).Error)
			assert.Equal(t, asset.ID, *j.InputAssetID)

			// POST /images names its upload in upper case.
			img := e.registerImages(e.key, map[string]any{"external_ref": "img-1", "product_ref": "mug",
				"asset_id": strings.ToUpper(e.readyAsset(e.inst).ID)})[0]
			assert.Equal(t, "created", img["status"], img)

			// A reference shaped like an upper-case UUID is a reference, matched exactly.
			upperRef := strings.ToUpper(models.NewID())
			refProduct := e.product(e.inst, upperRef)
			assert.Equal(t, refProduct.ID, e.getOK(p("/products/"+upperRef), e.key)["id"])
			e.requireError(e.do(http.MethodGet, p("/products/"+strings.ToLower(upperRef)), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)

			require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/products/"+url.PathEscape(strings.ToUpper(product.ID))), e.key, nil).Code)
			e.requireError(e.do(http.MethodGet, p("/products/mug"), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
		})
	}
}
