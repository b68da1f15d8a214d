package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// withTemporal rebuilds the scopes' engine over tc.
func (w *webhookScopes) withTemporal(db *gorm.DB, tc *cancelTemporal) {
	w.eng = engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop(), Secrets: w.box, Temporal: tc})
}

// refusedAs is the kind and field of an engine refusal.
func refusedAs(t *testing.T, err error) (engine.Kind, string) {
	t.Helper()
	e, ok := engine.As(err)
	require.True(t, ok, "want a refusal, got %v", err)
	return e.Kind, e.Field
}

// A test send records a test event for one endpoint, subscribed to its type or not, delivers it
// through the normal path (its workflow is started), and is refused for an unknown event type, a
// disabled endpoint, or another scope's endpoint.
func TestSendTestGoesToOneEndpointAsATest(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		target, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/a")})
		require.NoError(t, err)
		_, err = w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/b")})
		require.NoError(t, err)

		sent, err := w.eng.Webhooks.SendTest(ctx, w.inst, target.ID, new("job.started")) // not among its subscriptions
		require.NoError(t, err)
		var deliveries []models.WebhookDelivery
		require.NoError(t, db.Where("event_id = ?", sent.EventID).Find(&deliveries).Error)
		require.Len(t, deliveries, 1, "only the target endpoint")
		assert.Equal(t, sent.DeliveryID, deliveries[0].ID)
		assert.Equal(t, target.ID, *deliveries[0].EndpointID)
		assert.Nil(t, deliveries[0].StartDueAt, "its start is recorded")
		assert.Equal(t, []string{workflows.WebhookWorkflowID(sent.DeliveryID)}, up.starts)
		var ev models.WebhookEvent
		require.NoError(t, db.Take(&ev, "id = ?", sent.EventID).Error)
		assert.True(t, ev.Test)
		assert.Equal(t, "job.started", ev.Type)
		var body map[string]any
		require.NoError(t, json.Unmarshal(ev.Payload, &body))
		assert.Equal(t, true, body["test"])

		_, err = w.eng.Webhooks.SendTest(ctx, w.inst, target.ID, new("record.done"))
		kind, field := refusedAs(t, err)
		assert.Equal(t, engine.KindInvalid, kind)
		assert.Equal(t, "event", field)
		// An empty event type is a value, not the default's omission.
		_, err = w.eng.Webhooks.SendTest(ctx, w.inst, target.ID, new(""))
		kind, field = refusedAs(t, err)
		assert.Equal(t, engine.KindInvalid, kind)
		assert.Equal(t, "event", field)
		_, err = w.eng.Webhooks.SendTest(ctx, w.sibling, target.ID, nil)
		kind, _ = refusedAs(t, err)
		assert.Equal(t, engine.KindNotFound, kind, "another installation's endpoint")
		_, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, target.ID, engine.EndpointInput{Status: str("disabled")})
		require.NoError(t, err)
		_, err = w.eng.Webhooks.SendTest(ctx, w.inst, target.ID, nil)
		kind, _ = refusedAs(t, err)
		assert.Equal(t, engine.KindConflict, kind, "a disabled endpoint")
		assert.Len(t, up.starts, 1, "nothing more was sent")
	})
}

// A recover queues the endpoint's failed and held deliveries of the window, and only those; while
// their starts are owed (Temporal is away) a second recover is a conflict; the outbox sweep starts
// them and ends the recover. The window reaches 14 days back; a disabled endpoint and another
// scope's are refused.
func TestRecoverEndpointQueuesFailedAndHeldDeliveries(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		down := newCancelTemporal(t, true)
		w.withTemporal(db, down)
		ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/a")})
		require.NoError(t, err)
		now := time.Now().UTC()
		_, failed := sentEvent(t, db, w.inst, ep.ID, "job.completed", models.WebhookFailed, now.Add(-2*time.Hour), false)
		_, held := sentEvent(t, db, w.inst, ep.ID, "job.failed", models.WebhookHeld, now.Add(-time.Hour), false)
		sentEvent(t, db, w.inst, ep.ID, "job.completed", models.WebhookDelivered, now.Add(-time.Hour), false)
		sentEvent(t, db, w.inst, ep.ID, "job.completed", models.WebhookFailed, now.Add(-20*time.Hour), false) // before since

		since := now.Add(-3 * time.Hour)
		n, err := w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, since, nil)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		for _, id := range []string{failed.ID, held.ID} {
			d, err := models.GetWebhookDelivery(db, id)
			require.NoError(t, err)
			assert.Equal(t, models.WebhookPending, d.Status)
			assert.NotNil(t, d.StartDueAt)
		}
		_, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, since, nil)
		kind, _ := refusedAs(t, err)
		assert.Equal(t, engine.KindConflict, kind, "a recover while the first one's starts are owed")

		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		started, err := w.eng.Outbox.StartPendingDeliveries(ctx, 0, 100)
		require.NoError(t, err)
		assert.Equal(t, 2, started)
		assert.ElementsMatch(t, []string{workflows.WebhookWorkflowID(failed.ID), workflows.WebhookWorkflowID(held.ID)}, up.starts)
		n, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, since, nil)
		require.NoError(t, err, "the sweep ended the first recover")
		assert.Zero(t, n, "nothing failed or held is left")

		for _, tc := range []struct {
			since time.Time
			until *time.Time
			field string
		}{
			{now.Add(-15 * 24 * time.Hour), nil, "since"},
			{time.Now().Add(time.Hour), nil, "since"},
			{since, &since, "until"},
		} {
			_, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, tc.since, tc.until)
			kind, field := refusedAs(t, err)
			assert.Equal(t, engine.KindInvalid, kind)
			assert.Equal(t, tc.field, field)
		}
		_, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.account, ep.ID, since, nil)
		kind, _ = refusedAs(t, err)
		assert.Equal(t, engine.KindNotFound, kind, "the account's own scope does not see an installation's endpoint")
		_, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, ep.ID, engine.EndpointInput{Status: str("disabled")})
		require.NoError(t, err)
		_, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, since, nil)
		kind, _ = refusedAs(t, err)
		assert.Equal(t, engine.KindConflict, kind, "a disabled endpoint")
	})
}

// DELETE /webhook-endpoints/{id} of an endpoint that was disabled: its held deliveries would wait
// for a recover that can no longer come (a deleted endpoint is not found), so the deletion ends
// them, and the ones a recover had queued again, failed with "the endpoint was deleted"; the
// delivery log of the scope says so, the outbox starts none of them, and their replay is refused.
func TestDeletingAnEndpointEndsItsHeldDeliveries(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		down := newCancelTemporal(t, true)
		w.withTemporal(db, down)
		for _, scope := range []engine.WebhookScope{w.inst, w.account} {
			ep, err := w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://shop.example/a")})
			require.NoError(t, err)
			now := time.Now().UTC()
			_, recovered := sentEvent(t, db, scope, ep.ID, "order.completed", models.WebhookFailed, now.Add(-2*time.Hour), false)
			_, err = w.eng.Webhooks.RecoverEndpoint(ctx, scope, ep.ID, now.Add(-3*time.Hour), nil) // Temporal is away: its start is owed
			require.NoError(t, err)
			_, err = w.eng.Webhooks.UpdateEndpoint(ctx, scope, ep.ID, engine.EndpointInput{Status: str("disabled")})
			require.NoError(t, err)
			_, held := sentEvent(t, db, scope, ep.ID, "order.completed", models.WebhookHeld, now.Add(-time.Hour), false)

			require.NoError(t, w.eng.Webhooks.DeleteEndpoint(ctx, scope, ep.ID))
			for _, id := range []string{held.ID, recovered.ID} {
				d, err := w.eng.Webhooks.GetDelivery(ctx, scope, id)
				require.NoError(t, err)
				assert.Equal(t, models.WebhookFailed, d.Status, "a delivery of the deleted endpoint")
				assert.Nil(t, d.NextAttemptAt)
			}
			failed, _, err := w.eng.Webhooks.ListDeliveries(ctx, scope, engine.DeliveryFilter{EndpointID: ep.ID, Status: models.WebhookFailed})
			require.NoError(t, err)
			assert.Len(t, failed, 2)
			stored, err := models.GetWebhookDelivery(db, held.ID)
			require.NoError(t, err)
			assert.Equal(t, models.EndpointDeletedError, stored.LastError)
			if scope.InstallationID != "" {
				_, err = w.eng.Webhooks.ReplayWebhook(ctx, scope, held.ID)
				kind, _ := refusedAs(t, err)
				assert.Equal(t, engine.KindConflict, kind, "the replay of a deleted endpoint's delivery")
			}
		}
		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		started, err := w.eng.Outbox.StartPendingDeliveries(ctx, 0, 100)
		require.NoError(t, err)
		assert.Zero(t, started, "the outbox starts no delivery of a deleted endpoint")
		assert.Empty(t, up.starts)
	})
}

// A replay of a delivery whose endpoint is disabled is refused: it would be held, not sent.
func TestReplayOfADeliveryToADisabledEndpointIsAConflict(t *testing.T) {
	db := testdb.Open(t, testdb.SQLiteURL(t))
	ctx := context.Background()
	w := newWebhookScopes(t, db, false)
	up := newCancelTemporal(t, false)
	w.withTemporal(db, up)
	ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/a")})
	require.NoError(t, err)
	_, d := sentEvent(t, db, w.inst, ep.ID, "job.completed", models.WebhookFailed, time.Now().UTC(), false)
	_, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, ep.ID, engine.EndpointInput{Status: str("disabled")})
	require.NoError(t, err)
	_, err = w.eng.Webhooks.ReplayWebhook(ctx, w.inst, d.ID)
	kind, _ := refusedAs(t, err)
	assert.Equal(t, engine.KindConflict, kind)
	assert.Empty(t, up.starts)
	_, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, ep.ID, engine.EndpointInput{Status: str("enabled")})
	require.NoError(t, err)
	replayed, err := w.eng.Webhooks.ReplayWebhook(ctx, w.inst, d.ID)
	require.NoError(t, err)
	assert.Equal(t, d.ID, replayed.ID)
	assert.Equal(t, []string{workflows.WebhookWorkflowID(d.ID)}, up.starts)
}

// A replay is one use case for both APIs' scopes (ReplayWebhook): it queues the delivery again
// before its new run starts, so it answers the delivery pending, with its earlier attempts, and
// records the run's start; another scope's delivery is KindNotFound and changes nothing. When
// Temporal cannot be reached it answers KindUnavailable, the delivery stays pending with its start
// owed, and the outbox sweep starts it.
func TestReplayQueuesTheDeliveryPendingInEitherScope(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		mine := map[string]models.WebhookDelivery{}
		for name, scope := range map[string]engine.WebhookScope{"installation": w.inst, "account": w.account} {
			ep, err := w.eng.Webhooks.CreateEndpoint(ctx, scope, engine.EndpointInput{URL: str("https://shop.example/" + name)})
			require.NoError(t, err)
			_, d := sentEvent(t, db, scope, ep.ID, map[string]string{"installation": "job.failed", "account": "record.failed"}[name],
				models.WebhookFailed, at, false)
			require.NoError(t, db.Model(&models.WebhookDelivery{}).Where("id = ?", d.ID).Update("attempts", 1).Error)
			mine[name] = d
		}
		for name, scope := range map[string]engine.WebhookScope{"installation": w.inst, "account": w.account} {
			d := mine[name]
			// Every other scope's replay of it is not found, and changes nothing.
			for _, other := range []engine.WebhookScope{w.inst, w.sibling, w.account, w.other} {
				if other == scope {
					continue
				}
				_, err := w.eng.Webhooks.ReplayWebhook(ctx, other, d.ID)
				kind, _ := refusedAs(t, err)
				assert.Equal(t, engine.KindNotFound, kind, "%s's delivery replayed by another scope", name)
			}
			stored, err := models.GetWebhookDelivery(db, d.ID)
			require.NoError(t, err)
			assert.Equal(t, models.WebhookFailed, stored.Status, "a refused replay changes nothing")

			got, err := w.eng.Webhooks.ReplayWebhook(ctx, scope, d.ID)
			require.NoError(t, err, name)
			assert.Equal(t, d.ID, got.ID)
			assert.Equal(t, models.WebhookPending, got.Status, "the %s's replayed delivery", name)
			assert.Nil(t, got.NextAttemptAt)
			assert.Equal(t, 1, got.AttemptCount, "the earlier run's attempts stay in the log")
			assert.Len(t, got.Attempts, 1)
			assert.Equal(t, "https://shop.example/"+name, got.URL, "addressed to the endpoint's URL")
			assert.Contains(t, up.starts, workflows.WebhookWorkflowID(d.ID))
			stored, err = models.GetWebhookDelivery(db, d.ID)
			require.NoError(t, err)
			assert.Nil(t, stored.StartDueAt, "the replay's start is recorded")
		}

		// Temporal away: KindUnavailable, and the delivery stays queued for the sweep.
		down := newCancelTemporal(t, true)
		w.withTemporal(db, down)
		d := mine["account"]
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := w.eng.Webhooks.ReplayWebhook(dctx, w.account, d.ID)
		cancel()
		kind, _ := refusedAs(t, err)
		assert.Equal(t, engine.KindUnavailable, kind)
		stored, err := models.GetWebhookDelivery(db, d.ID)
		require.NoError(t, err)
		assert.Equal(t, models.WebhookPending, stored.Status)
		require.NotNil(t, stored.StartDueAt, "the replay's start is owed")
		back := newCancelTemporal(t, false)
		w.withTemporal(db, back)
		started, err := w.eng.Outbox.StartPendingDeliveries(ctx, 0, 100)
		require.NoError(t, err)
		assert.Equal(t, 1, started)
		assert.Equal(t, []string{workflows.WebhookWorkflowID(d.ID)}, back.starts)
	})
}

// A replay whose endpoint is deleted after its check and before it is queued (the admin's replay
// checks, then queues: Support.ReplayWebhook; both APIs' replays check too) starts nothing and
// leaves the delivery as the deletion ended it, failed with no start owed: StartWebhookReplay
// answers models.ErrEndpointDeleted, which the APIs' replay answers as the conflict of a deleted
// endpoint.
func TestReplayQueuedAfterItsEndpointsDeletionStartsNothing(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://shop.example/gone")})
		require.NoError(t, err)
		_, d := sentEvent(t, db, w.account, ep.ID, "record.failed", models.WebhookFailed, time.Now().UTC().Add(-time.Hour), false)
		require.NoError(t, w.eng.Webhooks.DeleteEndpoint(ctx, w.account, ep.ID))

		err = w.eng.Webhooks.StartWebhookReplay(ctx, &d)
		require.ErrorIs(t, err, models.ErrEndpointDeleted)
		assert.Empty(t, up.starts, "no run starts for a deleted endpoint's delivery")
		stored, err := models.GetWebhookDelivery(db, d.ID)
		require.NoError(t, err)
		assert.Equal(t, models.WebhookFailed, stored.Status)
		assert.Nil(t, stored.StartDueAt, "no start owed to a deleted endpoint")
	})
}

// A replay the database refuses to queue (Store.QueueReplay fails: here a trigger that raises on
// every update of webhook_deliveries, after the delivery and its endpoint were read) queued
// nothing, so its KindUnavailable, the API's and admin's alike (replayStartRefusal), says so and asks for a retry rather than promising that the
// delivery stays pending: the delivery keeps its state, no start is owed and nothing starts.
func TestReplayTheDatabaseCannotQueueSaysNothingChanged(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		up := newCancelTemporal(t, false)
		w.withTemporal(db, up)
		ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://shop.example/a")})
		require.NoError(t, err)
		_, d := sentEvent(t, db, w.account, ep.ID, "record.failed", models.WebhookFailed, time.Now().UTC().Add(-time.Hour), false)
		if db.Dialector.Name() == "postgres" {
			require.NoError(t, db.Exec(`CREATE FUNCTION refuse_delivery_update() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'webhook_deliveries is read-only'; END $$`).Error)
			require.NoError(t, db.Exec(`CREATE TRIGGER refuse_delivery_update BEFORE UPDATE ON webhook_deliveries
				FOR EACH ROW EXECUTE FUNCTION refuse_delivery_update()`).Error)
		} else {
			require.NoError(t, db.Exec(`CREATE TRIGGER refuse_delivery_update BEFORE UPDATE ON webhook_deliveries
				BEGIN SELECT RAISE(ABORT, 'webhook_deliveries is read-only'); END`).Error)
		}

		for what, replay := range map[string]func() error{
			"the API's replay": func() error { _, err := w.eng.Webhooks.ReplayWebhook(ctx, w.account, d.ID); return err },
			"admin's replay":   func() error { _, err := w.eng.Support.ReplayWebhook(ctx, d.ID); return err },
		} {
			err := replay()
			e, ok := engine.As(err)
			require.True(t, ok, "%s: want a refusal, got %v", what, err)
			assert.Equal(t, engine.KindUnavailable, e.Kind, what)
			assert.Equal(t, "The replay could not be queued now; nothing changed, so retry it.", e.Message, what)
			assert.Positive(t, e.RetryAfter, what)
		}
		assert.Empty(t, up.starts, "nothing starts for a replay that was not queued")
		stored, err := models.GetWebhookDelivery(db, d.ID)
		require.NoError(t, err)
		assert.Equal(t, models.WebhookFailed, stored.Status)
		assert.Nil(t, stored.StartDueAt, "no start owed")
	})
}

// The recover window [since, until) is exact to the nanosecond on both databases, as both OpenAPI
// documents say of every bound: a failed delivery created at T is not in [T+1ns, now), and is in
// [T-1h, T+1ns) (pgx would cut both bounds down to T on PostgreSQL: models.halfOpenBound).
func TestRecoverWindowIsExactToTheNanosecond(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		w.withTemporal(db, newCancelTemporal(t, true))
		ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/a")})
		require.NoError(t, err)
		at := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
		_, d := sentEvent(t, db, w.inst, ep.ID, "job.completed", models.WebhookFailed, at, false)

		n, err := w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, at.Add(time.Nanosecond), nil)
		require.NoError(t, err)
		assert.Zero(t, n, "since = T+1ns queued the delivery created at T")

		// Free the endpoint of a recover the first call may have started.
		require.NoError(t, db.Model(&models.WebhookEndpoint{}).Where("id = ?", ep.ID).Update("recovering_since", nil).Error)
		require.NoError(t, db.Model(&models.WebhookDelivery{}).Where("id = ?", d.ID).
			Updates(map[string]any{"status": models.WebhookFailed, "start_due_at": nil}).Error)
		until := at.Add(time.Nanosecond)
		n, err = w.eng.Webhooks.RecoverEndpoint(ctx, w.inst, ep.ID, at.Add(-time.Hour), &until)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "until = T+1ns left out the delivery created at T")
	})
}

// Deleting an endpoint cancels, after its commit, the workflows of the deliveries it ended that
// may still run (pending, delivering), and only those: a held delivery's run has stopped, and an
// ended delivery or another endpoint's is not touched. With Temporal away the deletion still
// succeeds, within the cancels' deadline, and the deliveries are failed all the same.
func TestDeletingAnEndpointCancelsItsDeliveriesWorkflows(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		for _, away := range []bool{false, true} {
			tc := newCancelTemporal(t, away)
			w.withTemporal(db, tc)
			ep, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/a")})
			require.NoError(t, err)
			kept, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://shop.example/b")})
			require.NoError(t, err)
			at := time.Now().UTC().Add(-time.Minute)
			var running, others []string
			for _, status := range []string{models.WebhookPending, models.WebhookDelivering} {
				_, d := sentEvent(t, db, w.inst, ep.ID, "job.completed", status, at, false)
				running = append(running, workflows.WebhookWorkflowID(d.ID))
			}
			for _, status := range []string{models.WebhookHeld, models.WebhookDelivered, models.WebhookFailed} {
				_, d := sentEvent(t, db, w.inst, ep.ID, "job.completed", status, at, false)
				others = append(others, d.ID)
			}
			_, elsewhere := sentEvent(t, db, w.inst, kept.ID, "job.completed", models.WebhookDelivering, at, false)

			began := time.Now()
			require.NoError(t, w.eng.Webhooks.DeleteEndpoint(ctx, w.inst, ep.ID), "Temporal away: %v", away)
			took := time.Since(began)
			if away {
				assert.Empty(t, tc.cancels)
				assert.Less(t, took, 10*time.Second, "the cancels are bounded by their deadline")
			} else {
				assert.ElementsMatch(t, running, tc.cancels, "the workflows cancelled")
				assert.NotContains(t, tc.cancels, workflows.WebhookWorkflowID(elsewhere.ID))
				for _, id := range others {
					assert.NotContains(t, tc.cancels, workflows.WebhookWorkflowID(id))
				}
			}
			for _, wf := range running {
				d, err := models.GetWebhookDelivery(db, wf[len("webhook/"):])
				require.NoError(t, err)
				assert.Equal(t, models.WebhookFailed, d.Status)
				assert.Equal(t, models.EndpointDeletedError, d.LastError)
			}
		}
	})
}
