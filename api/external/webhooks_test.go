package external_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// hookURL is a public address (TEST-NET-2) that needs no name lookup.
const hookURL = "https://198.51.100.7/shotflow"

// send sends method path with body (nil: none; a string as is; anything else as JSON) and the
// key, through the contract check; it decodes a JSON answer (nil for an empty one).
func (e *env) send(key, method, path string, body any) (int, map[string]any, http.Header) {
	e.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, external.Base+path, bytes.NewReader(raw))
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Api-Key", key)
	rec := contract.External.ServeAndCheck(e.t, e.router, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			e.t.Fatalf("%s %s: body %q is not JSON", method, path, rec.Body.String())
		}
	}
	return rec.Code, out, rec.Header()
}

// createEndpoint creates an endpoint of the key's account and returns its answer.
func (e *env) createEndpoint(key string, body map[string]any) map[string]any {
	e.t.Helper()
	code, out, _ := e.send(key, http.MethodPost, "/webhook-endpoints", body)
	if code != http.StatusCreated {
		e.t.Fatalf("POST /webhook-endpoints %v: %d %v", body, code, out)
	}
	return out
}

// refusedNaming asserts a 400 whose message names field.
func refusedNaming(t testing.TB, what string, code int, body map[string]any, field string) {
	t.Helper()
	if code != http.StatusBadRequest {
		t.Errorf("%s: %d %v, want 400 naming %s", what, code, body, field)
		return
	}
	if msg := errorOf(t, body); !strings.Contains(msg, field) {
		t.Errorf("%s: %q does not name %s", what, msg, field)
	}
}

// endpointRow reads an endpoint's row.
func (e *env) endpointRow(id string) models.WebhookEndpoint {
	e.t.Helper()
	var ep models.WebhookEndpoint
	if err := e.db.Take(&ep, "id = ?", id).Error; err != nil {
		e.t.Fatal(err)
	}
	return ep
}

// liveEndpoints counts the account's endpoints that are not deleted.
func (e *env) liveEndpoints(accountID string) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Model(&models.WebhookEndpoint{}).Where("account_id = ? AND deleted_at IS NULL", accountID).Count(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		code, created, hdr := e.send(e.key, http.MethodPost, "/webhook-endpoints", map[string]any{"url": hookURL})
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, created)
		}
		id, _ := created["id"].(string)
		secret, _ := created["secret"].(string)
		if !strings.HasPrefix(secret, "whsec_") || len(secret) < 20 {
			t.Errorf("secret = %q, want whsec_…", secret)
		}
		if hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("create Cache-Control = %q, want no-store", hdr.Get("Cache-Control"))
		}
		if got := strs(created["events"]); !slices.Equal(got, webhooks.DefaultExternalEvents) {
			t.Errorf("default events = %v, want %v", got, webhooks.DefaultExternalEvents)
		}
		if created["url"] != hookURL || created["status"] != "enabled" || created["description"] != "" || created["disabled_reason"] != nil {
			t.Errorf("created = %v", created)
		}
		if row := e.endpointRow(id); row.AccountID != e.account || row.InstallationID != nil || row.SecretEnc == "" || strings.Contains(row.SecretEnc, secret) {
			t.Errorf("row = %+v: want the account's, no installation, the secret sealed", row)
		}

		code, got, _ := e.send(e.key, http.MethodGet, "/webhook-endpoints/"+strings.ToUpper(id), nil)
		if code != http.StatusOK || got["id"] != id || got["secret"] != nil {
			t.Fatalf("GET (upper-case id): %d %v, want the endpoint without its secret", code, got)
		}
		code, page, _ := e.send(e.key, http.MethodGet, "/webhook-endpoints", nil)
		list, _ := page["webhook_endpoints"].([]any)
		if code != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["id"] != id || page["next_cursor"] != nil {
			t.Fatalf("list: %d %v", code, page)
		}

		code, got, _ = e.send(e.key, http.MethodPatch, "/webhook-endpoints/"+id, map[string]any{
			"description": "orders", "events": []string{webhooks.EventOrderCompleted, webhooks.EventEndpointDisabled}, "status": "disabled"})
		if code != http.StatusOK || got["description"] != "orders" || got["status"] != "disabled" || got["disabled_reason"] != "manual" ||
			!slices.Equal(strs(got["events"]), []string{webhooks.EventOrderCompleted, webhooks.EventEndpointDisabled}) {
			t.Fatalf("PATCH: %d %v", code, got)
		}
		before := e.endpointRow(id)
		for name, body := range map[string]string{
			"empty":          `{}`,
			"null":           `{"description":null}`,
			"status":         `{"status":"paused"}`,
			"unknown field":  `{"colour":"red"}`,
			"plugin event":   `{"events":["job.completed"]}`,
			"no events":      `{"events":[]}`,
			"private url":    `{"url":"http://10.0.0.5/hook","description":"x"}`,
			"not json":       `{"description":`,
			"wrong type":     `{"description":5}`,
			"url not http":   `{"url":"ftp://198.51.100.7/x"}`,
			"long text":      `{"description":"` + strings.Repeat("d", 501) + `"}`,
			"status and bad": `{"status":"enabled","events":["nope"]}`,
		} {
			field := map[string]string{"null": "description", "status": "status", "unknown field": "colour", "plugin event": "events[0]",
				"no events": "events", "private url": "url", "wrong type": "description", "url not http": "url", "long text": "description",
				"status and bad": "events[0]"}[name]
			code, out, _ := e.send(e.key, http.MethodPatch, "/webhook-endpoints/"+id, body)
			refusedNaming(t, "PATCH "+name, code, out, field)
		}
		if after := e.endpointRow(id); !after.UpdatedAt.Equal(before.UpdatedAt) || after.Description != before.Description || after.Status != before.Status {
			t.Errorf("a refused PATCH changed the endpoint: %+v → %+v", before, after)
		}

		code, rotated, hdr := e.send(e.key, http.MethodPost, "/webhook-endpoints/"+id+"/rotate-secret", nil)
		newSecret, _ := rotated["secret"].(string)
		if code != http.StatusOK || rotated["id"] != id || !strings.HasPrefix(newSecret, "whsec_") || newSecret == secret || hdr.Get("Cache-Control") != "no-store" {
			t.Fatalf("rotate: %d %v", code, rotated)
		}
		until, err := time.Parse(time.RFC3339Nano, rotated["previous_secret_valid_until"].(string))
		if err != nil || until.Before(time.Now().Add(47*time.Hour)) || until.After(time.Now().Add(49*time.Hour)) {
			t.Errorf("previous_secret_valid_until = %v, want 48 hours from now", rotated["previous_secret_valid_until"])
		}

		code, out, _ := e.send(e.key, http.MethodDelete, "/webhook-endpoints/"+id, nil)
		if code != http.StatusNoContent || out != nil {
			t.Fatalf("DELETE: %d %v, want 204 without a body", code, out)
		}
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/webhook-endpoints/" + id}, {http.MethodDelete, "/webhook-endpoints/" + id},
			{http.MethodPost, "/webhook-endpoints/" + id + "/rotate-secret"}, {http.MethodPatch, "/webhook-endpoints/" + id},
		} {
			var body any
			if r.method == http.MethodPatch {
				body = map[string]any{"description": "x"}
			}
			if code, out, _ := e.send(e.key, r.method, r.path, body); code != http.StatusNotFound {
				t.Errorf("%s %s after DELETE: %d %v, want 404", r.method, r.path, code, out)
			} else {
				errorOf(t, out)
			}
		}
		if _, page, _ := e.send(e.key, http.MethodGet, "/webhook-endpoints", nil); len(page["webhook_endpoints"].([]any)) != 0 {
			t.Errorf("a deleted endpoint is listed: %v", page)
		}
	})
}

// Bad input is a 400 naming the field and creates nothing; the 11th endpoint is a 409.
func TestWebhookEndpointCreateRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		for _, c := range []struct{ body, field string }{
			{`{}`, "url"},
			{`{"url":""}`, "url"},
			{`{"url":"not a url"}`, "url"},
			{`{"url":"ftp://198.51.100.7/x"}`, "url"},
			{`{"url":"http://10.1.2.3/hook"}`, "url"},
			{`{"url":"http://localhost:8080/hook"}`, "url"},
			{`{"url":"https://198.51.100.7/` + strings.Repeat("p", 2048) + `"}`, "url"},
			{`{"url":"` + hookURL + `","events":[]}`, "events"},
			{`{"url":"` + hookURL + `","events":["record.done","job.started"]}`, "events[1]"},
			{`{"url":"` + hookURL + `","events":"record.done"}`, "events"},
			{`{"url":"` + hookURL + `","description":"` + strings.Repeat("é", 501) + `"}`, "description"},
			{`{"url":"` + hookURL + `","Description":"x"}`, "Description"},
			{`{"url":"` + hookURL + `","status":"enabled"}`, "status"},
			{`{"url":null}`, "url"},
			{`{"url":"` + hookURL + `","url":"` + hookURL + `"}`, "url"},
		} {
			code, out, _ := e.send(e.key, http.MethodPost, "/webhook-endpoints", c.body)
			refusedNaming(t, c.body[:min(len(c.body), 80)], code, out, c.field)
		}
		if n := e.liveEndpoints(e.account); n != 0 {
			t.Fatalf("refused creates made %d endpoints", n)
		}
		for i := range models.MaxWebhookEndpoints {
			e.createEndpoint(e.key, map[string]any{"url": fmt.Sprintf("%s/%d", hookURL, i), "description": "n", "events": []string{webhooks.EventRecordDone}})
		}
		code, out, _ := e.send(e.key, http.MethodPost, "/webhook-endpoints", map[string]any{"url": hookURL})
		if code != http.StatusConflict {
			t.Fatalf("11th endpoint: %d %v, want 409", code, out)
		}
		errorOf(t, out)
		if n := e.liveEndpoints(e.account); n != models.MaxWebhookEndpoints {
			t.Fatalf("%d endpoints after the refused 11th", n)
		}
		// Another account has its own ten.
		other, otherKey := e.newAccount(external.ScopeWebhooks)
		e.createEndpoint(otherKey, map[string]any{"url": hookURL})
		if n := e.liveEndpoints(other); n != 1 {
			t.Fatalf("the other account has %d endpoints", n)
		}
		// Pages of 4 of the ten, newest first, never repeating one.
		seen := map[string]bool{}
		cursor := ""
		for page := 0; ; page++ {
			q := "/webhook-endpoints?limit=4"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			code, body, _ := e.send(e.key, http.MethodGet, q, nil)
			if code != http.StatusOK {
				t.Fatalf("page %d: %d %v", page, code, body)
			}
			for _, it := range body["webhook_endpoints"].([]any) {
				id := it.(map[string]any)["id"].(string)
				if seen[id] {
					t.Fatalf("page %d repeats %s", page, id)
				}
				seen[id] = true
			}
			next, _ := body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != models.MaxWebhookEndpoints {
			t.Fatalf("the pages listed %d endpoints, want %d", len(seen), models.MaxWebhookEndpoints)
		}
		for _, q := range []string{"limit=0", "limit=201", "limit=ten", "cursor=garbage", "limit=1&limit=2"} {
			field, _, _ := strings.Cut(q, "=")
			code, body, _ := e.send(e.key, http.MethodGet, "/webhook-endpoints?"+q, nil)
			refusedNaming(t, "GET /webhook-endpoints?"+q, code, body, field)
		}
	})
}

// logFixture is an account's endpoint with events and deliveries written as the delivery
// machinery writes them, at fixed times before now.
type logFixture struct {
	endpoint   string
	events     []models.WebhookEvent    // newest first
	deliveries []models.WebhookDelivery // newest first; one per event
	testEvent  models.WebhookEvent
}

// logFixture creates, for the key's account, an endpoint and one event of each type per hour
// back from now, each delivered to the endpoint with a status from statuses in turn.
func (e *env) logFixture(accountID, key string, now time.Time) logFixture {
	e.t.Helper()
	ep := e.createEndpoint(key, map[string]any{"url": hookURL, "events": webhooks.ExternalEvents})
	f := logFixture{endpoint: ep["id"].(string)}
	types := []string{webhooks.EventRecordDone, webhooks.EventOrderCompleted, webhooks.EventRecordFailed, webhooks.EventRecordDone}
	statuses := []string{models.WebhookDelivered, models.WebhookFailed, models.WebhookHeld, models.WebhookFailed}
	for i, typ := range types {
		at := now.Add(-time.Duration(i+1) * time.Hour).UTC().Truncate(time.Millisecond)
		ev := models.WebhookEvent{ID: models.NewID(), AccountID: accountID, Type: typ, CreatedAt: at,
			Payload: models.JSON(fmt.Sprintf(`{"event":%q,"delivery_id":"x","delivery_created_at":%q,"n":%d}`, typ, at.Format(time.RFC3339Nano), i))}
		ev.Payload = models.JSON(strings.Replace(string(ev.Payload), `"x"`, `"`+ev.ID+`"`, 1))
		d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &f.endpoint, AccountID: accountID, Event: typ,
			CallbackURL: hookURL, Status: statuses[i], Run: 1, Attempts: 1, CreatedAt: at, UpdatedAt: at}
		if err := e.db.Create(&ev).Error; err != nil {
			e.t.Fatal(err)
		}
		if err := e.db.Create(&d).Error; err != nil {
			e.t.Fatal(err)
		}
		code := 500
		if err := e.db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: 1, StartedAt: at.Add(time.Second),
			StatusCode: &code, LatencyMS: 42, Error: "HTTP 500", CreatedAt: at}).Error; err != nil {
			e.t.Fatal(err)
		}
		f.events = append(f.events, ev)
		f.deliveries = append(f.deliveries, d)
	}
	testID, testAt := models.NewID(), now.Add(-time.Minute).UTC().Truncate(time.Millisecond)
	f.testEvent = models.WebhookEvent{ID: testID, AccountID: accountID, Type: webhooks.EventWebhookTest, Test: true, CreatedAt: testAt,
		Payload: models.JSON(fmt.Sprintf(`{"event":"webhook.test","delivery_id":%q,"delivery_created_at":%q,"test":true}`, testID, testAt.Format(time.RFC3339Nano)))}
	if err := e.db.Create(&f.testEvent).Error; err != nil {
		e.t.Fatal(err)
	}
	return f
}

func pageIDs(t testing.TB, page map[string]any, list string) []string {
	t.Helper()
	var out []string
	items, ok := page[list].([]any)
	if !ok {
		t.Fatalf("%s is not a list: %v", list, page)
	}
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestWebhookDeliveriesAndEvents(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		now := time.Now()
		f := e.logFixture(e.account, e.key, now)
		other, otherKey := e.newAccount(external.ScopeWebhooks)
		foreign := e.logFixture(other, otherKey, now)
		eventIDs := func(evs []models.WebhookEvent) []string {
			var out []string
			for _, ev := range evs {
				out = append(out, ev.ID)
			}
			return out
		}
		deliveryIDs := func(ds ...models.WebhookDelivery) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.ID)
			}
			return out
		}

		// Events: newest first, the account's only, test sends not listed.
		code, page, _ := e.send(e.key, http.MethodGet, "/events", nil)
		if got := pageIDs(t, page, "events"); code != http.StatusOK || !slices.Equal(got, eventIDs(f.events)) || page["next_cursor"] != nil {
			t.Fatalf("GET /events: %d %v, want %v", code, got, eventIDs(f.events))
		}
		code, page, _ = e.send(e.key, http.MethodGet, "/events?type=record.done", nil)
		if got := pageIDs(t, page, "events"); code != http.StatusOK || !slices.Equal(got, []string{f.events[0].ID, f.events[3].ID}) {
			t.Errorf("GET /events?type=record.done: %d %v", code, got)
		}
		window := "created_after=" + url.QueryEscape(f.events[2].CreatedAt.Format(time.RFC3339Nano)) +
			"&created_before=" + url.QueryEscape(f.events[0].CreatedAt.Format(time.RFC3339Nano))
		code, page, _ = e.send(e.key, http.MethodGet, "/events?"+window, nil)
		if got := pageIDs(t, page, "events"); code != http.StatusOK || !slices.Equal(got, []string{f.events[1].ID, f.events[2].ID}) {
			t.Errorf("GET /events?%s: %d %v, want the 2nd and 3rd", window, code, got)
		}
		code, page, _ = e.send(e.key, http.MethodGet, "/events?limit=3", nil)
		next, _ := page["next_cursor"].(string)
		if got := pageIDs(t, page, "events"); code != http.StatusOK || !slices.Equal(got, eventIDs(f.events[:3])) || next == "" {
			t.Fatalf("GET /events?limit=3: %d %v %v", code, got, page["next_cursor"])
		}
		code, page, _ = e.send(e.key, http.MethodGet, "/events?limit=3&cursor="+url.QueryEscape(next), nil)
		if got := pageIDs(t, page, "events"); code != http.StatusOK || !slices.Equal(got, eventIDs(f.events[3:])) || page["next_cursor"] != nil {
			t.Fatalf("GET /events page 2: %d %v %v", code, got, page["next_cursor"])
		}
		code, ev, _ := e.send(e.key, http.MethodGet, "/events/"+f.events[1].ID, nil)
		data, _ := ev["data"].(map[string]any)
		if code != http.StatusOK || ev["type"] != webhooks.EventOrderCompleted || data["delivery_id"] != f.events[1].ID || data["n"] != float64(1) {
			t.Errorf("GET /events/{id}: %d %v", code, ev)
		}
		if code, ev, _ := e.send(e.key, http.MethodGet, "/events/"+f.testEvent.ID, nil); code != http.StatusOK || ev["type"] != webhooks.EventWebhookTest {
			t.Errorf("GET /events/{test event}: %d %v, want 200", code, ev)
		}

		// Deliveries: newest first, filtered, each with its attempts.
		code, page, _ = e.send(e.key, http.MethodGet, "/webhook-deliveries", nil)
		if got := pageIDs(t, page, "webhook_deliveries"); code != http.StatusOK || !slices.Equal(got, deliveryIDs(f.deliveries...)) {
			t.Fatalf("GET /webhook-deliveries: %d %v", code, got)
		}
		for q, want := range map[string][]string{
			"status=failed":                   deliveryIDs(f.deliveries[1], f.deliveries[3]),
			"status=held":                     deliveryIDs(f.deliveries[2]),
			"event=record.done":               deliveryIDs(f.deliveries[0], f.deliveries[3]),
			"event_id=" + f.events[2].ID:      deliveryIDs(f.deliveries[2]),
			"endpoint_id=" + f.endpoint:       deliveryIDs(f.deliveries...),
			"endpoint_id=" + foreign.endpoint: nil,
			"status=failed&event=record.done": deliveryIDs(f.deliveries[3]),
			"limit=1":                         deliveryIDs(f.deliveries[0]),
		} {
			code, page, _ := e.send(e.key, http.MethodGet, "/webhook-deliveries?"+q, nil)
			if got := pageIDs(t, page, "webhook_deliveries"); code != http.StatusOK || !slices.Equal(got, want) {
				t.Errorf("GET /webhook-deliveries?%s: %d %v, want %v", q, code, got, want)
			}
		}
		code, d, _ := e.send(e.key, http.MethodGet, "/webhook-deliveries/"+f.deliveries[1].ID, nil)
		attempts, _ := d["attempts"].([]any)
		if code != http.StatusOK || d["event_id"] != f.events[1].ID || d["endpoint_id"] != f.endpoint || d["status"] != "failed" || len(attempts) != 1 ||
			d["attempt_count"] != float64(1) ||
			attempts[0].(map[string]any)["status_code"] != float64(500) || attempts[0].(map[string]any)["duration_ms"] != float64(42) {
			t.Errorf("GET /webhook-deliveries/{id}: %d %v", code, d)
		}

		// Another account's delivery and event are 404, as a missing one is.
		_, missing, _ := e.send(e.key, http.MethodGet, "/events/"+models.NewID(), nil)
		for _, path := range []string{"/events/" + foreign.events[0].ID, "/events/" + foreign.testEvent.ID,
			"/webhook-deliveries/" + foreign.deliveries[0].ID, "/webhook-deliveries/" + models.NewID()} {
			code, out, _ := e.send(e.key, http.MethodGet, path, nil)
			if code != http.StatusNotFound {
				t.Errorf("GET %s: %d %v, want 404", path, code, out)
			} else if strings.HasPrefix(path, "/events/") && out["error"] != missing["error"] {
				t.Errorf("GET %s: %v tells another account's event from a missing one (%v)", path, out, missing)
			}
		}

		// Bad query parameters: 400 naming them.
		for _, c := range []struct{ path, field string }{
			{"/events?type=job.completed", "type"},
			{"/events?limit=0", "limit"},
			{"/events?limit=201", "limit"},
			{"/events?cursor=not-a-cursor", "cursor"},
			{"/events?created_after=yesterday", "created_after"},
			{"/events?created_before=2026-13-01T00:00:00Z", "created_before"},
			{"/events?created_before=9999-12-31T23:00:00-01:00", "created_before"},
			{"/events?created_after=2026-11-02T00:00:00Z&created_before=2026-11-01T00:00:00Z", "created_after"},
			{"/events?type=record.done&type=record.failed", "type"},
			{"/webhook-deliveries?status=lost", "status"},
			{"/webhook-deliveries?event=job.failed", "event"},
			{"/webhook-deliveries?endpoint_id=7", "endpoint_id"},
			{"/webhook-deliveries?event_id=x", "event_id"},
			{"/webhook-deliveries?limit=-1", "limit"},
			{"/webhook-deliveries?cursor=" + url.QueryEscape(strings.Repeat("c", 600)), "cursor"},
			{"/webhook-deliveries/not-a-uuid", "id"},
			{"/events/not-a-uuid", "id"},
		} {
			code, out, _ := e.send(e.key, http.MethodGet, c.path, nil)
			refusedNaming(t, "GET "+c.path, code, out, c.field)
		}
	})
}

func TestWebhookTestSendAndRecover(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		now := time.Now()
		f := e.logFixture(e.account, e.key, now)
		ep := "/webhook-endpoints/" + f.endpoint

		code, sent, _ := e.send(e.key, http.MethodPost, ep+"/test", nil)
		if code != http.StatusAccepted {
			t.Fatalf("POST /test without a body: %d %v", code, sent)
		}
		code, d, _ := e.send(e.key, http.MethodGet, "/webhook-deliveries/"+sent["delivery_id"].(string), nil)
		if code != http.StatusOK || d["event_id"] != sent["event_id"] || d["endpoint_id"] != f.endpoint || d["event"] != webhooks.EventWebhookTest {
			t.Errorf("the test delivery: %d %v", code, d)
		}
		code, ev, _ := e.send(e.key, http.MethodGet, "/events/"+sent["event_id"].(string), nil)
		if data, _ := ev["data"].(map[string]any); code != http.StatusOK || ev["type"] != webhooks.EventWebhookTest || data["test"] != true {
			t.Errorf("the test event: %d %v", code, ev)
		}
		code, sent2, _ := e.send(e.key, http.MethodPost, ep+"/test", map[string]any{"event": webhooks.EventRecordDone})
		if code != http.StatusAccepted || sent2["event_id"] == sent["event_id"] {
			t.Fatalf("POST /test record.done: %d %v", code, sent2)
		}
		if _, ev, _ := e.send(e.key, http.MethodGet, "/events/"+sent2["event_id"].(string), nil); ev["type"] != webhooks.EventRecordDone {
			t.Errorf("the record.done test event: %v", ev)
		}
		if _, page, _ := e.send(e.key, http.MethodGet, "/events", nil); slices.Contains(pageIDs(t, page, "events"), sent["event_id"].(string)) {
			t.Errorf("a test event is listed: %v", page)
		}
		for _, c := range []struct{ body, field string }{
			{`{"event":"job.completed"}`, "event"},
			{`{"event":null}`, "event"},
			{`{"event":""}`, "event"},
			{`{"event":1}`, "event"},
			{`{"kind":"record.done"}`, "kind"},
		} {
			code, out, _ := e.send(e.key, http.MethodPost, ep+"/test", c.body)
			refusedNaming(t, "POST /test "+c.body, code, out, c.field)
		}

		// Recover: the failed and held deliveries of the window.
		since := now.Add(-3*time.Hour - 30*time.Minute).UTC().Format(time.RFC3339)
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{}, "since"},
			{map[string]any{"since": "last week"}, "since"},
			{map[string]any{"since": now.Add(-15 * 24 * time.Hour).UTC().Format(time.RFC3339)}, "since"},
			{map[string]any{"since": since, "until": "soon"}, "until"},
			{map[string]any{"since": since, "until": now.Add(-4 * time.Hour).UTC().Format(time.RFC3339)}, "until"},
			{map[string]any{"since": since, "from": since}, "from"},
		} {
			code, out, _ := e.send(e.key, http.MethodPost, ep+"/recover", c.body)
			refusedNaming(t, fmt.Sprintf("POST /recover %v", c.body), code, out, c.field)
		}
		code, rec, _ := e.send(e.key, http.MethodPost, ep+"/recover", map[string]any{"since": since})
		if code != http.StatusAccepted || rec["deliveries_queued"] != float64(2) { // the 2nd and 3rd: failed and held
			t.Fatalf("POST /recover: %d %v, want 202 with 2 queued", code, rec)
		}

		// A disabled endpoint neither tests nor recovers.
		if code, out, _ := e.send(e.key, http.MethodPatch, ep, map[string]any{"status": "disabled"}); code != http.StatusOK {
			t.Fatalf("disable: %d %v", code, out)
		}
		for _, r := range []struct {
			path string
			body any
		}{{ep + "/test", nil}, {ep + "/recover", map[string]any{"since": since}}} {
			code, out, _ := e.send(e.key, http.MethodPost, r.path, r.body)
			if code != http.StatusConflict {
				t.Errorf("POST %s on a disabled endpoint: %d %v, want 409", r.path, code, out)
			} else {
				errorOf(t, out)
			}
		}
	})
}

// Another account's endpoint is 404 on every route, as a missing one is, and nothing of it
// changes.
func TestWebhookEndpointsOfAnotherAccount(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		_, otherKey := e.newAccount(external.ScopeWebhooks)
		foreign := e.createEndpoint(otherKey, map[string]any{"url": hookURL})["id"].(string)
		mine := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
		before := e.endpointRow(foreign)
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		for _, id := range []string{foreign, models.NewID()} {
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{http.MethodGet, "", nil},
				{http.MethodPatch, "", map[string]any{"status": "disabled", "description": "mine now"}},
				{http.MethodDelete, "", nil},
				{http.MethodPost, "/rotate-secret", nil},
				{http.MethodPost, "/test", nil},
				{http.MethodPost, "/recover", map[string]any{"since": since}},
			} {
				code, out, _ := e.send(e.key, r.method, "/webhook-endpoints/"+id+r.path, r.body)
				if code != http.StatusNotFound {
					t.Errorf("%s %s of another account: %d %v, want 404", r.method, r.path, code, out)
				} else {
					errorOf(t, out)
				}
			}
		}
		after := e.endpointRow(foreign)
		if after.Status != before.Status || after.Description != before.Description || after.SecretEnc != before.SecretEnc || after.DeletedAt != nil {
			t.Errorf("another account's endpoint changed: %+v → %+v", before, after)
		}
		if _, page, _ := e.send(e.key, http.MethodGet, "/webhook-endpoints", nil); !slices.Equal(pageIDs(t, page, "webhook_endpoints"), []string{mine}) {
			t.Errorf("the list shows %v, want only %s", page, mine)
		}
		if code, page, _ := e.send(e.key, http.MethodGet, "/webhook-deliveries?endpoint_id="+foreign, nil); code != http.StatusOK || len(pageIDs(t, page, "webhook_deliveries")) != 0 {
			t.Errorf("deliveries of another account's endpoint: %d %v", code, page)
		}
	})
}

// Every webhook route needs content.webhooks: without it, 403 naming the scope and nothing
// created; new keys get it by default.
func TestWebhookRoutesNeedTheirScope(t *testing.T) {
	t.Parallel()
	if !slices.Contains(models.ExternalScopes, external.ScopeWebhooks) {
		t.Errorf("new keys' scopes %v lack %s", models.ExternalScopes, external.ScopeWebhooks)
	}
	for _, s := range []string{external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks} {
		if !slices.Contains(models.ExternalScopeNames, s) {
			t.Errorf("models.ExternalScopeNames %v lack %s", models.ExternalScopeNames, s)
		}
	}
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 0)
	account, key := e.newAccount(external.ScopeRegister, external.ScopeRead)
	_, webhooksOnly := e.newAccount(external.ScopeWebhooks)
	id := models.NewID()
	routes := 0
	for _, r := range e.router.Routes() {
		path := strings.TrimPrefix(r.Path, external.Base)
		if !strings.HasPrefix(path, "/webhook-") && !strings.HasPrefix(path, "/events") {
			continue
		}
		routes++
		var body any
		switch {
		case r.Method == http.MethodPost && path == "/webhook-endpoints":
			body = map[string]any{"url": hookURL}
		case strings.HasSuffix(path, "/recover"):
			body = map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
		case r.Method == http.MethodPatch:
			body = map[string]any{"status": "disabled"}
		}
		path = strings.ReplaceAll(path, ":id", id)
		code, out, _ := e.send(key, r.Method, path, body)
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, out), external.ScopeWebhooks) {
			t.Errorf("%s %s without %s: %d %v, want 403 naming it", r.Method, path, external.ScopeWebhooks, code, out)
		}
	}
	if routes != 13 {
		t.Fatalf("%d webhook routes, want 13", routes)
	}
	if n := e.liveEndpoints(account); n != 0 {
		t.Fatalf("a refused request created %d endpoints", n)
	}
	// content.webhooks alone is enough for the webhook routes, and for nothing else.
	if code, out, _ := e.send(webhooksOnly, http.MethodGet, "/webhook-endpoints", nil); code != http.StatusOK {
		t.Errorf("GET /webhook-endpoints with content.webhooks: %d %v", code, out)
	}
	if code, out, _ := e.send(webhooksOnly, http.MethodGet, "/orders", nil); code != http.StatusForbidden {
		t.Errorf("GET /orders with content.webhooks alone: %d %v, want 403", code, out)
	}
}
