package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// sentEvent stores an event of the scope and its delivery to endpointID, with one failed attempt.
func sentEvent(t *testing.T, db *gorm.DB, scope engine.WebhookScope, endpointID, typ, status string, at time.Time, test bool) (models.WebhookEvent, models.WebhookDelivery) {
	t.Helper()
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: scope.AccountID, Type: typ,
		Payload: models.JSON(`{"event":"` + typ + `","n":1,"livemode":true}`), Test: test, CreatedAt: at}
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &endpointID, AccountID: scope.AccountID, Run: 1,
		Event: typ, CallbackURL: "https://93.184.216.34/hook", Status: status, CreatedAt: at, UpdatedAt: at}
	if scope.InstallationID != "" {
		inst := scope.InstallationID
		ev.InstallationID, d.InstallationID = &inst, &inst
	}
	require.NoError(t, db.Create(&ev).Error)
	_, err := models.CreateWebhookDelivery(db, &d) // in its account's mode, as RecordEvents stores it
	require.NoError(t, err)
	code := 503
	require.NoError(t, db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: 1, StartedAt: at,
		StatusCode: &code, LatencyMS: 42, Error: "HTTP 503", CreatedAt: at}).Error)
	return ev, d
}

func TestDeliveryLogAndEventsAcrossScopes(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		scopes := []engine.WebhookScope{w.inst, w.sibling, w.account, w.other}
		types := []string{"job.completed", "job.failed", "record.done", "order.completed"}
		base := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		events := make([]models.WebhookEvent, len(scopes))
		deliveries := make([]models.WebhookDelivery, len(scopes))
		for i, scope := range scopes {
			ep, err := w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://93.184.216.34/hook")})
			require.NoError(t, err)
			events[i], deliveries[i] = sentEvent(t, db, scope, ep.ID, types[i], models.WebhookFailed, base, false)
		}
		for i, scope := range scopes {
			got, next, err := w.eng.Webhooks.ListDeliveries(ctx, scope, engine.DeliveryFilter{})
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Empty(t, next)
			assert.Equal(t, deliveries[i].ID, got[0].ID)
			assert.Equal(t, events[i].ID, got[0].EventID)
			require.Len(t, got[0].Attempts, 1)
			assert.Equal(t, 503, *got[0].Attempts[0].StatusCode)
			assert.Equal(t, "HTTP 503", *got[0].Attempts[0].Error)
			assert.Equal(t, int64(42), got[0].Attempts[0].DurationMS)
			evs, _, err := w.eng.Webhooks.ListEvents(ctx, scope, engine.EventFilter{})
			require.NoError(t, err)
			require.Len(t, evs, 1)
			assert.Equal(t, events[i].ID, evs[0].ID)
			assert.JSONEq(t, string(events[i].Payload), string(evs[0].Data))
			for j := range scopes {
				if i == j {
					d, err := w.eng.Webhooks.GetDelivery(ctx, scope, deliveries[j].ID)
					require.NoError(t, err)
					assert.Equal(t, got[0], d)
					ev, err := w.eng.Webhooks.GetEvent(ctx, scope, events[j].ID)
					require.NoError(t, err)
					assert.Equal(t, evs[0], ev)
					continue
				}
				wantKind(t, mustFail(w.eng.Webhooks.GetDelivery(ctx, scope, deliveries[j].ID)), engine.KindNotFound, "delivery across")
				wantKind(t, mustFail(w.eng.Webhooks.GetEvent(ctx, scope, events[j].ID)), engine.KindNotFound, "event across")
			}
		}
	})
}

func TestDeliveryAndEventFilters(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	w := newWebhookScopes(t, db, false)
	a, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/a")})
	require.NoError(t, err)
	b, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/b")})
	require.NoError(t, err)
	base := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	e1, d1 := sentEvent(t, db, w.inst, a.ID, "job.completed", models.WebhookDelivered, base, false)
	e2, d2 := sentEvent(t, db, w.inst, b.ID, "job.failed", models.WebhookFailed, base.Add(time.Minute), false)
	e3, d3 := sentEvent(t, db, w.inst, a.ID, "job.failed", models.WebhookHeld, base.Add(2*time.Minute), false)
	test, dt := sentEvent(t, db, w.inst, a.ID, "webhook.test", models.WebhookDelivered, base.Add(3*time.Minute), true)

	ids := func(f engine.DeliveryFilter) []string {
		t.Helper()
		got, _, err := w.eng.Webhooks.ListDeliveries(ctx, w.inst, f)
		require.NoError(t, err)
		out := []string{}
		for _, d := range got {
			out = append(out, d.ID)
		}
		return out
	}
	at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
	assert.Equal(t, []string{dt.ID, d3.ID, d2.ID, d1.ID}, ids(engine.DeliveryFilter{}), "the test send's delivery is in the log")
	assert.Equal(t, []string{dt.ID, d3.ID, d1.ID}, ids(engine.DeliveryFilter{EndpointID: a.ID}))
	assert.Equal(t, []string{d3.ID, d1.ID}, ids(engine.DeliveryFilter{EndpointID: a.ID, CreatedBefore: at(3 * time.Minute)}))
	assert.Equal(t, []string{d3.ID, d2.ID}, ids(engine.DeliveryFilter{Event: "job.failed"}))
	assert.Equal(t, []string{d2.ID}, ids(engine.DeliveryFilter{EventID: e2.ID}))
	assert.Equal(t, []string{d3.ID}, ids(engine.DeliveryFilter{Status: "held"}))
	assert.Equal(t, []string{d2.ID}, ids(engine.DeliveryFilter{CreatedAfter: at(time.Minute), CreatedBefore: at(2 * time.Minute)}))

	// Pages of two, then one, with the cursor; the last page has none.
	page, next, err := w.eng.Webhooks.ListDeliveries(ctx, w.inst, engine.DeliveryFilter{Limit: 3})
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.NotEmpty(t, next)
	page, next, err = w.eng.Webhooks.ListDeliveries(ctx, w.inst, engine.DeliveryFilter{Limit: 3, Cursor: next})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, d1.ID, page[0].ID)
	assert.Empty(t, next)

	for field, f := range map[string]engine.DeliveryFilter{
		"endpoint_id":   {EndpointID: "not-an-id"},
		"event_id":      {EventID: "12"},
		"event":         {Event: "record.done"}, // an event of the external API
		"status":        {Status: "lost"},
		"created_after": {CreatedAfter: at(time.Minute), CreatedBefore: at(time.Minute)},
		"limit":         {Limit: 500},
		"cursor":        {Cursor: "%%%"},
	} {
		e := wantKind(t, mustFail2(w.eng.Webhooks.ListDeliveries(ctx, w.inst, f)), engine.KindInvalid, field)
		assert.Equal(t, field, e.Field)
	}

	// Events: test sends are not listed, but are found by id.
	evIDs := func(f engine.EventFilter) []string {
		t.Helper()
		got, _, err := w.eng.Webhooks.ListEvents(ctx, w.inst, f)
		require.NoError(t, err)
		out := []string{}
		for _, e := range got {
			out = append(out, e.ID)
		}
		return out
	}
	assert.Equal(t, []string{e3.ID, e2.ID, e1.ID}, evIDs(engine.EventFilter{}))
	assert.Equal(t, []string{e1.ID}, evIDs(engine.EventFilter{Type: "job.completed"}))
	assert.Equal(t, []string{e3.ID, e2.ID}, evIDs(engine.EventFilter{CreatedAfter: at(time.Minute)}))
	assert.Equal(t, []string{e1.ID}, evIDs(engine.EventFilter{CreatedBefore: at(time.Minute)}))
	evs, next, err := w.eng.Webhooks.ListEvents(ctx, w.inst, engine.EventFilter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, evs, 2)
	evs, next, err = w.eng.Webhooks.ListEvents(ctx, w.inst, engine.EventFilter{Limit: 2, Cursor: next})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, e1.ID, evs[0].ID)
	assert.Empty(t, next)
	got, err := w.eng.Webhooks.GetEvent(ctx, w.inst, test.ID)
	require.NoError(t, err)
	assert.Equal(t, "webhook.test", got.Type)
	var data map[string]any
	require.NoError(t, json.Unmarshal(got.Data, &data))
	assert.Equal(t, "webhook.test", data["event"])
	for field, f := range map[string]engine.EventFilter{
		"type":          {Type: "job.exploded"},
		"created_after": {CreatedAfter: at(2 * time.Minute), CreatedBefore: at(time.Minute)},
		"limit":         {Limit: -1},
		"cursor":        {Cursor: "bm90IGpzb24"},
	} {
		e := wantKind(t, mustFail2(w.eng.Webhooks.ListEvents(ctx, w.inst, f)), engine.KindInvalid, field)
		assert.Equal(t, field, e.Field)
	}
}
