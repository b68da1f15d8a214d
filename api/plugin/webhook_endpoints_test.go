package plugin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

const hookURL = "https://93.184.216.34/hook" // a public address: no DNS lookup, not refused

var endpointKeys = []string{"created_at", "description", "disabled_at", "disabled_reason", "events", "failing_since", "id", "livemode", "status", "updated_at", "url"}

// createEndpoint creates an endpoint of key's installation and returns its answer.
func (e *env) createEndpoint(key string, body any) map[string]any {
	e.t.Helper()
	rec := e.do(http.MethodPost, p("/webhook-endpoints"), key, body)
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	return decode(e.t, rec)
}

// loggedEvent stores an event of inst and its delivery to endpointID with one failed attempt.
func (e *env) loggedEvent(inst *models.Installation, endpointID, typ string, at time.Time, test bool) (models.WebhookEvent, models.WebhookDelivery) {
	e.t.Helper()
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, Type: typ,
		Payload: models.JSON(`{"event":"` + typ + `","delivery_id":"x"}`), Test: test, CreatedAt: at}
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &endpointID, AccountID: inst.AccountID,
		InstallationID: &inst.ID, Run: 1, Event: typ, CallbackURL: hookURL, Status: models.WebhookDelivering,
		Attempts: 1, NextAttemptAt: &at, CreatedAt: at, UpdatedAt: at}
	require.NoError(e.t, e.db.Create(&ev).Error)
	_, err := models.CreateWebhookDelivery(e.db, &d) // in its account's mode, as RecordEvents stores it
	require.NoError(e.t, err)
	code := 502
	require.NoError(e.t, e.db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: 1, StartedAt: at,
		StatusCode: &code, LatencyMS: 17, Error: "HTTP 502", CreatedAt: at}).Error)
	return ev, d
}

func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := e.createEndpoint(e.key, map[string]any{"url": hookURL, "description": "ERP"})
	assert.Equal(t, endpointKeys, keysOf(created))
	assert.Equal(t, hookURL, created["url"])
	assert.Equal(t, []any{"job.completed", "job.failed", "job.cancelled"}, created["events"])
	assert.Equal(t, "ERP", created["description"])
	assert.Equal(t, "enabled", created["status"])
	assert.Nil(t, created["disabled_reason"])
	id := created["id"].(string)

	rec := e.do(http.MethodGet, p("/webhook-endpoints/"+id), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, created, decode(t, rec))

	rec = e.do(http.MethodPatch, p("/webhook-endpoints/"+id), e.key, map[string]any{"status": "disabled", "events": []string{"job.started", "order.completed"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	patched := decode(t, rec)
	assert.Equal(t, "disabled", patched["status"])
	assert.Equal(t, "manual", patched["disabled_reason"])
	assert.NotNil(t, patched["disabled_at"])
	assert.Equal(t, []any{"job.started", "order.completed"}, patched["events"])
	assert.Equal(t, "ERP", patched["description"], "a PATCH keeps what it does not name")

	rec = e.do(http.MethodPatch, p("/webhook-endpoints/"+id), e.key, map[string]any{"status": "enabled", "description": ""})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	patched = decode(t, rec)
	assert.Equal(t, "enabled", patched["status"])
	assert.Nil(t, patched["disabled_reason"])
	assert.Nil(t, patched["disabled_at"])
	assert.Equal(t, "", patched["description"])

	rec = e.do(http.MethodGet, p("/webhook-endpoints"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	page := decode(t, rec)
	assert.Equal(t, []string{"next_cursor", "webhook_endpoints"}, keysOf(page))
	assert.Nil(t, page["next_cursor"])
	require.Len(t, page["webhook_endpoints"], 1)
	assert.Equal(t, patched, page["webhook_endpoints"].([]any)[0])

	rec = e.do(http.MethodDelete, p("/webhook-endpoints/"+id), e.key, nil)
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	assert.Empty(t, rec.Body.String())
	e.requireError(e.do(http.MethodGet, p("/webhook-endpoints/"+id), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	e.requireError(e.do(http.MethodDelete, p("/webhook-endpoints/"+id), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	rec = e.do(http.MethodGet, p("/webhook-endpoints"), e.key, nil)
	assert.Empty(t, decode(t, rec)["webhook_endpoints"])
}

func TestWebhookEndpointRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.createEndpoint(e.key, map[string]any{"url": hookURL})
	id := ep["id"].(string)
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "url"},
		{map[string]any{"url": "ftp://93.184.216.34/x"}, "url"},
		{map[string]any{"url": "http://10.1.2.3/hook"}, "url"},
		{map[string]any{"url": "http://localhost:9000/hook"}, "url"},
		{map[string]any{"url": "https://93.184.216.34/" + strings.Repeat("a", 2048)}, "url"},
		{map[string]any{"url": hookURL, "events": []string{}}, "events"},
		{map[string]any{"url": hookURL, "events": []string{"job.completed", "record.done"}}, "events[1]"},
		{map[string]any{"url": hookURL, "description": strings.Repeat("d", 501)}, "description"},
		{map[string]any{"url": hookURL, "status": "enabled"}, "status"}, // not a field of the create request
		{map[string]any{"url": hookURL, "secret": "whsec_x"}, "secret"},
		{`{"url": 12}`, "url"},
	} {
		msg := e.requireError(e.do(http.MethodPost, p("/webhook-endpoints"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.True(t, strings.HasPrefix(msg, c.field), "%v: %q does not name %s", c.body, msg, c.field)
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"status": "paused"}, "status"},
		{map[string]any{"events": []string{"job.exploded"}}, "events[0]"},
		{map[string]any{"url": ""}, "url"},
		{map[string]any{"url": hookURL, "id": id}, "id"},
	} {
		msg := e.requireError(e.do(http.MethodPatch, p("/webhook-endpoints/"+id), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.True(t, strings.HasPrefix(msg, c.field), "%v: %q does not name %s", c.body, msg, c.field)
	}
	msg := e.requireError(e.do(http.MethodPatch, p("/webhook-endpoints/"+id), e.key, map[string]any{}), http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "at least one")
	// Nothing refused was created or changed.
	assert.Equal(t, int64(1), e.count(&models.WebhookEndpoint{}, "installation_id = ?", e.inst.ID))
	rec := e.do(http.MethodGet, p("/webhook-endpoints/"+id), e.key, nil)
	assert.Equal(t, ep, decode(t, rec))

	for _, query := range []string{"limit=0", "limit=201", "limit=ten", "cursor=", "cursor=bogus", "limit=5&limit=6"} {
		msg := e.requireError(e.do(http.MethodGet, p("/webhook-endpoints?"+query), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		name, _, _ := strings.Cut(query, "=")
		assert.True(t, strings.HasPrefix(msg, name), "%s: %q", query, msg)
	}
	for _, query := range []string{"status=lost", "event=record.done", "event_id=12", "endpoint_id=x", "created_after=yesterday",
		"created_before=2026-01-01", "created_after=2026-02-01T00:00:00Z&created_before=2026-01-01T00:00:00Z", "event="} {
		msg := e.requireError(e.do(http.MethodGet, p("/webhook-deliveries?"+query), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		name, _, _ := strings.Cut(query, "=")
		assert.True(t, strings.HasPrefix(msg, name), "%s: %q", query, msg)
	}
	for _, query := range []string{"type=nope", "type=record.failed", "created_after=now", "type=job.failed&type=job.completed"} {
		msg := e.requireError(e.do(http.MethodGet, p("/events?"+query), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		name, _, _ := strings.Cut(query, "=")
		assert.True(t, strings.HasPrefix(msg, name), "%s: %q", query, msg)
	}
}

func TestWebhookEndpointLimitAndIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"url": hookURL, "events": []string{"job.completed", "job.completed"}}
	first := e.do(http.MethodPost, p("/webhook-endpoints"), e.key, body, plugin.HeaderIdempotencyKey, "ep-1")
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	assert.Equal(t, []any{"job.completed"}, decode(t, first)["events"])
	again := e.do(http.MethodPost, p("/webhook-endpoints"), e.key, body, plugin.HeaderIdempotencyKey, "ep-1")
	require.Equal(t, http.StatusCreated, again.Code, again.Body.String())
	assert.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, int64(1), e.count(&models.WebhookEndpoint{}, "installation_id = ?", e.inst.ID))

	for range models.MaxWebhookEndpoints - 1 {
		e.clock.Advance(time.Second)
		e.createEndpoint(e.key, map[string]any{"url": hookURL})
	}
	e.clock.Advance(time.Minute)
	msg := e.requireError(e.do(http.MethodPost, p("/webhook-endpoints"), e.key, map[string]any{"url": hookURL}), http.StatusConflict, plugin.CodeConflict)
	assert.Contains(t, msg, "10")
	assert.Equal(t, int64(models.MaxWebhookEndpoints), e.count(&models.WebhookEndpoint{}, "installation_id = ?", e.inst.ID))

	// Pages of 4, 4 and 2, newest first, with next_cursor between them.
	var ids []string
	next := ""
	for pages := 0; pages < 3; pages++ {
		target := p("/webhook-endpoints?limit=4")
		if next != "" {
			target += "&cursor=" + url.QueryEscape(next)
		}
		rec := e.do(http.MethodGet, target, e.key, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		page := decode(t, rec)
		for _, ep := range page["webhook_endpoints"].([]any) {
			ids = append(ids, ep.(map[string]any)["id"].(string))
		}
		if pages < 2 {
			require.IsType(t, "", page["next_cursor"])
			next = page["next_cursor"].(string)
		} else {
			assert.Nil(t, page["next_cursor"])
		}
	}
	assert.Len(t, ids, models.MaxWebhookEndpoints)
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "endpoint %s on two pages", id)
		seen[id] = true
	}
}

func TestWebhookRoutesAcrossInstallations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, otherKey := e.otherInstallation()
	sibling, siblingKey := e.addInstallation(e.account.ID, 0)
	mine := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	theirs := e.createEndpoint(siblingKey, map[string]any{"url": hookURL})["id"].(string)
	now := time.Now().UTC().Truncate(time.Millisecond)
	myEvent, myDelivery := e.loggedEvent(e.inst, mine, "job.completed", now, false)
	theirEvent, theirDelivery := e.loggedEvent(sibling, theirs, "job.completed", now, false)

	for _, key := range []string{otherKey, siblingKey} {
		e.requireError(e.do(http.MethodGet, p("/webhook-endpoints/"+mine), key, nil), http.StatusNotFound, plugin.CodeNotFound)
		e.requireError(e.do(http.MethodPatch, p("/webhook-endpoints/"+mine), key, map[string]any{"status": "disabled"}), http.StatusNotFound, plugin.CodeNotFound)
		e.requireError(e.do(http.MethodDelete, p("/webhook-endpoints/"+mine), key, nil), http.StatusNotFound, plugin.CodeNotFound)
		e.requireError(e.do(http.MethodGet, p("/webhook-deliveries/"+myDelivery.ID), key, nil), http.StatusNotFound, plugin.CodeNotFound)
		e.requireError(e.do(http.MethodGet, p("/events/"+myEvent.ID), key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	for _, target := range []string{"/webhook-endpoints/" + theirs, "/webhook-deliveries/" + theirDelivery.ID, "/events/" + theirEvent.ID,
		"/webhook-endpoints/not-an-id", "/events/" + models.NewID()} {
		e.requireError(e.do(http.MethodGet, p(target), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	// Nothing of the endpoint changed, and the lists show only the caller's own.
	rec := e.do(http.MethodGet, p("/webhook-endpoints/"+mine), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "enabled", decode(t, rec)["status"])
	rec = e.do(http.MethodGet, p("/webhook-deliveries"), siblingKey, nil)
	deliveries := decode(t, rec)["webhook_deliveries"].([]any)
	require.Len(t, deliveries, 1)
	assert.Equal(t, theirDelivery.ID, deliveries[0].(map[string]any)["id"])
	rec = e.do(http.MethodGet, p("/events"), otherKey, nil)
	assert.Empty(t, decode(t, rec)["events"])
}

func TestWebhookDeliveryLogAndEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	b := e.createEndpoint(e.key, map[string]any{"url": hookURL, "events": []string{"job.failed"}})["id"].(string)
	base := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	e1, d1 := e.loggedEvent(e.inst, a, "job.completed", base, false)
	e2, d2 := e.loggedEvent(e.inst, b, "job.failed", base.Add(time.Minute), false)
	test, dt := e.loggedEvent(e.inst, a, "webhook.test", base.Add(2*time.Minute), true)

	rec := e.do(http.MethodGet, p("/webhook-deliveries"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	page := decode(t, rec)
	assert.Equal(t, []string{"next_cursor", "webhook_deliveries"}, keysOf(page))
	list := page["webhook_deliveries"].([]any)
	require.Len(t, list, 3)
	first := list[0].(map[string]any)
	assert.Equal(t, []string{"attempt_count", "attempts", "created_at", "delivered_at", "endpoint_id", "event", "event_id", "id", "livemode", "next_attempt_at", "status", "url"}, keysOf(first))
	assert.Equal(t, dt.ID, first["id"])
	assert.Equal(t, test.ID, first["event_id"])
	assert.Equal(t, a, first["endpoint_id"])
	assert.Equal(t, "delivering", first["status"])
	assert.Equal(t, []any{map[string]any{"at": base.Add(2 * time.Minute).Format(time.RFC3339), "status_code": float64(502), "error": "HTTP 502", "duration_ms": float64(17)}}, first["attempts"])
	assert.Equal(t, float64(1), first["attempt_count"])

	filtered := func(query string) []string {
		t.Helper()
		rec := e.do(http.MethodGet, p("/webhook-deliveries?"+query), e.key, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		out := []string{}
		for _, d := range decode(t, rec)["webhook_deliveries"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	assert.Equal(t, []string{dt.ID, d1.ID}, filtered("endpoint_id="+a))
	assert.Equal(t, []string{d2.ID}, filtered("event=job.failed"))
	assert.Equal(t, []string{d1.ID}, filtered("event_id="+strings.ToUpper(e1.ID)), "IDs in either case")
	assert.Equal(t, []string{dt.ID, d2.ID, d1.ID}, filtered("status=delivering"))
	assert.Equal(t, []string{}, filtered("status=held"))
	assert.Equal(t, []string{d2.ID}, filtered("created_after=2026-11-20T09:01:00Z&created_before=2026-11-20T09:02:00Z"))

	rec = e.do(http.MethodGet, p("/webhook-deliveries?limit=2"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	page = decode(t, rec)
	require.Len(t, page["webhook_deliveries"], 2)
	next, ok := page["next_cursor"].(string)
	require.True(t, ok, "next_cursor %v", page["next_cursor"])
	assert.Equal(t, []string{d1.ID}, filtered("limit=2&cursor="+url.QueryEscape(next)))

	rec = e.do(http.MethodGet, p("/webhook-deliveries/"+d2.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, list[1], decode(t, rec))

	// Events: the test send is not listed but is found.
	rec = e.do(http.MethodGet, p("/events"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	page = decode(t, rec)
	assert.Equal(t, []string{"events", "next_cursor"}, keysOf(page))
	assert.Nil(t, page["next_cursor"])
	events := page["events"].([]any)
	require.Len(t, events, 2)
	assert.Equal(t, map[string]any{"id": e2.ID, "type": "job.failed", "created_at": base.Add(time.Minute).Format(time.RFC3339),
		"data": map[string]any{"event": "job.failed", "delivery_id": "x", "livemode": true}, "livemode": true}, events[0])
	rec = e.do(http.MethodGet, p("/events?type=job.completed&limit=1"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	events = decode(t, rec)["events"].([]any)
	require.Len(t, events, 1)
	assert.Equal(t, e1.ID, events[0].(map[string]any)["id"])
	rec = e.do(http.MethodGet, p("/events/"+test.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "webhook.test", decode(t, rec)["type"])
}

// A test send's event type is one of the API's: an empty one is a value, not the default's
// omission, and like any other unknown type is 400 naming event, with nothing recorded or sent;
// left out, it is webhook.test.
func TestWebhookTestSendRefusesAnEmptyEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withTemporal().On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Maybe()
	id := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	for _, body := range []string{`{"event": ""}`, `{"event": null}`, `{"event": "record.done"}`} {
		msg := e.requireError(e.do(http.MethodPost, p("/webhook-endpoints/"+id+"/test"), e.key, body), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "event", body)
	}
	assert.Zero(t, e.count(&models.WebhookEvent{}, "installation_id = ?", e.inst.ID), "a refused test send recorded an event")
	rec := e.do(http.MethodPost, p("/webhook-endpoints/"+id+"/test"), e.key, map[string]any{})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	var ev models.WebhookEvent
	require.NoError(t, e.db.Take(&ev, "id = ?", decode(t, rec)["event_id"]).Error)
	assert.Equal(t, "webhook.test", ev.Type)
}

// A delivery not attempted yet shows where its first attempt will go: after PATCH url, the
// endpoint's new URL (the attempt reads the endpoint's URL when it is made).
func TestPendingDeliveryShowsTheEndpointsNewURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withTemporal().On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Maybe()
	id := e.createEndpoint(e.key, map[string]any{"url": hookURL})["id"].(string)
	rec := e.do(http.MethodPost, p("/webhook-endpoints/"+id+"/test"), e.key, map[string]any{})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	delivery := decode(t, rec)["delivery_id"].(string)
	const newURL = "https://93.184.216.35/new"
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, p("/webhook-endpoints/"+id), e.key, map[string]any{"url": newURL}).Code)
	d := decode(t, e.do(http.MethodGet, p("/webhook-deliveries/"+delivery), e.key, nil))
	require.Equal(t, "pending", d["status"])
	require.Empty(t, d["attempts"])
	assert.Equal(t, newURL, d["url"])
}

// A PATCH that sends what the endpoint already has (its status, URL, events, description)
// changes nothing about it, updated_at included.
func TestPatchWithTheSameValuesChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.createEndpoint(e.key, map[string]any{"url": hookURL, "events": []string{"job.failed"}, "description": "d"})
	time.Sleep(5 * time.Millisecond)
	for _, body := range []map[string]any{{"status": "enabled"}, {"url": hookURL, "events": []string{"job.failed"}, "description": "d"}} {
		rec := e.do(http.MethodPatch, p("/webhook-endpoints/"+ep["id"].(string)), e.key, body)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Equal(t, ep, decode(t, rec), "%v", body)
	}
	rec := e.do(http.MethodPatch, p("/webhook-endpoints/"+ep["id"].(string)), e.key, map[string]any{"description": "e"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.NotEqual(t, ep["updated_at"], decode(t, rec)["updated_at"], "a change moves updated_at")
}
