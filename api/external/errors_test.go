package external_test

import (
	"image/color"
	"net/http"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A file store that fails is an external service's failure: 502, and nothing is created.
func TestFileStoreFailureIsBadGateway(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		code, created := e.multipart(e.key, http.MethodPost, "/presets", []string{"name", "Mine", "quantityGuidelines", "q", "qualityGuidelines", "q"})
		if code != http.StatusOK {
			t.Fatalf("POST /presets = %d %v", code, created)
		}
		if err := e.blobs.Close(); err != nil {
			t.Fatal(err)
		}
		img := testimage.SolidPNG(t, 32, 32, color.NRGBA{200, 30, 40, 255})
		for _, tc := range []struct {
			path, method string
			fields       []string
			file         formFile
		}{
			{"/products", http.MethodPost, []string{"name", "Mug"}, formFile{"file", "mug.png", img}},
			{"/presets", http.MethodPost, []string{"name", "P", "quantityGuidelines", "q", "qualityGuidelines", "q"}, formFile{"cover", "c.png", img}},
			{"/presets", http.MethodPut, []string{"presetId", created["presetId"].(string)}, formFile{"gallery", "g.png", img}},
		} {
			code, body := e.multipart(e.key, tc.method, tc.path, tc.fields, tc.file)
			if errorOf(t, body); code != http.StatusBadGateway {
				t.Errorf("%s %s with a failing store: %d %v, want 502", tc.method, tc.path, code, body)
			}
		}
		var assets, presets, products int64
		db.Model(&models.Asset{}).Where("account_id = ?", e.account).Count(&assets)
		db.Model(&models.Preset{}).Where("account_id = ?", e.account).Count(&presets)
		db.Model(&models.Product{}).Where("account_id = ?", e.account).Count(&products)
		if assets+presets+products != 1 { // the preset made before the store failed
			t.Errorf("a failed upload left %d assets, %d presets, %d products", assets, presets, products)
		}
	})
}
