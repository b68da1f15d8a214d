package e2e_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// paidProvider stands in for a paid provider's API (OpenAI here): it counts the calls it gets,
// which a test key's jobs must never make.
func paidProvider(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestRehearsedOutcomesEndToEnd runs a test key's jobs through the real workflows on the dev
// server: a rehearsed CONTENT_POLICY failure fails at once, a rehearsed PROVIDER_CAPACITY failure
// fails after the real number of attempts on test mode's schedule of seconds, and two rehearsed
// retryable failures end in a completed third attempt whose output carries the TEST watermark.
// Their model is a paid provider's, which is never called. Both accounts' ledgers are exact: the
// test twin's moves, the live account's does not.
func TestRehearsedOutcomesEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	srv, paidCalls := paidProvider(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OpenAIAPIKey, c.OpenAIBaseURL = "sk-e2e-never-used", srv.URL
	}})
	tenant := env.NewTenant(t, 50)
	ctx := context.Background()
	k, err := env.App.Engine.Accounts.IssueTestPluginKey(ctx, env.App.Box, tenant.InstallationID, "e2e", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	test := &client{t: t, base: env.BaseURL + plugin.Base, key: k.APIKey}

	// A live key's subject with test_outcome is refused, naming it; nothing is created.
	resp := live.do(http.MethodPost, "/jobs", map[string]any{"session_config": map[string]any{},
		"subjects": []map[string]any{{"product_ref": "p", "images_count": 1, "ai_model": "openai/gpt-image-1",
			"test_outcome": map[string]any{"fail_with": "CONTENT_POLICY"}}}}, nil)
	if body := readBody(resp); resp.StatusCode != http.StatusBadRequest || !bytes.Contains([]byte(body), []byte("subjects[0].test_outcome")) {
		t.Fatalf("a live key's test_outcome: %d %s", resp.StatusCode, body)
	}

	const paidModel = "openai/gpt-image-1"
	subjects := []struct {
		ref, model string
		outcome    map[string]any
		status     string
		attempts   int
		category   errorcat.Category
	}{
		{"content", paidModel, map[string]any{"fail_with": "CONTENT_POLICY"}, status.JobFailed, 1, errorcat.ContentPolicy},
		{"capacity", "local/studio-v1", map[string]any{"fail_with": "PROVIDER_CAPACITY"}, status.JobFailed,
			workflows.TestRetrySchedule.MaxAttempts, errorcat.ProviderCapacity},
		{"retry", paidModel, map[string]any{"retryable_failures": 2}, status.JobCompleted, 3, ""},
	}
	body := map[string]any{"session_config": map[string]any{"aspect_ratio": "1:1"}}
	var list []map[string]any
	for _, s := range subjects {
		registerPackshot(t, env, test, s.ref, packshotPNG(t))
		list = append(list, map[string]any{"product_ref": s.ref, "images_count": 1, "ai_model": s.model, "test_outcome": s.outcome})
	}
	body["subjects"] = list
	var session plugin.SessionResponse
	began := time.Now()
	expect(t, test.do(http.MethodPost, "/jobs", body, &session), http.StatusCreated)
	if len(session.Subjects) != len(subjects) {
		t.Fatalf("session %+v", session)
	}
	var ids []string
	byID := map[string]int{}
	for i, s := range session.Subjects {
		ids = append(ids, s.JobIDs[0])
		byID[s.JobIDs[0]] = i
	}
	for id, job := range waitTerminal(t, test, ids) {
		want := subjects[byID[id]]
		if job.Status != want.status || job.AttemptCount != want.attempts {
			t.Errorf("%s: %s after %d attempts, want %s after %d", want.ref, job.Status, job.AttemptCount, want.status, want.attempts)
		}
		if want.category != "" {
			if job.ErrorCategory == nil || *job.ErrorCategory != string(want.category) {
				t.Errorf("%s: error category %v, want %s", want.ref, job.ErrorCategory, want.category)
			}
			continue
		}
		if len(job.Outputs) != 1 {
			t.Fatalf("%s: outputs %+v", want.ref, job.Outputs)
		}
		code, data := fetchFile(t, job.Outputs[0].URL)
		img, err := png.Decode(bytes.NewReader(data))
		if code != http.StatusOK || err != nil {
			t.Fatalf("%s: download %d: %v", want.ref, code, err)
		}
		b := img.Bounds()
		for _, r := range render.Watermark(b.Dx(), b.Dy()).Letters {
			c := r.Min.Add(r.Max).Div(2)
			if cr, cg, cb, _ := img.At(c.X, c.Y).RGBA(); uint8(cr>>8) != render.WatermarkColor.R || uint8(cg>>8) != render.WatermarkColor.G || uint8(cb>>8) != render.WatermarkColor.B {
				t.Fatalf("%s: output pixel %v is not the TEST watermark's", want.ref, c)
			}
		}
	}
	// The real workflow recorded the real events: a retry per retried attempt, then the end.
	for i, want := range []map[string]int{
		{"job.retrying": 0, "job.failed": 1},
		{"job.retrying": workflows.TestRetrySchedule.MaxAttempts - 1, "job.failed": 1},
		{"job.retrying": 2, "job.completed": 1, "job.failed": 0},
	} {
		for typ, n := range want {
			var got int64
			env.DB.Model(&models.WebhookEvent{}).Where("job_id = ? AND type = ?", ids[i], typ).Count(&got)
			if got != int64(n) {
				t.Errorf("%s: %d %s events, want %d", subjects[i].ref, got, typ, n)
			}
		}
	}
	var failedEvent models.WebhookEvent
	if err := env.DB.Take(&failedEvent, "job_id = ? AND type = ?", ids[0], "job.failed").Error; err != nil ||
		!bytes.Contains(failedEvent.Payload, []byte(`"CONTENT_POLICY"`)) {
		t.Errorf("job.failed of the rehearsed CONTENT_POLICY: %s (%v)", failedEvent.Payload, err)
	}
	// Six attempts of PROVIDER_CAPACITY on the live schedule would take 30 s of waits alone.
	if took := time.Since(began); took > 90*time.Second {
		t.Errorf("the rehearsal took %s", took)
	}
	if n := paidCalls.Load(); n != 0 {
		t.Fatalf("the paid provider got %d calls from test-mode jobs", n)
	}

	// The twin's ledger: its daily grant, one completed job consumed, the rest released.
	assertCreditInvariants(t, env.DB, k.AccountID)
	twin, err := models.GetAccount(env.DB, k.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	var cost int64
	env.DB.Model(&models.Job{}).Where("id = ?", ids[2]).Pluck("credit_cost", &cost)
	if twin.CreditBalance != models.TestDailyCredits-cost || twin.CreditsReserved != 0 {
		t.Fatalf("test twin: balance %d reserved %d, want %d and 0", twin.CreditBalance, twin.CreditsReserved, models.TestDailyCredits-cost)
	}
	// The live account is untouched.
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	acc, err := models.GetAccount(env.DB, tenant.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	var liveJobs int64
	env.DB.Model(&models.Job{}).Where("account_id = ?", tenant.AccountID).Count(&liveJobs)
	if acc.CreditBalance != 50 || acc.CreditsReserved != 0 || liveJobs != 0 {
		t.Fatalf("live account: balance %d reserved %d, %d jobs; want 50, 0, none", acc.CreditBalance, acc.CreditsReserved, liveJobs)
	}

	// The external API: a test account key's rehearsed failure and rehearsed retry.
	ek, err := env.App.Engine.Accounts.IssueTestAccountKey(ctx, engine.AccountKeyRequest{AccountID: tenant.AccountID, Name: "e2e",
		Scopes: models.ExternalScopes})
	if err != nil {
		t.Fatal(err)
	}
	ext := externalClient(t, env, testenv.Tenant{ExternalKey: ek.APIKey})
	failed := register(t, ext, "/sceneries/register-ideas", map[string]any{"preferences": "beach", "count": 1,
		"test_outcome": map[string]any{"fail_with": "CONTENT_POLICY"}})
	retried := register(t, ext, "/models/register-ideas", map[string]any{"preferences": "tall", "count": 1,
		"test_outcome": map[string]any{"retryable_failures": 2}})
	if d := waitOrder(t, env, ext, failed.OrderID); d.JobsFailed != 1 || d.Jobs[0].ErrorCategory == nil || *d.Jobs[0].ErrorCategory != "CONTENT_POLICY" {
		t.Fatalf("rehearsed external failure: %+v", d)
	}
	if d := waitOrder(t, env, ext, retried.OrderID); d.JobsCompleted != 1 {
		t.Fatalf("rehearsed external retry: %+v", d)
	}
	var attempts int
	env.DB.Model(&models.Job{}).Where("order_id = ?", retried.OrderID).Pluck("attempt_count", &attempts)
	if attempts != 3 {
		t.Fatalf("rehearsed external retry: %d attempts, want 3", attempts)
	}
	assertCreditInvariants(t, env.DB, ek.AccountID)
	if n := paidCalls.Load(); n != 0 {
		t.Fatalf("the paid provider got %d calls", n)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
