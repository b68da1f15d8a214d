package external_test

import (
	"net/http"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// An empty string is a value, not an omission: the optional IDs of a generation config, the image
// IDs of a video and its provider refuse "" (and blanks) with 400 naming the field, and nothing is
// created or reserved.
func TestGenerationEmptyStringsAreNotDefaults(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		account, key := e.newAccount(external.ScopeRegister)
		photo, _ := e.photoFixture(account, "Mug")
		shoot, _ := e.completedShoot(account, status.JobCompleted)
		config := func(field string) map[string]any {
			return map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, field: map[string]any{"id": ""}}, "count": 1}
		}
		for _, tc := range []struct {
			path  string
			body  map[string]any
			field string
		}{
			{"/packshots/register-ideas", config("preset"), "config.preset.id"},
			{"/packshots/register-ideas", config("scenery"), "config.scenery.id"},
			{"/image-picker/register-ideas", config("model"), "config.model.id"},
			{"/video-picker/register-videos", map[string]any{"imageId": "", "generatedImageId": shoot}, "imageId"},
			{"/video-picker/register-videos", map[string]any{"imageId": photo, "generatedImageId": " "}, "generatedImageId"},
			{"/video-picker/register-videos", map[string]any{"imageId": photo, "provider": ""}, "provider"},
		} {
			code, out := e.post(key, tc.path, tc.body)
			want := tc.field + " must not be empty; omit it to use the default."
			if msg := errorOf(t, out); code != http.StatusBadRequest || msg != want {
				t.Errorf("%s %v: %d %q, want 400 %q", tc.path, tc.body, code, msg, want)
			}
		}
		var orders int64
		db.Model(&models.Order{}).Where("account_id = ?", account).Count(&orders)
		if orders != 1 { // the fixture's completed shoot
			t.Errorf("refused requests left %d orders, want only the fixture's", orders)
		}
	})
}
