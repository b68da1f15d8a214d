package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send is client.do with an Idempotency-Key (none when key is "") and a body that may be raw JSON
// text; it returns an error instead of failing the test, so that goroutines may call it.
func (c *client) send(method, path, key string, body any) (answer, error) {
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			return answer{}, err
		}
	}
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(data))
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Api-Key", c.key)
	if key != "" {
		req.Header.Set(plugin.HeaderIdempotencyKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	doc := c.doc
	if doc == nil {
		doc = contract.Plugin
	}
	if err := doc.Validate(req, data, resp.StatusCode, resp.Header, out); err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: out}, nil
}

// mustSend is send that fails the test on a transport or contract error or an unexpected status,
// decoding the body into out (nil to skip).
func (c *client) mustSend(method, path, key string, body any, status int, out any) answer {
	c.t.Helper()
	a, err := c.send(method, path, key, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if a.status != status {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, a.status, status, a.body)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, a.body, err)
		}
	}
	return a
}

// errorCode returns the code of an error envelope.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return env.Error.Code
}

func countRows(t *testing.T, env *testenv.Env, model any, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := env.DB.Model(model).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// reservations counts the reserve entries of the ledger for an order.
func reservations(t *testing.T, env *testenv.Env, orderID string) int64 {
	t.Helper()
	return countRows(t, env, &models.LedgerEntry{}, "order_id = ? AND kind = ?", orderID, models.LedgerReserve)
}

// orderView is the part of GET /orders/{id} the clone test reads.
type orderView struct {
	SourceOrderID *string         `json:"source_order_id"`
	SessionConfig json.RawMessage `json:"session_config"`
}

// credits is GET /me.
func credits(t *testing.T, api *client) plugin.MeResponse {
	t.Helper()
	var me plugin.MeResponse
	expect(t, api.do(http.MethodGet, "/me", nil, &me), http.StatusOK)
	return me
}

// TestIdempotentSessionsEndToEnd: a retried POST /jobs with the same Idempotency-Key answers 200
// with the same session and creates nothing; another payload under the key is a 409; ten
// identical requests at once create exactly one order.
func TestIdempotentSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 50)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "mug", packshotPNG(t))
	registerPackshot(t, env, api, "cup", packshotPNG(t))

	body := `{"session_config":{"aspect_ratio":"1:1","style":"oak table"},"subjects":[{"product_ref":"mug","images_count":2,"ai_model":"local/studio-v1"}]}`
	reformatted := "{\n  \"subjects\": [{\"ai_model\": \"local/studio-v1\", \"product_ref\": \"mug\", \"images_count\": 2}],\n  \"session_config\": {\"style\": \"oak table\", \"aspect_ratio\": \"1:1\"}\n}\n"
	var first plugin.SessionResponse
	created := api.mustSend(http.MethodPost, "/jobs", "retry-me", body, http.StatusCreated, &first)

	// The client retries (say its connection dropped): the same session, and nothing new.
	var replay plugin.SessionResponse
	replayed := api.mustSend(http.MethodPost, "/jobs", "retry-me", reformatted, http.StatusOK, &replay)
	if replay.OrderID != first.OrderID || !bytes.Equal(created.body, replayed.body) || replayed.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %s (%v), first = %s", replayed.body, replayed.header, created.body)
	}
	if n := countRows(t, env, &models.Order{}, "installation_id = ?", tenant.InstallationID); n != 1 {
		t.Fatalf("%d orders after a replay, want 1", n)
	}
	if n := reservations(t, env, first.OrderID); n != 2 {
		t.Fatalf("%d reservations for the order, want 2 (one per job)", n)
	}
	if me := credits(t, api); me.Credits.Available != 48 {
		t.Fatalf("credits after a replay = %+v, want 48 available", me.Credits)
	}

	// The same key with another payload is a conflict; nothing is created.
	other := map[string]any{"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects": []any{map[string]any{"product_ref": "cup", "images_count": 1, "ai_model": "local/studio-v1"}}}
	a := api.mustSend(http.MethodPost, "/jobs", "retry-me", other, http.StatusConflict, nil)
	if code := errorCode(t, a.body); code != plugin.CodeIdempotencyConflict {
		t.Fatalf("conflict code = %q", code)
	}

	// Ten identical requests race with a new key: one order, one set of reservations.
	const n = 10
	answers := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i], errs[i] = api.send(http.MethodPost, "/jobs", "burst", other)
		}()
	}
	close(start)
	wg.Wait()
	statuses := map[int]int{}
	orderIDs := map[string]bool{}
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		statuses[a.status]++
		var s plugin.SessionResponse
		if err := json.Unmarshal(a.body, &s); err != nil || s.OrderID == "" {
			t.Fatalf("request %d answered %d: %s", i, a.status, a.body)
		}
		orderIDs[s.OrderID] = true
	}
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != n-1 || len(orderIDs) != 1 {
		t.Fatalf("statuses %v, %d distinct orders; want one 201, nine 200 and one order", statuses, len(orderIDs))
	}
	var burstOrder string
	for id := range orderIDs {
		burstOrder = id
	}
	if n := countRows(t, env, &models.Order{}, "installation_id = ?", tenant.InstallationID); n != 2 {
		t.Fatalf("%d orders, want 2", n)
	}
	if n := reservations(t, env, burstOrder); n != 1 {
		t.Fatalf("%d reservations for the burst's order, want 1", n)
	}

	// Both sessions run to completion, and the credits balance.
	waitTerminal(t, api, append(append([]string{}, first.Subjects[0].JobIDs...), burstOrderJobs(t, env, burstOrder)...))
	me := credits(t, api)
	if me.Credits.Available != 47 || me.Credits.Reserved != 0 {
		t.Fatalf("credits at the end = %+v, want 47 available and nothing reserved", me.Credits)
	}
	// A replay after the jobs finished still answers the first answer.
	api.mustSend(http.MethodPost, "/jobs", "retry-me", body, http.StatusOK, nil)
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

func burstOrderJobs(t *testing.T, env *testenv.Env, orderID string) []string {
	t.Helper()
	var ids []string
	if err := env.DB.Model(&models.Job{}).Where("order_id = ?", orderID).Order("position").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestBatchEndToEnd: a batch answers 207 with one result per session in input order; the sessions
// that fail (422, 400, 402) create nothing, and credits are reserved only for those that succeed.
func TestBatchEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 5)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "lamp", packshotPNG(t))
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	one := func(ref string, images int) map[string]any {
		return map[string]any{"session_config": map[string]any{"aspect_ratio": "1:1"},
			"subjects": []any{map[string]any{"product_ref": ref, "images_count": images, "ai_model": "local/studio-v1"}}}
	}

	var resp plugin.BatchResponse
	api.mustSend(http.MethodPost, "/jobs/batch", "", map[string]any{"batches": []any{
		one("lamp", 2),  // 201
		one("ghost", 1), // 422: no packshot
		one("lamp", 0),  // 400: images_count
		one("vase", 1),  // 201
		one("vase", 3),  // 402: 2 credits left
	}}, http.StatusMultiStatus, &resp)
	want := []int{201, 422, 400, 201, 402}
	wantCode := []string{"", plugin.CodePackshotNotApproved, plugin.CodeInvalidInput, "", plugin.CodeInsufficientCredits}
	if len(resp.Results) != len(want) {
		t.Fatalf("results = %+v", resp.Results)
	}
	var jobIDs []string
	for i, r := range resp.Results {
		if r.Index != i || r.Status != want[i] {
			t.Fatalf("result %d = %+v, want index %d status %d", i, r, i, want[i])
		}
		if r.Status == http.StatusCreated {
			if r.Session == nil || r.Error != nil || r.Session.OrderID == "" {
				t.Fatalf("result %d = %+v", i, r)
			}
			jobIDs = append(jobIDs, r.Session.Subjects[0].JobIDs...)
			continue
		}
		if r.Session != nil || r.Error == nil || r.Error.Code != wantCode[i] || r.Error.MessageI18n["en"] == "" {
			t.Fatalf("result %d = %+v, want error %s", i, r, wantCode[i])
		}
	}
	if n := countRows(t, env, &models.Order{}, "installation_id = ?", tenant.InstallationID); n != 2 {
		t.Fatalf("%d orders, want 2", n)
	}
	if me := credits(t, api); me.Credits.Available != 2 || me.Credits.Reserved != 3 {
		t.Fatalf("credits after the batch = %+v, want 2 available and 3 reserved", me.Credits)
	}
	if n := countRows(t, env, &models.LedgerEntry{}, "account_id = ? AND kind = ?", tenant.AccountID, models.LedgerReserve); n != 3 {
		t.Fatalf("%d reservations, want 3", n)
	}

	// The retired body is refused with the way to migrate.
	a := api.mustSend(http.MethodPost, "/jobs/batch", "", map[string]any{"jobs": []any{one("lamp", 1)}}, http.StatusBadRequest, nil)
	if errorCode(t, a.body) != plugin.CodeInvalidInput || !bytes.Contains(a.body, []byte("rename jobs to batches")) {
		t.Fatalf("retired batch body answered %s", a.body)
	}

	for id, job := range waitTerminal(t, api, jobIDs) {
		if job.Status != status.JobCompleted {
			t.Fatalf("job %s = %+v", id, job)
		}
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

// TestCloneEndToEnd: a clone reuses the source's subjects (empty body) or replaces them, is charged
// anew, records its source, drops the ratings, replays under its key and needs one.
func TestCloneEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "bottle", packshotPNG(t))
	registerPackshot(t, env, api, "jar", packshotPNG(t))

	var src plugin.SessionResponse
	api.mustSend(http.MethodPost, "/jobs", "", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "4:5", "style": "linen"},
		"subjects": []any{
			map[string]any{"product_ref": "bottle", "product_label": "Blue bottle", "images_count": 2, "ai_model": "local/studio-v1"},
			map[string]any{"product_ref": "jar", "images_count": 1, "ai_model": "local/studio-v1"},
		},
	}, http.StatusCreated, &src)
	srcJobs := append(append([]string{}, src.Subjects[0].JobIDs...), src.Subjects[1].JobIDs...)
	waitTerminal(t, api, srcJobs)
	expect(t, api.do(http.MethodPost, "/jobs/"+srcJobs[0]+"/accept", nil, nil), http.StatusNoContent)

	// Without an Idempotency-Key: 400, nothing created.
	a := api.mustSend(http.MethodPost, "/orders/"+src.OrderID+"/clone", "", nil, http.StatusBadRequest, nil)
	if errorCode(t, a.body) != plugin.CodeInvalidInput || !bytes.Contains(a.body, []byte(plugin.HeaderIdempotencyKey)) {
		t.Fatalf("clone without a key answered %s", a.body)
	}
	before := credits(t, api).Credits.Available // 17

	// Empty body: the same subjects, charged anew.
	var clone plugin.SessionResponse
	created := api.mustSend(http.MethodPost, "/orders/"+src.OrderID+"/clone", "clone-1", nil, http.StatusCreated, &clone)
	if clone.OrderID == src.OrderID || len(clone.Subjects) != 2 || clone.Subjects[0].ProductRef != "bottle" ||
		len(clone.Subjects[0].JobIDs) != 2 || clone.Subjects[1].ProductRef != "jar" || len(clone.Subjects[1].JobIDs) != 1 || clone.CreditsReserved != 3 {
		t.Fatalf("clone = %+v", clone)
	}
	if got := credits(t, api).Credits.Available; got != before-3 {
		t.Fatalf("available after the clone = %d, want %d", got, before-3)
	}
	var order orderView
	expect(t, api.do(http.MethodGet, "/orders/"+clone.OrderID, nil, &order), http.StatusOK)
	if order.SourceOrderID == nil || *order.SourceOrderID != src.OrderID {
		t.Fatalf("clone's source_order_id = %v, want %s", order.SourceOrderID, src.OrderID)
	}
	var srcOrder orderView
	expect(t, api.do(http.MethodGet, "/orders/"+src.OrderID, nil, &srcOrder), http.StatusOK)
	var cfg, srcCfg map[string]any
	if json.Unmarshal(order.SessionConfig, &cfg) != nil || json.Unmarshal(srcOrder.SessionConfig, &srcCfg) != nil ||
		fmt.Sprint(cfg) != fmt.Sprint(srcCfg) || cfg["style"] != "linen" {
		t.Fatalf("clone's session_config %s, source's %s", order.SessionConfig, srcOrder.SessionConfig)
	}
	var cloned plugin.JobResponse
	expect(t, api.do(http.MethodGet, "/jobs/"+clone.Subjects[0].JobIDs[0], nil, &cloned), http.StatusOK)
	if cloned.Voting != models.VotingPending || cloned.VotingAt != nil || cloned.ProductLabel != "Blue bottle" || cloned.AspectRatio != "4:5" {
		t.Fatalf("cloned job = %+v", cloned)
	}

	// The same key replays: 200, the same answer, nothing charged.
	replayed := api.mustSend(http.MethodPost, "/orders/"+src.OrderID+"/clone", "clone-1", nil, http.StatusOK, nil)
	if !bytes.Equal(created.body, replayed.body) {
		t.Fatalf("replay %s, first %s", replayed.body, created.body)
	}
	if got := credits(t, api).Credits.Available; got != before-3 {
		t.Fatalf("available after the replay = %d, want %d", got, before-3)
	}

	// Replacement subjects: only jar, four images, its model taken from the source.
	var replaced plugin.SessionResponse
	api.mustSend(http.MethodPost, "/orders/"+src.OrderID+"/clone", "clone-2",
		map[string]any{"subjects": []any{map[string]any{"product_ref": "jar", "images_count": 4}}}, http.StatusCreated, &replaced)
	if len(replaced.Subjects) != 1 || replaced.Subjects[0].ProductRef != "jar" || len(replaced.Subjects[0].JobIDs) != 4 || replaced.CreditsReserved != 4 {
		t.Fatalf("clone with subjects = %+v", replaced)
	}
	var replacedOrder orderView
	expect(t, api.do(http.MethodGet, "/orders/"+replaced.OrderID, nil, &replacedOrder), http.StatusOK)
	if replacedOrder.SourceOrderID == nil || *replacedOrder.SourceOrderID != src.OrderID {
		t.Fatalf("source_order_id = %v", replacedOrder.SourceOrderID)
	}
	if got := credits(t, api).Credits.Available; got != before-7 {
		t.Fatalf("available after both clones = %d, want %d", got, before-7)
	}
	if n := countRows(t, env, &models.Order{}, "installation_id = ?", tenant.InstallationID); n != 3 {
		t.Fatalf("%d orders, want 3", n)
	}

	all := append(append([]string{}, clone.Subjects[0].JobIDs...), clone.Subjects[1].JobIDs...)
	for id, job := range waitTerminal(t, api, append(all, replaced.Subjects[0].JobIDs...)) {
		if job.Status != status.JobCompleted {
			t.Fatalf("job %s = %+v", id, job)
		}
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
