package external_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		past := e.now.Add(-time.Hour)
		future := e.now.Add(time.Hour)
		expired := e.issue(e.account, &past, external.ScopeRead)
		expiring := e.issue(e.account, &future, external.ScopeRead)
		revoked := e.issue(e.account, nil, external.ScopeRead)
		_, keyID, _, _ := models.ParseKey(revoked)
		plugin := "pk_live_0123456789abcdef.secret"
		for name, headers := range map[string][]string{
			"missing":                {},
			"malformed":              {"X-Api-Key", "hello"},
			"unknown":                {"X-Api-Key", "mk_live_0123456789abcdef.nope"},
			"wrong secret":           {"X-Api-Key", e.key[:len(e.key)-2] + "xx"},
			"plugin key":             {"X-Api-Key", plugin},
			"expired":                {"X-Api-Key", expired},
			"bearer of another kind": {"Authorization", "Basic " + e.key},
			"X-Api-Key wins":         {"X-Api-Key", "mk_live_0123456789abcdef.nope", "Authorization", "Bearer " + e.key},
		} {
			code, body, _ := e.get("/orders", headers...)
			if code != http.StatusUnauthorized {
				t.Errorf("%s: %d, want 401", name, code)
			}
			errorOf(t, body)
		}
		for name, headers := range map[string][]string{
			"X-Api-Key":             {"X-Api-Key", e.key},
			"Bearer":                {"Authorization", "Bearer " + e.key},
			"X-Api-Key over Bearer": {"X-Api-Key", e.key, "Authorization", "Bearer nonsense"},
			"not yet expired":       {"X-Api-Key", expiring},
			"before revocation":     {"X-Api-Key", revoked},
		} {
			if code, body, _ := e.get("/orders", headers...); code != http.StatusOK {
				t.Errorf("%s: %d %v, want 200", name, code, body)
			}
		}
		// Revocation holds on the very next request.
		if err := models.RevokeKey(db, keyID); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := e.get("/orders", "X-Api-Key", revoked); code != http.StatusUnauthorized {
			t.Errorf("revoked key: %d, want 401", code)
		}
	})
}

func TestScopesAndLastUse(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, registerOnly := e.newAccount(external.ScopeRegister)
		code, body, _ := e.get("/orders", "X-Api-Key", registerOnly)
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRead) {
			t.Fatalf("without content.read: %d %v", code, body)
		}
		if code, body, _ = e.get("/orders/"+models.NewID(), "X-Api-Key", registerOnly); code != http.StatusForbidden {
			t.Fatalf("GET /orders/{id} without content.read: %d %v", code, body)
		}
		_, keyID, _, _ := models.ParseKey(e.key)
		lastUsed := func() *time.Time {
			var k models.APIKey
			if err := db.Take(&k, "id = ?", keyID).Error; err != nil {
				t.Fatal(err)
			}
			return k.LastUsedAt
		}
		e.get("/orders", "X-Api-Key", e.key)
		first := lastUsed()
		if first == nil || !first.Equal(e.now) {
			t.Fatalf("last_used_at = %v, want %v", first, e.now)
		}
		e.now = e.now.Add(20 * time.Second)
		e.get("/orders", "X-Api-Key", e.key)
		if got := lastUsed(); !got.Equal(*first) {
			t.Fatalf("last_used_at written again within a minute: %v", got)
		}
		e.now = e.now.Add(time.Minute)
		e.get("/orders", "X-Api-Key", e.key)
		if got := lastUsed(); !got.Equal(e.now) {
			t.Fatalf("last_used_at = %v after a minute, want %v", got, e.now)
		}
	})
}

func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 3)
	_, other := e.newAccount(external.ScopeRead)
	for i := range 3 {
		if code, _, _ := e.get("/orders", "X-Api-Key", e.key); code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	code, body, hdr := e.get("/orders", "X-Api-Key", e.key)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || hdr.Get("X-RateLimit-Remaining") != "0" ||
		hdr.Get("X-RateLimit-Limit") != "3" || hdr.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("4th request: %d, headers %v", code, hdr)
	}
	errorOf(t, body)
	if code, _, _ := e.get("/orders", "X-Api-Key", other); code != http.StatusOK {
		t.Fatalf("another key shares the budget: %d", code)
	}
}

// order stores an order of the account with jobs of the given models and statuses.
func (e *env) order(accountID string, created time.Time, orderStatus string, jobs ...[2]string) models.Order {
	e.t.Helper()
	o := models.Order{ID: models.NewID(), AccountID: accountID, API: models.APIExternal, JobType: jobtype.Video,
		SessionConfig: models.JSON(`{}`), Status: orderStatus, JobsTotal: len(jobs), CreatedAt: created, UpdatedAt: created}
	if err := e.db.Create(&o).Error; err != nil {
		e.t.Fatal(err)
	}
	for i, j := range jobs {
		job := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: accountID, JobType: o.JobType, Position: i,
			AIModel: j[0], AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: j[1], AttemptCount: 1, Voting: models.VotingPending,
			CreatedAt: created, UpdatedAt: created}
		switch j[1] {
		case status.JobCompleted:
			job.StartedAt, job.CompletedAt = &created, &created
		case status.JobFailed:
			cat, hint := string(errorcat.ContentPolicy), errorcat.ContentPolicy.Hint()
			job.ErrorCategory, job.ErrorHint, job.AttemptCount, job.CompletedAt = &cat, &hint, 2, &created
		case status.JobRetryPending:
			cat, hint := string(errorcat.RateLimit), errorcat.RateLimit.Hint()
			job.ErrorCategory, job.ErrorHint, job.AttemptCount = &cat, &hint, 2
		}
		if err := e.db.Create(&job).Error; err != nil {
			e.t.Fatal(err)
		}
		if j[1] == status.JobCompleted {
			a := models.Asset{ID: models.NewID(), AccountID: accountID, Kind: models.AssetKindOutput, Status: status.AssetReady,
				ContentType: "video/mp4", BlobKey: "outputs/" + job.ID, JobID: &job.ID, CreatedAt: created, UpdatedAt: created}
			if err := e.db.Create(&a).Error; err != nil {
				e.t.Fatal(err)
			}
		}
	}
	return o
}

func ids(body map[string]any) []string {
	var out []string
	for _, o := range body["orders"].([]any) {
		out = append(out, o.(map[string]any)["orderId"].(string))
	}
	return out
}

func TestListOrders(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		other, otherKey := e.newAccount(external.ScopeRead)
		var newestFirst []string
		for i := range 3 {
			o := e.order(e.account, e.now.Add(time.Duration(i)*time.Minute), status.OrderInProgress,
				[2]string{"local/motion-v1", status.JobPending})
			newestFirst = append([]string{o.ID}, newestFirst...)
		}
		mixed := e.order(e.account, e.now.Add(time.Hour), status.OrderCompleted,
			[2]string{"local/motion-v1", status.JobCompleted}, [2]string{"fal/kling-video-v2.1", status.JobCompleted})
		sameProvider := e.order(e.account, e.now.Add(2*time.Hour), status.OrderFailed,
			[2]string{"fal/kling-video-v2.1", status.JobFailed}, [2]string{"fal/flux-dev", status.JobCompleted})
		foreign := e.order(other, e.now.Add(3*time.Hour), status.OrderCompleted, [2]string{"local/motion-v1", status.JobCompleted})
		newestFirst = append([]string{sameProvider.ID, mixed.ID}, newestFirst...)

		code, body, _ := e.get("/orders", "X-Api-Key", e.key)
		if code != http.StatusOK || fmt.Sprint(ids(body)) != fmt.Sprint(newestFirst) || body["limit"] != float64(20) || body["returned"] != float64(5) {
			t.Fatalf("GET /orders = %d %v", code, body)
		}
		first := body["orders"].([]any)[0].(map[string]any)
		want := map[string]any{"orderId": sameProvider.ID, "status": "failed", "jobType": "video", "provider": "fal",
			"model": external.Mixed, "jobsTotal": float64(2), "jobsCompleted": float64(0), "jobsFailed": float64(0)}
		for k, v := range want {
			if first[k] != v {
				t.Errorf("orders[0].%s = %v, want %v", k, first[k], v)
			}
		}
		if _, ok := first["jobs"]; ok || first["createdAt"] == nil || first["updatedAt"] == nil {
			t.Errorf("summary = %v: no job breakdown, timestamps present", first)
		}
		if second := body["orders"].([]any)[1].(map[string]any); second["provider"] != external.Mixed || second["model"] != external.Mixed {
			t.Errorf("mixed order = %v", second)
		}
		if _, body, _ := e.get("/orders", "X-Api-Key", otherKey); fmt.Sprint(ids(body)) != fmt.Sprint([]string{foreign.ID}) {
			t.Errorf("the other account sees %v", ids(body))
		}

		for query, want := range map[string][]string{
			"?limit=2":   newestFirst[:2],
			"?limit=0":   newestFirst[:1],
			"?limit=-4":  newestFirst[:1],
			"?limit=500": newestFirst,
			// Any integer of 64 bits is clamped.
			"?limit=9223372036854775807":                               newestFirst,
			"?limit=-9223372036854775808":                              newestFirst[:1],
			"?status=in_progress":                                      newestFirst[2:],
			"?status=completed":                                        {mixed.ID},
			"?since=" + e.now.Add(30*time.Second).Format(time.RFC3339): newestFirst[:4],
		} {
			code, body, _ := e.get("/orders"+query, "X-Api-Key", e.key)
			if code != http.StatusOK || fmt.Sprint(ids(body)) != fmt.Sprint(want) {
				t.Errorf("%s: %d %v, want %v", query, code, ids(body), want)
			}
		}
		if _, body, _ := e.get("/orders?limit=500", "X-Api-Key", e.key); body["limit"] != float64(50) {
			t.Errorf("limit 500 is reported as %v, want 50", body["limit"])
		}
		for _, query := range []string{"?limit=ten", "?status=done", "?since=yesterday", "?since=9999-12-31T23:00:00-01:00"} {
			code, body, _ := e.get("/orders"+query, "X-Api-Key", e.key)
			if code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400", query, code)
			}
			errorOf(t, body)
		}
	})
}

func TestGetOrder(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		other, _ := e.newAccount(external.ScopeRead)
		o := e.order(e.account, e.now, status.OrderInProgress,
			[2]string{"local/motion-v1", status.JobCompleted}, [2]string{"local/motion-v1", status.JobFailed},
			[2]string{"local/motion-v1", status.JobRetryPending})
		foreign := e.order(other, e.now, status.OrderCompleted, [2]string{"local/motion-v1", status.JobCompleted})

		code, body, _ := e.get("/orders/"+o.ID, "X-Api-Key", e.key)
		if code != http.StatusOK || body["orderId"] != o.ID || body["provider"] != "local" || body["model"] != "motion-v1" {
			t.Fatalf("GET /orders/:id = %d %v", code, body)
		}
		jobs := body["jobs"].([]any)
		if len(jobs) != 3 {
			t.Fatalf("jobs = %v", jobs)
		}
		done, failed, retrying := jobs[0].(map[string]any), jobs[1].(map[string]any), jobs[2].(map[string]any)
		for _, k := range []string{"jobId", "provider", "model", "status", "attemptCount", "outputUrl", "errorCategory", "errorHint", "startedAt", "completedAt"} {
			if _, ok := done[k]; !ok {
				t.Errorf("job has no %s: %v", k, done)
			}
		}
		if u, _ := done["outputUrl"].(string); !strings.HasPrefix(u, "http://shotflow.test/files/") || done["errorCategory"] != nil {
			t.Errorf("completed job = %v", done)
		}
		if failed["outputUrl"] != nil || failed["errorCategory"] != "CONTENT_POLICY" || failed["errorHint"] != errorcat.ContentPolicy.Hint() || failed["attemptCount"] != float64(2) {
			t.Errorf("failed job = %v", failed)
		}
		if retrying["status"] != status.JobRetryPending || retrying["errorCategory"] != nil || retrying["outputUrl"] != nil {
			t.Errorf("retrying job = %v: errorCategory is null unless failed", retrying)
		}

		for path, want := range map[string]int{
			"/orders/not-a-uuid":        http.StatusBadRequest,
			"/orders/" + models.NewID(): http.StatusNotFound,
			"/orders/" + foreign.ID:     http.StatusNotFound,
			// The other spellings of a UUID are not IDs of this API, the caller's own order's either.
			"/orders/{" + o.ID + "}":                       http.StatusBadRequest,
			"/orders/urn:uuid:" + o.ID:                     http.StatusBadRequest,
			"/orders/" + strings.ReplaceAll(o.ID, "-", ""): http.StatusBadRequest,
		} {
			code, body, _ := e.get(path, "X-Api-Key", e.key)
			if code != want {
				t.Errorf("%s: %d, want %d", path, code, want)
			}
			errorOf(t, body)
		}
		_, missing, _ := e.get("/orders/"+models.NewID(), "X-Api-Key", e.key)
		_, foreignBody, _ := e.get("/orders/"+foreign.ID, "X-Api-Key", e.key)
		if missing["error"] != foreignBody["error"] {
			t.Errorf("another account's order is distinguishable: %v vs %v", foreignBody, missing)
		}
	})
}

func TestServesItsOpenAPIDocument(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 0)
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, external.OpenAPIPath, nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "openapi: 3.1") {
		t.Fatalf("GET %s = %d", external.OpenAPIPath, rec.Code)
	}
	doc, err := contract.External.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Every route is documented, and every documented operation is routed.
	routed := map[string]bool{}
	for _, r := range e.router.Routes() {
		if r.Path == external.OpenAPIPath {
			continue
		}
		path := strings.TrimPrefix(r.Path, external.Base)
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "{"+seg[1:]+"}", 1)
			}
		}
		routed[r.Method+" "+path] = true
		if item := doc.Paths.Find(path); item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("route %s %s is not in the document", r.Method, r.Path)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !routed[method+" "+path] {
				t.Errorf("documented %s %s is not routed", method, path)
			}
		}
	}
}

// Every operation but the document's own can meet a dependency outage or its deadline: each
// documents 503 with Retry-After.
func TestEveryOperationDocumentsOutages(t *testing.T) {
	t.Parallel()
	doc, err := contract.External.Load()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		if path == "/openapi.yaml" {
			continue
		}
		for method, op := range item.Operations() {
			resp := op.Responses.Value("503")
			if resp == nil || resp.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s %s does not document 503 with Retry-After", method, path)
			}
		}
	}
}

// Every documented operation answers 401 without a key, 429 once its key's budget is spent and
// 500 in the {error} body when the database is gone.
func TestEveryRouteAuthenticatesLimitsAndFailsInItsBody(t *testing.T) {
	t.Parallel()
	doc, err := contract.External.Load()
	if err != nil {
		t.Fatal(err)
	}
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1)
		type op struct{ method, path string }
		var ops []op
		for path, item := range doc.Paths.Map() {
			if path == "/openapi.yaml" {
				continue
			}
			for method := range item.Operations() {
				ops = append(ops, op{method, strings.ReplaceAll(path, "{id}", models.NewID())})
			}
		}
		send := func(o op, key string) (int, map[string]any) {
			req := httptest.NewRequest(o.method, external.Base+o.path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			code, body, _ := e.serve(req)
			return code, body
		}
		for _, o := range ops {
			if code, body := send(o, ""); code != http.StatusUnauthorized {
				t.Errorf("%s %s without a key: %d, want 401", o.method, o.path, code)
			} else {
				errorOf(t, body)
			}
			_, key := e.newAccount(external.ScopeRegister, external.ScopeRead)
			send(o, key) // spends the budget of 1 a minute
			if code, body := send(o, key); code != http.StatusTooManyRequests {
				t.Errorf("%s %s over the limit: %d, want 429", o.method, o.path, code)
			} else {
				errorOf(t, body)
			}
		}
		_, key := e.newAccount(external.ScopeRegister, external.ScopeRead)
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatal(err)
		}
		if err := sqlDB.Close(); err != nil {
			t.Fatal(err)
		}
		// The contract check wants a valid request behind a 5xx, and these bodies are not: read
		// the answers directly.
		for _, o := range ops {
			req := httptest.NewRequest(o.method, external.Base+o.path, strings.NewReader(`{}`))
			req.Header.Set("X-Api-Key", key)
			rec := httptest.NewRecorder()
			e.router.ServeHTTP(rec, req)
			var body map[string]any
			if rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
				t.Errorf("%s %s without a database: %d %s, want 500", o.method, o.path, rec.Code, rec.Body)
			} else if msg := errorOf(t, body); strings.Contains(msg, "sql") {
				t.Errorf("%s %s: the 500 leaks %q", o.method, o.path, msg)
			}
		}
	})
}
