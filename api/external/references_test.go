package external_test

import (
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// The preset, scenery and model a generation config names must be ones the account may use. Not
// a UUID, missing, unusable or another account's: 400 naming the field, alike, with nothing
// created or reserved, on both routes that take a config. The same IDs in upper case are found.
func TestGenerationConfigReferences(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		account, key := e.newAccount(external.ScopeRegister)
		other, _ := e.newAccount(external.ScopeRegister)
		photo, _ := e.photoFixture(account, "Mug")
		e.packshotFixture(account, photo, models.VotingAccepted)
		item := func(kind models.ReferenceKind, owner string) string {
			it := models.ReferenceItem{AccountID: &owner, Name: "item", Status: models.RefStatusDone}
			if err := models.CreateReferenceItem(db, kind, &it); err != nil {
				t.Fatal(err)
			}
			return it.ID
		}
		foreignScenery, foreignModel := item(models.KindScenery, other), item(models.KindFashionModel, other)
		ownScenery, ownModel := item(models.KindScenery, account), item(models.KindFashionModel, account)

		config := func(field, id string) map[string]any {
			return map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}, field: map[string]any{"id": id}}, "count": 1}
		}
		for _, path := range []string{"/packshots/register-ideas", "/image-picker/register-ideas"} {
			for _, tc := range []struct {
				field, id string
			}{
				{"scenery", "marble"}, {"scenery", models.NewID()}, {"scenery", foreignScenery}, {"scenery", ownModel},
				{"model", "7"}, {"model", models.NewID()}, {"model", foreignModel}, {"model", ownScenery},
				{"preset", "soft-light"}, {"preset", models.NewID()},
			} {
				code, out := e.post(key, path, config(tc.field, tc.id))
				want := "config." + tc.field + ".id: "
				if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.HasPrefix(msg, want) || !strings.Contains(msg, tc.id) {
					t.Errorf("%s %s %q: %d %q, want 400 starting %q", path, tc.field, tc.id, code, msg, want)
				}
				e.nothingCreated(account, 100)
			}
		}
		e.accepted(1)(e.post(key, "/image-picker/register-ideas", map[string]any{"config": map[string]any{
			"product": map[string]any{"id": strings.ToUpper(photo)}, "scenery": map[string]any{"id": strings.ToUpper(ownScenery)},
			"model": map[string]any{"id": strings.ToUpper(ownModel)}}, "count": 1}))
	})
}
