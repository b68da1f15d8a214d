package contract_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

const (
	meJSON = `{"installation_id":"d6a0409c-e7ef-4d36-9e2a-a53ecc4de3d2","installation_name":"shop","account_id":"b5253136-f7c0-49a7-adbc-90ad8bf819a5",` +
		`"plan":"standard","credits":{"available":10,"reserved":0},"request_limit":{"per_minute":60},` +
		`"scopes":["plugin.jobs:read"],"permissions":["plugin.jobs:read"],"sub_processors":[],"livemode":true}`
	notFoundJSON = `{"error":{"code":"not_found","message_i18n":{"en":"No such route."},"retryable":false,"doc_url":"https://docs.example/plugin-api/errors/not_found"}}`
)

func jsonHeader(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"req-1"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

func request(t *testing.T, method, target, body string, headers ...string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// TestValidateCatchesDrift feeds exchanges that match the document and ones that do not: the
// checker must accept the first and name what is wrong in the others.
func TestValidateCatchesDrift(t *testing.T) {
	t.Parallel()
	key := []string{"X-Api-Key", "pk_live_x.y"}
	cases := []struct {
		name    string
		req     *http.Request
		status  int
		header  http.Header
		body    string
		wantErr string // "" when the exchange matches
	}{
		{"a documented answer", request(t, "GET", "/api/v1/plugin/me", "", key...), 200, jsonHeader(), meJSON, ""},
		{"an undocumented field", request(t, "GET", "/api/v1/plugin/me", "", key...), 200, jsonHeader(),
			strings.Replace(meJSON, `"plan"`, `"tier":"gold","plan"`, 1), "tier"},
		{"a missing field", request(t, "GET", "/api/v1/plugin/me", "", key...), 200, jsonHeader(),
			strings.Replace(meJSON, `"plan":"standard",`, "", 1), "plan"},
		{"an undocumented status", request(t, "GET", "/api/v1/plugin/me", "", key...), 418, jsonHeader(), notFoundJSON,
			"status 418 is not documented"},
		{"a missing required header", request(t, "GET", "/api/v1/plugin/me", "", key...), 200,
			http.Header{"Content-Type": {"application/json"}}, meJSON, "X-Request-Id"},
		{"an error code that does not fit the status", request(t, "GET", "/api/v1/plugin/jobs/x", "", key...), 404, jsonHeader(),
			strings.Replace(notFoundJSON, `"not_found"`, `"forbidden"`, 1), "/error/code"},
		{"a wrong Cache-Control", request(t, "GET", "/api/v1/plugin/ai-models", "", key...), 200,
			jsonHeader("Cache-Control", "no-store", "Vary", "X-Api-Key"), `{"ai_models":[]}`, "Cache-Control"},
		{"an invalid request the service refuses", request(t, "GET", "/api/v1/plugin/me", ""), 401, jsonHeader(),
			strings.NewReplacer(`"not_found"`, `"unauthorized"`).Replace(notFoundJSON), ""},
		{"an invalid request the service accepts", request(t, "GET", "/api/v1/plugin/me", ""), 200, jsonHeader(), meJSON,
			"X-Api-Key is missing"},
		{"an invalid body the service accepts", request(t, "POST", "/api/v1/plugin/jobs", `{"subjects":[]}`, key...), 201, jsonHeader(),
			`{"order_id":"b5253136-f7c0-49a7-adbc-90ad8bf819a5","status":"in_progress","subjects":[],"credits_reserved":0}`, "session_config"},
		{"an unknown route answered 404", request(t, "GET", "/api/v1/plugin/nope", "", key...), 404, jsonHeader(), notFoundJSON, ""},
		{"an unknown route answered 200", request(t, "GET", "/api/v1/plugin/nope", "", key...), 200, jsonHeader(), `{}`,
			"no path of the document matches it"},
		{"an unknown method answered 405", request(t, "PATCH", "/api/v1/plugin/me", "", key...), 405, jsonHeader(),
			strings.Replace(notFoundJSON, `"not_found"`, `"method_not_allowed"`, 1), ""},
		{"a body where the document has none", request(t, "DELETE", "/api/v1/plugin/products/p1", "", key...), 204, jsonHeader(), `{}`,
			"documents no body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sent []byte
			if c.req.Body != nil {
				sent, _ = io.ReadAll(c.req.Body)
			}
			err := contract.Validate(c.req, sent, c.status, c.header, []byte(c.body))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected contract failure: %v", err)
			case c.wantErr != "" && err == nil:
				t.Fatalf("the checker accepted it; want an error naming %q", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error does not name %q: %v", c.wantErr, err)
			}
		})
	}
}

// TestWebhookPayloadsMatchDocument sends real webhooks (internal/webhooks builds, signs and posts
// them) to a receiver and validates what it gets against the document's webhooks.
func TestWebhookPayloadsMatchDocument(t *testing.T) {
	t.Parallel()
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	client := webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true})
	signer := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "http://example.test")

	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	input := models.NewID()
	category, hint := "CONTENT_POLICY", "The provider refused the content."
	base := models.Job{ID: models.NewID(), OrderID: models.NewID(), JobType: jobtype.PhotoShoot, ProductRef: "mug-01",
		ProductLabel: "Red mug", InputAssetID: &input, AIModel: "local/studio-v1", AspectRatio: "4:5", CreditCost: 1,
		AttemptCount: 1, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	completed, failed, expired, cancelled := base, base, base, base
	completed.Status, completed.CompletedAt = status.JobCompleted, &now
	failed.Status, failed.ErrorCategory, failed.ErrorHint, failed.CompletedAt = status.JobFailed, &category, &hint, &now
	expired.Status, expired.StartedAt, expired.AttemptCount = status.JobExpired, nil, 0
	cancelled.Status, cancelled.StartedAt, cancelled.AttemptCount = status.JobCancelled, nil, 0
	outputs := []models.Asset{{ID: models.NewID(), Kind: models.AssetKindOutput, Status: status.AssetReady,
		ContentType: "image/png", Width: 820, Height: 1024, SizeBytes: 1234}}

	for _, job := range []models.Job{completed, failed, expired, cancelled} {
		t.Run(job.Status, func(t *testing.T) {
			event, ok := webhooks.EventForStatus(job.Status)
			if !ok {
				t.Fatalf("no event for %s", job.Status)
			}
			body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: event, CreatedAt: now,
				Job: &job, Outputs: outputs, Signer: signer, DownloadTTL: 168 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			out := client.Send(context.Background(), webhooks.Message{URL: srv.URL, ID: models.NewID(), Timestamp: time.Now(),
				Secrets: []string{webhooks.NewSecret(), webhooks.NewSecret()}, Body: body})
			if !out.Delivered() {
				t.Fatalf("not delivered: %+v", out)
			}
			g := <-received
			if err := contract.ValidateWebhook(g.header, g.body); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A payload whose status does not fit its event is refused.
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobCompleted,
		CreatedAt: now, Job: &cancelled, Signer: signer, DownloadTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {webhooks.UserAgent}, "Webhook-Id": {models.NewID()},
		"Webhook-Timestamp": {"1780000000"}, "Webhook-Signature": {"v1,abc="}, "X-Service-Signature": {"v1,abc="}}
	if err := contract.ValidateWebhook(header, body); err == nil || !strings.Contains(err.Error(), "status") {
		t.Fatalf("a job.completed event for a cancelled job passed: %v", err)
	}
	checkWebhookShapeIsClosed(t, header, signer, &cancelled, now)
}

// checkWebhookShapeIsClosed: the webhook schema is closed and requires the notification's
// fields, so a payload with an undocumented field, without its delivery ID, or in the earlier
// shape (the job under "data") does not pass.
func checkWebhookShapeIsClosed(t *testing.T, header http.Header, signer *urlsign.Signer, job *models.Job, now time.Time) {
	t.Helper()
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobCancelled,
		CreatedAt: now, Job: job, Signer: signer, DownloadTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.ValidateWebhook(header, body); err != nil {
		t.Fatalf("the valid payload does not pass: %v", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	variants := map[string]func() map[string]any{
		"an undocumented field": func() map[string]any { return with(fields, "surprise", true) },
		"no delivery_id":        func() map[string]any { return without(fields, "delivery_id") },
		"the earlier shape": func() map[string]any {
			return map[string]any{"event": fields["event"], "id": fields["delivery_id"], "type": fields["event"],
				"created_at": fields["delivery_created_at"], "data": without(fields, "event", "delivery_id", "delivery_created_at")}
		},
	}
	for name, variant := range variants {
		b, err := json.Marshal(variant())
		if err != nil {
			t.Fatal(err)
		}
		if err := contract.ValidateWebhook(header, b); err == nil {
			t.Errorf("a payload with %s passed: %s", name, b)
		}
	}
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := without(m)
	out[k] = v
	return out
}

// without returns a copy of m without the keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
