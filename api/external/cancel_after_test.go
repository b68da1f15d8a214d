package external_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// postWith sends body as JSON with the key and the header values (name, value pairs; a name may
// repeat, and each value is added).
func (e *env) postWith(key, path string, body any, headers ...string) (int, map[string]any) {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, external.Base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	code, out, _ := e.serve(req)
	return code, out
}

// Every register-* route takes Cancel-After from 10 s to 24 h inclusive, as a Go duration or a
// number of seconds: its jobs carry the deadline, which GET /orders/{id} shows as cancelAfterAt.
// Anything else, and the header sent twice, is 400 naming the header, and nothing is created.
func TestCancelAfterOnEveryGenerationRoute(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		if err := db.Model(&models.Account{}).Where("id = ?", e.account).Update("credit_balance", 100000).Error; err != nil {
			t.Fatal(err)
		}
		orders := func() (n int64) {
			if err := db.Model(&models.Order{}).Where("account_id = ?", e.account).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		ca := engine.HeaderCancelAfter
		for path, body := range e.validBodies(e.account) {
			if _, ok := body["count"]; ok {
				body["count"] = 1
			}
			for _, bad := range [][]string{{ca, "9s"}, {ca, "24h1s"}, {ca, "abc"}, {ca, "-5"}, {ca, ""}, {ca, "10s", ca, "10s"}} {
				before := orders()
				code, out := e.postWith(e.key, path, body, bad...)
				msg, _ := out["error"].(string)
				if code != http.StatusBadRequest || !strings.HasPrefix(msg, "Cancel-After: ") {
					t.Fatalf("%s with %q = %d %v, want 400 naming Cancel-After", path, bad, code, out)
				}
				if after := orders(); after != before {
					t.Fatalf("%s with %q created an order", path, bad)
				}
			}
			for value, d := range map[string]time.Duration{"10s": 10 * time.Second, "24h": 24 * time.Hour, "600": 10 * time.Minute} {
				start := time.Now()
				code, out := e.postWith(e.key, path, body, ca, value)
				if code != http.StatusOK {
					t.Fatalf("%s with Cancel-After %s = %d %v", path, value, code, out)
				}
				var jobs []models.Job
				if err := db.Where("order_id = ?", out["orderId"]).Find(&jobs).Error; err != nil || len(jobs) == 0 {
					t.Fatalf("%s: jobs %v (%v)", path, jobs, err)
				}
				for _, j := range jobs {
					if j.StartDeadline == nil || j.StartDeadline.Sub(start.Add(d)).Abs() > 2*time.Second {
						t.Fatalf("%s with Cancel-After %s: job deadline %v, want about %v", path, value, j.StartDeadline, start.Add(d))
					}
				}
			}
		}
	})
}

// orderJobs is GET /orders/{id}'s jobs by ID.
func (e *env) orderJobs(orderID string) map[string]map[string]any {
	e.t.Helper()
	code, body := e.getAs(e.key, "/orders/"+orderID)
	if code != http.StatusOK {
		e.t.Fatalf("GET /orders/%s = %d %v", orderID, code, body)
	}
	out := map[string]map[string]any{}
	for _, j := range body["jobs"].([]any) {
		job := j.(map[string]any)
		out[job["jobId"].(string)] = job
	}
	return out
}

// GET /orders/{id} shows each job's deadline (cancelAfterAt) and, once cancelled, why:
// cancelReason "deadline" for a job not started by its Cancel-After, "requested" for one
// DELETE /orders/{id} cancelled; null for the others.
func TestCancelReasonOfAnOrdersJobs(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		code, out := e.postWith(e.key, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 3},
			engine.HeaderCancelAfter, "1h")
		o, jobs, _ := e.checkAccepted(code, out, 3)
		for id, j := range e.orderJobs(o.ID) {
			if j["cancelReason"] != nil || j["cancelAfterAt"] == nil {
				t.Fatalf("job %s before any cancel = %v", id, j)
			}
		}
		if err := db.Model(&models.Job{}).Where("id = ?", jobs[0].ID).Update("start_deadline", time.Now().UTC().Add(-time.Second)).Error; err != nil {
			t.Fatal(err)
		}
		if n, _, err := e.handler.Engine.Jobs.CancelPastDeadline(t.Context(), 10); err != nil || n != 1 {
			t.Fatalf("CancelPastDeadline = %d, %v", n, err)
		}
		if err := db.Model(&models.Job{}).Where("id = ?", jobs[1].ID).
			Updates(map[string]any{"status": status.JobInProgress, "started_at": time.Now().UTC(), "attempt_count": 1}).Error; err != nil {
			t.Fatal(err)
		}
		code, body, _ := e.send(e.key, http.MethodDelete, "/orders/"+o.ID, nil)
		if code != http.StatusOK || body["cancelled"] != 1.0 || body["alreadyStarted"] != 1.0 {
			t.Fatalf("DELETE /orders/{id} = %d %v", code, body)
		}
		want := map[string]any{jobs[0].ID: status.CancelDeadline, jobs[1].ID: nil, jobs[2].ID: status.CancelRequested}
		for id, j := range e.orderJobs(o.ID) {
			if j["cancelReason"] != want[id] {
				t.Errorf("job %s: cancelReason %v, want %v (%v)", id, j["cancelReason"], want[id], j)
			}
		}
	})
}
