package external_test

import (
	"net/http"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// DELETE /orders/{id} cancels the order's jobs that have not started and answers the order as
// GET /orders/{id} shows it after, with the counts; the order's credits come back; an ended order
// is 409, another account's 404, a malformed id 400, a key without content.register 403.
func TestCancelOrder(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		now := time.Now().UTC()
		o := models.Order{ID: models.NewID(), AccountID: e.account, API: models.APIExternal, JobType: jobtype.Video,
			SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 2, CreatedAt: now, UpdatedAt: now}
		var jobs []models.Job
		for i := range 2 {
			jobs = append(jobs, models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: e.account, JobType: jobtype.Video, Position: i,
				AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 3, Run: 1, Status: status.JobPending,
				Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now})
		}
		if err := models.PlaceOrder(db, &o, jobs, nil); err != nil {
			t.Fatal(err)
		}
		var before models.Account
		db.Take(&before, "id = ?", e.account)

		code, body, _ := e.send(e.key, http.MethodDelete, "/orders/"+o.ID, nil)
		if code != http.StatusOK || body["cancelled"] != 2.0 || body["alreadyStarted"] != 0.0 {
			t.Fatalf("DELETE /orders/{id} = %d %v", code, body)
		}
		order := body["order"].(map[string]any)
		if order["orderId"] != o.ID || order["status"] != status.OrderCancelled || len(order["jobs"].([]any)) != 2 {
			t.Fatalf("the order after the cancel = %v", order)
		}
		var after models.Account
		db.Take(&after, "id = ?", e.account)
		if after.CreditBalance != before.CreditBalance+6 || after.CreditsReserved != before.CreditsReserved-6 {
			t.Fatalf("credits %d/%d after the cancel, were %d/%d", after.CreditBalance, after.CreditsReserved, before.CreditBalance, before.CreditsReserved)
		}
		if code, body, _ := e.send(e.key, http.MethodDelete, "/orders/"+o.ID, nil); code != http.StatusConflict {
			t.Fatalf("a cancelled order cancelled again = %d %v", code, body)
		}
		_, otherKey := e.newAccount(external.ScopeRegister, external.ScopeRead)
		if code, body, _ := e.send(otherKey, http.MethodDelete, "/orders/"+o.ID, nil); code != http.StatusNotFound {
			t.Fatalf("another account's order = %d %v", code, body)
		}
		if code, body, _ := e.send(e.key, http.MethodDelete, "/orders/not-a-uuid", nil); code != http.StatusBadRequest {
			t.Fatalf("a malformed id = %d %v", code, body)
		}
		readOnly := e.issue(e.account, nil, external.ScopeRead)
		if code, body, _ := e.send(readOnly, http.MethodDelete, "/orders/"+o.ID, nil); code != http.StatusForbidden {
			t.Fatalf("a key without content.register = %d %v", code, body)
		}
	})
}
