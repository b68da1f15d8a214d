package external_test

import (
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// UUIDs are matched case-insensitively: an upper-case order ID in the path finds the order (and
// another account's is still 404), and upper-case IDs in a body find their records.
func TestUpperCaseIDsFindTheirRecords(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		o := e.order(e.account, e.now, status.OrderCompleted, [2]string{"local/motion-v1", status.JobCompleted})
		code, body, _ := e.get("/orders/"+strings.ToUpper(o.ID), "X-Api-Key", e.key)
		if code != http.StatusOK || body["orderId"] != o.ID {
			t.Errorf("GET /orders/<upper-case id> = %d %v, want 200 with the order", code, body)
		}
		other, _ := e.newAccount()
		foreign := e.order(other, e.now, status.OrderCompleted, [2]string{"local/motion-v1", status.JobCompleted})
		if code, body, _ := e.get("/orders/"+strings.ToUpper(foreign.ID), "X-Api-Key", e.key); code != http.StatusNotFound {
			t.Errorf("another account's order in upper case = %d %v, want 404", code, body)
		}

		photo, _ := e.photoFixture(e.account, "Vase")
		e.accepted(1)(e.post(e.key, "/packshots/register-ideas", map[string]any{
			"config": map[string]any{"product": map[string]any{"id": strings.ToUpper(photo)}}, "count": 1}))
		e.accepted(1)(e.post(e.key, "/reel/register-reel", map[string]any{"imagesIds": []string{strings.ToUpper(photo)}}))
	})
}
