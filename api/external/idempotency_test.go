package external_test

import (
	"bytes"
	"encoding/json"
	"image/color"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

const idemHeader = "Idempotency-Key"

// keyedPost sends a JSON body (a string as is, anything else encoded) with the API key and, when
// idemKey is not empty, an Idempotency-Key; the exchange is checked against the document.
func (e *env) keyedPost(apiKey, idemKey, path string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = string(b)
	}
	req := httptest.NewRequest(http.MethodPost, external.Base+path, strings.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", apiKey)
	if idemKey != "" {
		req.Header.Set(idemHeader, idemKey)
	}
	return contract.External.ServeAndCheck(e.t, e.router, req)
}

// jsonOf decodes an answer's JSON body.
func jsonOf(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("body %q is not JSON", rec.Body.String())
	}
	return out
}

// conflictDetail checks a 409 idempotency conflict in the external error body and returns its
// errors.idempotencyConflict.details.
func conflictDetail(t testing.TB, rec *httptest.ResponseRecorder) []string {
	t.Helper()
	if rec.Code != http.StatusConflict {
		t.Fatalf("status %d %s, want 409", rec.Code, rec.Body.String())
	}
	out := jsonOf(t, rec)
	msg, _ := out["error"].(string)
	errs, _ := out["errors"].(map[string]any)
	conflict, _ := errs["idempotencyConflict"].(map[string]any)
	if !strings.Contains(msg, idemHeader) || len(out) != 2 || len(errs) != 1 || conflict == nil {
		t.Fatalf("409 body %v, want {error, errors: {idempotencyConflict}}", out)
	}
	return strs(conflict["details"])
}

// credits is the account's balance and reservation.
func (e *env) credits(accountID string) (balance, reserved int64) {
	e.t.Helper()
	acc, err := models.GetAccount(e.db, accountID)
	if err != nil {
		e.t.Fatal(err)
	}
	return acc.CreditBalance, acc.CreditsReserved
}

// countOf counts the rows of model matching where.
func (e *env) countOf(model any, where string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Model(model).Where(where, args...).Count(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Twenty identical keyed generation requests at once create one order and reserve its credits
// once: one runs, the others wait for it and replay its answer, and all twenty answers are the
// same bytes naming the same order.
func TestIdempotentGenerationConcurrentRequestsCreateOneOrder(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		body := `{"preferences": "linen, morning light", "count": 3}`
		const n = 20
		recs := make([]*httptest.ResponseRecorder, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				recs[i] = e.keyedPost(e.key, "same-key", "/models/register-ideas", body)
			})
		}
		close(start)
		wg.Wait()
		replayed := 0
		for i, rec := range recs {
			if rec.Code != http.StatusOK {
				t.Fatalf("answer %d: %d %s", i, rec.Code, rec.Body.String())
			}
			if rec.Header().Get("Idempotent-Replayed") == "true" {
				replayed++
			}
			if !bytes.Equal(rec.Body.Bytes(), recs[0].Body.Bytes()) {
				t.Fatalf("answer %d differs:\n%s\nfrom:\n%s", i, rec.Body.String(), recs[0].Body.String())
			}
		}
		if replayed != n-1 {
			t.Errorf("%d answers replayed, want %d (one ran)", replayed, n-1)
		}
		o, jobs, _ := e.checkAccepted(recs[0].Code, jsonOf(t, recs[0]), 3)
		if got := e.countOf(&models.Order{}, "account_id = ?", e.account); got != 1 {
			t.Errorf("%d orders, want 1", got)
		}
		if len(jobs) != 3 || o.CreditsReserved != 3 {
			t.Errorf("order %+v with %d jobs, want 3 jobs reserving 3 credits", o, len(jobs))
		}
		if balance, reserved := e.credits(e.account); balance != 97 || reserved != 3 {
			t.Errorf("balance %d, reserved %d; want 97 and 3: the credits reserved once", balance, reserved)
		}
		if got := e.countOf(&models.LedgerEntry{}, "account_id = ? AND kind = ?", e.account, models.LedgerReserve); got != 3 {
			t.Errorf("%d reserve entries, want 3 (one per job)", got)
		}
		if starts := e.started("order/"); len(starts) != 1 {
			t.Errorf("order workflows started: %v, want one", starts)
		}
		// The key names the order: it was recorded in the order's transaction.
		row, err := models.GetScopedIdempotencyKey(db, models.AccountKeyScope(e.account), "same-key")
		if err != nil || row.OrderID == nil || *row.OrderID != o.ID || row.Status != models.IdempotencyCompleted ||
			row.InstallationID != nil || row.ResponseBody == nil || *row.ResponseBody != recs[0].Body.String() {
			t.Fatalf("key row %+v, %v; want completed, naming order %s, with the answer sent", row, err, o.ID)
		}
	})
}

// A repeat replays the first answer byte for byte with Idempotent-Replayed: true, whatever the
// body's formatting and key order; the same key with another request is 409
// idempotencyConflict; two accounts' keys are independent; and nothing but the first request
// creates anything.
func TestIdempotentGenerationReplayConflictAndScope(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		first := e.keyedPost(e.key, "k-1", "/sceneries/register-ideas", `{"preferences":"marble","count":2}`)
		if first.Code != http.StatusOK || first.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %s %v", first.Code, first.Body.String(), first.Header())
		}
		order, _, _ := e.checkAccepted(first.Code, jsonOf(t, first), 2)

		again := e.keyedPost(e.key, "k-1", "/sceneries/register-ideas", "{ \"count\": 2.0,\n  \"preferences\": \"marble\" }")
		if again.Code != http.StatusOK || again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Header().Get("Content-Type") != first.Header().Get("Content-Type") {
			t.Fatalf("replay: %d %v", again.Code, again.Header())
		}
		if !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Fatalf("replay body:\n%s\nfirst:\n%s", again.Body.String(), first.Body.String())
		}

		// Another payload, another route or no key at all is not a replay.
		if d := conflictDetail(t, e.keyedPost(e.key, "k-1", "/sceneries/register-ideas", `{"preferences":"marble","count":3}`)); len(d) != 1 || d[0] != "different_request" {
			t.Errorf("another count: details %v, want [different_request]", d)
		}
		if d := conflictDetail(t, e.keyedPost(e.key, "k-1", "/models/register-ideas", `{"preferences":"marble","count":2}`)); len(d) != 1 || d[0] != "different_request" {
			t.Errorf("another route: details %v, want [different_request]", d)
		}
		if got := e.countOf(&models.Order{}, "account_id = ?", e.account); got != 1 {
			t.Fatalf("%d orders after a replay and two conflicts, want 1", got)
		}
		unkeyed := e.keyedPost(e.key, "", "/sceneries/register-ideas", `{"preferences":"marble","count":2}`)
		if o, _, _ := e.checkAccepted(unkeyed.Code, jsonOf(t, unkeyed), 2); o.ID == order.ID {
			t.Fatal("a request without a key replayed the keyed one")
		}

		// The same key in another account is that account's own.
		other, otherKey := e.newAccount(external.ScopeRegister)
		theirs := e.keyedPost(otherKey, "k-1", "/sceneries/register-ideas", `{"preferences":"marble","count":2}`)
		o2, _, _ := e.checkAccepted(theirs.Code, jsonOf(t, theirs), 2)
		if o2.ID == order.ID || o2.AccountID != other || theirs.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("another account's key k-1 answered order %+v (replayed %q), want its own", o2, theirs.Header().Get("Idempotent-Replayed"))
		}
		if _, reserved := e.credits(other); reserved != 2 {
			t.Errorf("the other account reserved %d, want 2", reserved)
		}
		// ... and a different payload under it there is not a conflict with the first account's.
		if rec := e.keyedPost(otherKey, "k-2", "/sceneries/register-ideas", `{"preferences":"oak","count":1}`); rec.Code != http.StatusOK {
			t.Fatalf("other account, k-2: %d %s", rec.Code, rec.Body.String())
		}
		if rec := e.keyedPost(e.key, "k-2", "/sceneries/register-ideas", `{"preferences":"slate","count":1}`); rec.Code != http.StatusOK || rec.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("first account, k-2: %d %s", rec.Code, rec.Body.String())
		}
	})
}

// A refused first request (400 before the engine, 402 from it) keeps nothing: the key is free, and
// the same key with the corrected request, or the same request once it can be served, runs.
func TestIdempotentGenerationRefusalFreesTheKey(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		if rec := e.keyedPost(e.key, "fix-me", "/models/register-ideas", `{"preferences":"x","count":0}`); rec.Code != http.StatusBadRequest {
			t.Fatalf("count 0: %d %s", rec.Code, rec.Body.String())
		}
		if got := e.countOf(&models.IdempotencyKey{}, "1 = 1"); got != 0 {
			t.Fatalf("%d keys kept after a 400", got)
		}
		rec := e.keyedPost(e.key, "fix-me", "/models/register-ideas", `{"preferences":"x","count":2}`)
		e.checkAccepted(rec.Code, jsonOf(t, rec), 2)

		poor, poorKey := e.newAccount(external.ScopeRegister)
		if err := db.Model(&models.Account{}).Where("id = ?", poor).Update("credit_balance", 1).Error; err != nil {
			t.Fatal(err)
		}
		body := `{"preferences":"y","count":5}`
		if rec := e.keyedPost(poorKey, "top-up", "/models/register-ideas", body); rec.Code != http.StatusPaymentRequired {
			t.Fatalf("5 credits of 1: %d %s", rec.Code, rec.Body.String())
		}
		e.nothingCreated(poor, 1)
		if got := e.countOf(&models.IdempotencyKey{}, "account_id = ?", poor); got != 0 {
			t.Fatalf("%d keys kept after a 402", got)
		}
		if err := db.Model(&models.Account{}).Where("id = ?", poor).Update("credit_balance", 100).Error; err != nil {
			t.Fatal(err)
		}
		rec = e.keyedPost(poorKey, "top-up", "/models/register-ideas", body)
		if o, _, _ := e.checkAccepted(rec.Code, jsonOf(t, rec), 5); rec.Header().Get("Idempotent-Replayed") != "" || o.AccountID != poor {
			t.Fatalf("after the top-up: order %+v, replayed %q", o, rec.Header().Get("Idempotent-Replayed"))
		}
	})
}

// An answer is replayed for 24 hours (the TTL); after the TTL the key is used afresh: the same
// request creates a new order. A request whose key is held by a request still running waits for
// it, and answers 409 [in_progress] with Retry-After when it does not finish in time.
func TestIdempotentGenerationExpiryAndWait(t *testing.T) {
	// Not parallel: external.SetIdempotencyTiming changes package variables.
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		body := `{"preferences":"velvet","count":1}`
		first := e.keyedPost(e.key, "day", "/models/register-ideas", body)
		e.checkAccepted(first.Code, jsonOf(t, first), 1)
		row, err := models.GetScopedIdempotencyKey(db, models.AccountKeyScope(e.account), "day")
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(row.ExpiresAt); left < 24*time.Hour-time.Minute || left > 24*time.Hour {
			t.Fatalf("the answer expires in %v, want 24 hours", left)
		}

		restore := external.SetIdempotencyTiming(10*time.Second, time.Minute, 400*time.Millisecond)
		defer restore()
		short := e.keyedPost(e.key, "short", "/models/register-ideas", body)
		o1, _, _ := e.checkAccepted(short.Code, jsonOf(t, short), 1)
		time.Sleep(500 * time.Millisecond)
		later := e.keyedPost(e.key, "short", "/models/register-ideas", body)
		o2, _, _ := e.checkAccepted(later.Code, jsonOf(t, later), 1)
		if o2.ID == o1.ID || later.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("after the TTL the key replayed order %s, want a new one", o1.ID)
		}
		if got := e.countOf(&models.IdempotencyKey{}, "account_id = ? AND idempotency_key = ?", e.account, "short"); got != 1 {
			t.Errorf("%d rows of the key, want the one taken over", got)
		}

		// A claim in progress (its request still runs) holds the key: a repeat waits, then 409.
		restore()
		defer external.SetIdempotencyTiming(300*time.Millisecond, time.Minute, 0)()
		hash, err := external.RequestHash("/models/register-ideas", body)
		if err != nil {
			t.Fatal(err)
		}
		if _, claimed, err := models.ClaimScopedIdempotencyKey(db, models.AccountKeyScope(e.account), "held", hash, time.Minute, 0); err != nil || !claimed {
			t.Fatalf("claim: %v, %v", claimed, err)
		}
		began := time.Now()
		rec := e.keyedPost(e.key, "held", "/models/register-ideas", body)
		if d := conflictDetail(t, rec); len(d) != 1 || d[0] != "in_progress" || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("held key: details %v, Retry-After %q", d, rec.Header().Get("Retry-After"))
		}
		if waited := time.Since(began); waited < 300*time.Millisecond {
			t.Errorf("answered after %v, want a wait of 300ms first", waited)
		}
		if got := e.countOf(&models.Order{}, "account_id = ?", e.account); got != 3 {
			t.Errorf("%d orders, want 3", got)
		}
	})
}

// multipartRoutes are the routes that take a multipart body.
var multipartRoutes = map[string]bool{external.Base + "/products": true, external.Base + "/presets": true}

// Every POST route the external router mounts reads the Idempotency-Key header: a key too long is
// refused 400 naming the header, before the route runs. Other methods ignore it.
func TestEveryExternalPostReadsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 1000)
	tooLong := strings.Repeat("k", 201)
	posts := 0
	for _, r := range e.router.Routes() {
		path := strings.ReplaceAll(r.Path, ":id", models.NewID())
		req := httptest.NewRequest(r.Method, path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if multipartRoutes[r.Path] { // the input check parses the form before the key is read
			req = httptest.NewRequest(r.Method, path, strings.NewReader("--b--\r\n"))
			req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		}
		req.Header.Set("X-Api-Key", e.key)
		req.Header.Set(idemHeader, tooLong)
		rec := httptest.NewRecorder()
		e.router.ServeHTTP(rec, req)
		reads := rec.Code == http.StatusBadRequest && strings.Contains(rec.Body.String(), idemHeader)
		if r.Method == http.MethodPost {
			posts++
			if !reads {
				t.Errorf("POST %s: %d %s, want 400 naming %s", r.Path, rec.Code, rec.Body.String(), idemHeader)
			}
		} else if reads {
			t.Errorf("%s %s refused the key, which only POST routes read", r.Method, r.Path)
		}
	}
	if posts < 14 {
		t.Fatalf("only %d POST routes found", posts)
	}
	// The document says the same: an operation's success declares Idempotent-Replayed exactly
	// when it is a POST (a PUT that claimed the key's replays would promise what no route does).
	doc, err := contract.External.Load()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			declares := false
			for code, resp := range op.Responses.Map() {
				if strings.HasPrefix(code, "2") && resp.Value != nil && resp.Value.Headers["Idempotent-Replayed"] != nil {
					declares = true
				}
			}
			if declares != (method == http.MethodPost) {
				t.Errorf("%s %s: the document declares Idempotent-Replayed %v, but only POST routes read the key", method, path, declares)
			}
		}
	}
	// The header twice, or empty, is refused too.
	req := httptest.NewRequest(http.MethodPost, external.Base+"/models/register-ideas", strings.NewReader(`{"preferences":"x"}`))
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Add(idemHeader, "a")
	req.Header.Add(idemHeader, "b")
	rec := contract.External.ServeAndCheck(t, e.router, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Send one") {
		t.Fatalf("two keys: %d %s", rec.Code, rec.Body.String())
	}
	e.nothingCreated(e.account, 100)
}

// A keyed POST /webhook-endpoints creates one endpoint; its replay shows the same secret, which the
// key's record keeps sealed, never in clear. rotate-secret likewise rotates once.
func TestIdempotentWebhookEndpointKeepsItsSecretSealed(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		body := map[string]any{"url": hookURL}
		first := e.keyedPost(e.key, "ep", "/webhook-endpoints", body)
		if first.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", first.Code, first.Body.String())
		}
		again := e.keyedPost(e.key, "ep", "/webhook-endpoints", body)
		if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" ||
			!bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) || again.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("replay: %d %v %s", again.Code, again.Header(), again.Body.String())
		}
		if n := e.liveEndpoints(e.account); n != 1 {
			t.Fatalf("%d endpoints, want 1", n)
		}
		created := jsonOf(t, first)
		secret, _ := created["secret"].(string)
		row, err := models.GetScopedIdempotencyKey(db, models.AccountKeyScope(e.account), "ep")
		if err != nil || secret == "" || row.ResponseBody == nil || strings.Contains(*row.ResponseBody, secret) {
			t.Fatalf("key row %+v, %v: the secret %q must be recorded sealed", row, err, secret)
		}

		id, _ := created["id"].(string)
		rotated := e.keyedPost(e.key, "rot", "/webhook-endpoints/"+id+"/rotate-secret", "")
		replay := e.keyedPost(e.key, "rot", "/webhook-endpoints/"+id+"/rotate-secret", "")
		if rotated.Code != http.StatusOK || replay.Code != http.StatusOK || !bytes.Equal(rotated.Body.Bytes(), replay.Body.Bytes()) {
			t.Fatalf("rotate: %d %s, replay %d %s", rotated.Code, rotated.Body.String(), replay.Code, replay.Body.String())
		}
		newSecret, _ := jsonOf(t, rotated)["secret"].(string)
		if newSecret == "" || newSecret == secret {
			t.Fatalf("rotated secret %q", newSecret)
		}
		row, err = models.GetScopedIdempotencyKey(db, models.AccountKeyScope(e.account), "rot")
		if err != nil || row.ResponseBody == nil || strings.Contains(*row.ResponseBody, newSecret) {
			t.Fatalf("rotate key row %+v, %v: recorded in clear", row, err)
		}
	})
}

// multipartRequest builds a POST of a multipart form with the given boundary.
func (e *env) multipartRequest(path, boundary, idemKey string, fields []string, files ...formFile) *http.Request {
	e.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, f := range files {
		part, err := w.CreateFormFile(f.field, f.name)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := io.Copy(part, bytes.NewReader(f.data)); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, external.Base+path, &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Set(idemHeader, idemKey)
	return req
}

// A multipart POST's key is bound to its fields and files, not to its bytes: a retry with another
// boundary replays the first answer; another file under the same key is a conflict.
func TestIdempotentProductUploadIgnoresTheBoundary(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		png := testimage.SolidPNG(t, 32, 32, color.NRGBA{200, 10, 10, 255})
		file := formFile{"file", "shirt.png", png}
		first := contract.External.ServeAndCheck(t, e.router, e.multipartRequest("/products", "boundary-one", "photo", []string{"name", "Shirt"}, file))
		if first.Code != http.StatusOK {
			t.Fatalf("upload: %d %s", first.Code, first.Body.String())
		}
		again := contract.External.ServeAndCheck(t, e.router, e.multipartRequest("/products", "another-boundary-2", "photo", []string{"name", "Shirt"}, file))
		if again.Code != http.StatusOK || again.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Fatalf("retry with another boundary: %d %v %s", again.Code, again.Header(), again.Body.String())
		}
		if got := e.countOf(&models.Product{}, "account_id = ?", e.account); got != 1 {
			t.Fatalf("%d products, want 1", got)
		}
		other := formFile{"file", "shirt.png", testimage.SolidPNG(t, 32, 32, color.NRGBA{10, 200, 10, 255})}
		if d := conflictDetail(t, contract.External.ServeAndCheck(t, e.router, e.multipartRequest("/products", "boundary-one", "photo", []string{"name", "Shirt"}, other))); len(d) != 1 || d[0] != "different_request" {
			t.Fatalf("another file: details %v", d)
		}
		if d := conflictDetail(t, contract.External.ServeAndCheck(t, e.router, e.multipartRequest("/products", "boundary-one", "photo", []string{"name", "Shirts"}, file))); len(d) != 1 {
			t.Fatalf("another name: details %v", d)
		}
		if got := e.countOf(&models.Product{}, "account_id = ?", e.account); got != 1 {
			t.Fatalf("%d products after two conflicts, want 1", got)
		}
	})
}
