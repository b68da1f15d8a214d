package external_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// GET /account shows the key's own account (another account's credits never), its credits as the
// ledger leaves them, and the calling key's scopes and expiry; a key without content.read is 403.
func TestAccountShowsTheCallersAccountAndKey(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		other, _ := e.newAccount(external.ScopeRead)
		code, body, _ := e.get("/account", "X-Api-Key", e.key)
		if code != http.StatusOK {
			t.Fatalf("GET /account = %d %v", code, body)
		}
		var acc models.Account
		if err := db.Take(&acc, "id = ?", e.account).Error; err != nil {
			t.Fatal(err)
		}
		credits := body["credits"].(map[string]any)
		key := body["key"].(map[string]any)
		scopes := []string{}
		for _, s := range key["scopes"].([]any) {
			scopes = append(scopes, s.(string))
		}
		if body["id"] != e.account || body["id"] == other || body["name"] != acc.Name ||
			credits["available"] != float64(acc.CreditBalance) || credits["reserved"] != float64(acc.CreditsReserved) ||
			key["expiresAt"] != nil || !slices.Contains(scopes, external.ScopeWebhooks) || !slices.Contains(scopes, external.ScopeRead) {
			t.Fatalf("GET /account = %v", body)
		}

		expires := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)
		readOnly := e.issue(e.account, &expires, external.ScopeRead)
		_, body, _ = e.get("/account", "X-Api-Key", readOnly)
		key = body["key"].(map[string]any)
		if at, err := time.Parse(time.RFC3339, key["expiresAt"].(string)); err != nil || !at.Equal(expires) ||
			len(key["scopes"].([]any)) != 1 {
			t.Fatalf("an expiring read-only key = %v (%v)", key, err)
		}
		registerOnly := e.issue(e.account, nil, external.ScopeRegister)
		if code, body, _ := e.get("/account", "X-Api-Key", registerOnly); code != http.StatusForbidden {
			t.Fatalf("a key without content.read = %d %v", code, body)
		}
	})
}
