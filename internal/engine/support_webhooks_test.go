package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

func TestSupportListsWebhookEndpointsOfAScope(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		first, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/a")})
		require.NoError(t, err)
		second, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/b")})
		require.NoError(t, err)
		_, err = w.eng.Webhooks.UpdateEndpoint(ctx, w.inst, second.ID, engine.EndpointInput{Status: str(models.EndpointDisabled)})
		require.NoError(t, err)
		own, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://93.184.216.34/own")})
		require.NoError(t, err)
		_, err = w.eng.Webhooks.CreateEndpoint(ctx, w.sibling, engine.EndpointInput{URL: str("https://93.184.216.34/sib")})
		require.NoError(t, err)

		got, err := w.eng.Support.ListWebhookEndpoints(ctx, w.inst.InstallationID, "", "")
		require.NoError(t, err)
		assert.Equal(t, w.inst.AccountID, got.AccountID)
		require.NotNil(t, got.InstallationID)
		assert.Equal(t, w.inst.InstallationID, *got.InstallationID)
		require.Len(t, got.Endpoints, 2)
		ids := []string{got.Endpoints[0].ID, got.Endpoints[1].ID}
		assert.ElementsMatch(t, []string{first.ID, second.ID}, ids)
		for _, ep := range got.Endpoints {
			if ep.ID == second.ID {
				assert.Equal(t, models.EndpointDisabled, ep.Status)
				require.NotNil(t, ep.DisabledReason)
				assert.Equal(t, models.EndpointDisabledManually, *ep.DisabledReason)
				assert.NotNil(t, ep.DisabledAt)
			} else {
				assert.Equal(t, models.EndpointEnabled, ep.Status)
				assert.Nil(t, ep.DisabledReason)
			}
		}

		mine, err := w.eng.Support.ListWebhookEndpoints(ctx, "", w.account.AccountID, "")
		require.NoError(t, err)
		assert.Nil(t, mine.InstallationID, "an account's own endpoints have no installation")
		require.Len(t, mine.Endpoints, 1)
		assert.Equal(t, own.ID, mine.Endpoints[0].ID)

		none, err := w.eng.Support.ListWebhookEndpoints(ctx, "", w.other.AccountID, "")
		require.NoError(t, err)
		assert.NotNil(t, none.Endpoints)
		assert.Empty(t, none.Endpoints)

		unknown := models.NewID()
		e := wantKind(t, mustFail(w.eng.Support.ListWebhookEndpoints(ctx, unknown, "", "")), engine.KindNotFound, "unknown installation")
		assert.Contains(t, e.Message, "installation "+unknown+" does not exist")
		e = wantKind(t, mustFail(w.eng.Support.ListWebhookEndpoints(ctx, "", unknown, "")), engine.KindNotFound, "unknown account")
		assert.Contains(t, e.Message, "account "+unknown+" does not exist")
		wantKind(t, mustFail(w.eng.Support.ListWebhookEndpoints(ctx, w.inst.InstallationID, w.inst.AccountID, "")), engine.KindInvalid, "both")
		wantKind(t, mustFail(w.eng.Support.ListWebhookEndpoints(ctx, "", "", "")), engine.KindInvalid, "neither")
	})
}

func TestSupportListsWebhookDeliveries(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		a, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/a")})
		require.NoError(t, err)
		b, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/b")})
		require.NoError(t, err)
		own, err := w.eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://93.184.216.34/own")})
		require.NoError(t, err)
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		_, d1 := sentEvent(t, db, w.inst, a.ID, "job.completed", models.WebhookDelivered, base, false)
		_, d2 := sentEvent(t, db, w.inst, b.ID, "job.failed", models.WebhookFailed, base.Add(time.Minute), false)
		_, d3 := sentEvent(t, db, w.inst, a.ID, "job.failed", models.WebhookFailed, base.Add(2*time.Minute), false)
		_, dOwn := sentEvent(t, db, w.account, own.ID, "record.done", models.WebhookFailed, base, false)

		ids := func(l engine.SupportDeliveryList) []string {
			out := []string{}
			for _, d := range l.Deliveries {
				out = append(out, d.ID)
			}
			return out
		}
		all, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID})
		require.NoError(t, err)
		assert.Equal(t, []string{d3.ID, d2.ID, d1.ID}, ids(all), "newest first")
		assert.Nil(t, all.NextCursor)
		require.Len(t, all.Deliveries[0].Attempts, 1)
		assert.Equal(t, 503, *all.Deliveries[0].Attempts[0].StatusCode)

		// One endpoint alone: its scope is found from it.
		ofA, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{EndpointID: a.ID})
		require.NoError(t, err)
		assert.Equal(t, []string{d3.ID, d1.ID}, ids(ofA))
		require.NotNil(t, ofA.InstallationID)
		assert.Equal(t, w.inst.InstallationID, *ofA.InstallationID)
		failedA, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID,
			EndpointID: a.ID, Status: models.WebhookFailed, Event: "job.failed"})
		require.NoError(t, err)
		assert.Equal(t, []string{d3.ID}, ids(failedA))
		mine, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{AccountID: w.account.AccountID})
		require.NoError(t, err)
		assert.Equal(t, []string{dOwn.ID}, ids(mine))
		assert.Nil(t, mine.InstallationID)

		// Pages.
		page, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Limit: 2})
		require.NoError(t, err)
		assert.Equal(t, []string{d3.ID, d2.ID}, ids(page))
		require.NotNil(t, page.NextCursor)
		rest, err := w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Limit: 2,
			Cursor: *page.NextCursor})
		require.NoError(t, err)
		assert.Equal(t, []string{d1.ID}, ids(rest))
		assert.Nil(t, rest.NextCursor)

		// Refusals name what is wrong.
		for name, c := range map[string]struct {
			f     engine.SupportDeliveryFilter
			kind  engine.Kind
			field string
		}{
			"endpoint of another scope":         {engine.SupportDeliveryFilter{InstallationID: w.sibling.InstallationID, EndpointID: a.ID}, engine.KindInvalid, "endpoint_id"},
			"account's, not the installation's": {engine.SupportDeliveryFilter{AccountID: w.inst.AccountID, EndpointID: a.ID}, engine.KindInvalid, "endpoint_id"},
			"unknown endpoint":                  {engine.SupportDeliveryFilter{EndpointID: models.NewID()}, engine.KindNotFound, ""},
			"unknown installation":              {engine.SupportDeliveryFilter{InstallationID: models.NewID()}, engine.KindNotFound, ""},
			"no scope":                          {engine.SupportDeliveryFilter{Status: models.WebhookFailed}, engine.KindInvalid, "installation"},
			"bad status":                        {engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Status: "lost"}, engine.KindInvalid, "status"},
			"external event on a plugin scope":  {engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Event: "record.done"}, engine.KindInvalid, "event"},
			"limit":                             {engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Limit: 201}, engine.KindInvalid, "limit"},
			"cursor":                            {engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Cursor: "nope"}, engine.KindInvalid, "cursor"},
		} {
			e := wantKind(t, mustFail(w.eng.Support.ListWebhookDeliveries(ctx, c.f)), c.kind, name)
			assert.Equal(t, c.field, e.Field, name)
		}
	})
}

func TestSupportRecoversAnEndpointOfAnyScope(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		tc := &recordingTemporal{}
		eng := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop(), Secrets: w.box, Temporal: tc, TaskQueue: "support-test"})
		ep, err := eng.Webhooks.CreateEndpoint(ctx, w.account, engine.EndpointInput{URL: str("https://93.184.216.34/own")})
		require.NoError(t, err)
		off, err := eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/off")})
		require.NoError(t, err)
		_, err = eng.Webhooks.UpdateEndpoint(ctx, w.inst, off.ID, engine.EndpointInput{Status: str(models.EndpointDisabled)})
		require.NoError(t, err)
		base := time.Now().UTC().Add(-2 * time.Hour)
		_, failed := sentEvent(t, db, w.account, ep.ID, "record.failed", models.WebhookFailed, base, false)
		_, held := sentEvent(t, db, w.account, ep.ID, "record.done", models.WebhookHeld, base.Add(time.Minute), false)
		_, delivered := sentEvent(t, db, w.account, ep.ID, "record.done", models.WebhookDelivered, base.Add(2*time.Minute), false)
		_, before := sentEvent(t, db, w.account, ep.ID, "record.done", models.WebhookFailed, base.Add(-2*time.Hour), false)
		status := func(id string) models.WebhookDelivery {
			t.Helper()
			var d models.WebhookDelivery
			require.NoError(t, db.Take(&d, "id = ?", id).Error)
			return d
		}

		// Refusals first: nothing is queued or started.
		e := wantKind(t, mustFail(eng.Support.RecoverWebhookEndpoint(ctx, ep.ID, time.Now().Add(-15*24*time.Hour), nil)), engine.KindInvalid, "since too far back")
		assert.Equal(t, "since", e.Field)
		until := base.Add(-time.Minute)
		e = wantKind(t, mustFail(eng.Support.RecoverWebhookEndpoint(ctx, ep.ID, base, &until)), engine.KindInvalid, "until before since")
		assert.Equal(t, "until", e.Field)
		wantKind(t, mustFail(eng.Support.RecoverWebhookEndpoint(ctx, off.ID, base, nil)), engine.KindConflict, "disabled endpoint")
		e = wantKind(t, mustFail(eng.Support.RecoverWebhookEndpoint(ctx, "not-an-id", base, nil)), engine.KindNotFound, "not an ID")
		assert.True(t, errors.Is(e, models.ErrNotFound))
		wantKind(t, mustFail(eng.Support.RecoverWebhookEndpoint(ctx, models.NewID(), base, nil)), engine.KindNotFound, "unknown endpoint")
		assert.Zero(t, tc.count())
		assert.Equal(t, models.WebhookFailed, status(failed.ID).Status)

		got, err := eng.Support.RecoverWebhookEndpoint(ctx, ep.ID, base.Add(-time.Second), nil)
		require.NoError(t, err)
		assert.Equal(t, engine.SupportRecoverResult{SupportWebhookScope: engine.SupportWebhookScope{AccountID: w.account.AccountID},
			EndpointID: ep.ID, DeliveriesQueued: 2, Status: "started"}, got)
		for _, d := range []models.WebhookDelivery{failed, held} {
			assert.NotEmpty(t, tc.startsOf(workflows.WebhookWorkflowID(d.ID)), "delivery %s was not started", d.Status)
			row := status(d.ID)
			assert.Equal(t, models.WebhookPending, row.Status)
			assert.Nil(t, row.StartDueAt, "the start of a recovered delivery is still owed")
		}
		for _, d := range []models.WebhookDelivery{delivered, before} {
			assert.Empty(t, tc.startsOf(workflows.WebhookWorkflowID(d.ID)))
			assert.Equal(t, d.Status, status(d.ID).Status)
		}
		require.Eventually(t, func() bool {
			var row models.WebhookEndpoint
			return db.Take(&row, "id = ?", ep.ID).Error == nil && row.RecoveringSince == nil
		}, 5*time.Second, 20*time.Millisecond, "the endpoint is still marked recovering")

		// With Temporal away the deliveries stay queued for the outbox sweep, and the answer says so.
		require.NoError(t, db.Model(&models.WebhookDelivery{}).Where("id = ?", failed.ID).Update("status", models.WebhookFailed).Error)
		tc.mu.Lock()
		tc.err = errors.New("temporal is away")
		tc.mu.Unlock()
		again, err := eng.Support.RecoverWebhookEndpoint(ctx, ep.ID, base.Add(-time.Second), nil)
		require.NoError(t, err)
		assert.Equal(t, 1, again.DeliveriesQueued)
		assert.Equal(t, "queued", again.Status)
		assert.NotNil(t, status(failed.ID).StartDueAt)
	})
}

// `shotflow admin webhooks replay DELIVERY_ID` (Support.ReplayWebhook) works like POST
// /webhooks/{delivery_id}/replay: a delivery whose endpoint is disabled (it would be held, not
// sent) or deleted is refused KindConflict, and nothing is started; support is never told a
// webhook went out when it did not.
func TestSupportReplayRefusesADisabledOrDeletedEndpoint(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		tn := newSupportTenant(t, db, 1)
		o, jobs := submitOrder(t, newSupportEngine(db, tc), tn, 1, "cup")
		failRun(t, db, jobs[0].ID, 1, errorcat.ContentPolicy)
		var ep models.WebhookEndpoint
		if err := db.Where("installation_id = ?", tn.installationID).Take(&ep).Error; err != nil {
			t.Fatal(err)
		}
		id := models.WebhookDeliveryID(jobs[0].ID, 1, webhooks.EventJobFailed)
		if _, err := models.CreateWebhookDelivery(db, &models.WebhookDelivery{ID: id, AccountID: tn.accountID, InstallationID: &tn.installationID,
			OrderID: &o.ID, JobID: &jobs[0].ID, Run: 1, Event: webhooks.EventJobFailed, Payload: models.JSON(`{}`), CallbackURL: ep.URL,
			EndpointID: &ep.ID}); err != nil {
			t.Fatal(err)
		}

		// The client's own replay route refuses it: the endpoint is disabled.
		now := time.Now().UTC()
		if err := db.Model(&models.WebhookEndpoint{}).Where("id = ?", ep.ID).
			Updates(map[string]any{"status": models.EndpointDisabled, "disabled_reason": "manual", "disabled_at": now}).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := newSupportEngine(db, tc).Webhooks.ReplayWebhook(ctx, engine.WebhookScope{AccountID: tn.accountID, InstallationID: tn.installationID}, id); err == nil {
			t.Fatalf("the API's replay of a delivery to a disabled endpoint was not refused")
		}
		n := tc.count()
		res, err := newSupportEngine(db, tc).Support.ReplayWebhook(ctx, id)
		if err == nil {
			t.Errorf("admin webhooks replay of a delivery to a disabled endpoint = %+v (status %q, %d workflow start(s)); want a refusal like the API's 409",
				res, res.Status, tc.count()-n)
		}
		wantKind(t, err, engine.KindConflict, "a disabled endpoint")
		if tc.count() != n {
			t.Errorf("%d workflow start(s) for a refused replay", tc.count()-n)
		}

		// Deleted endpoint: the same.
		if err := db.Model(&models.WebhookEndpoint{}).Where("id = ?", ep.ID).Update("deleted_at", now).Error; err != nil {
			t.Fatal(err)
		}
		n = tc.count()
		res, err = newSupportEngine(db, tc).Support.ReplayWebhook(ctx, id)
		if err == nil {
			t.Errorf("admin webhooks replay of a delivery to a deleted endpoint = %+v (%d workflow start(s)); want a refusal like the API's 409",
				res, tc.count()-n)
		}
		wantKind(t, err, engine.KindConflict, "a deleted endpoint")
	})
}

// A delivery recorded before endpoints existed (migration 0016) for an installation without a
// callback URL has no endpoint: every attempt of it fails for want of a URL, so the API's replay
// and `shotflow admin webhooks replay` (and its check before dialling Temporal) refuse it
// KindConflict, as one to a deleted endpoint, and start nothing. The external API's replay answers
// the same refusal for an account's own delivery (which always has an endpoint, but the refusal
// must hold should one lack it): its message speaks of the delivery, not of an installation.
func TestReplayOfADeliveryWithoutEndpointIsRefused(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		tn := newSupportTenant(t, db, 1)
		o, jobs := submitOrder(t, newSupportEngine(db, tc), tn, 1, "cup")
		failRun(t, db, jobs[0].ID, 1, errorcat.ContentPolicy)
		id := models.WebhookDeliveryID(jobs[0].ID, 1, webhooks.EventJobFailed)
		if _, err := models.CreateWebhookDelivery(db, &models.WebhookDelivery{ID: id, AccountID: tn.accountID, InstallationID: &tn.installationID,
			OrderID: &o.ID, JobID: &jobs[0].ID, Run: 1, Event: webhooks.EventJobFailed, Payload: models.JSON(`{}`),
			Status: models.WebhookFailed}); err != nil {
			t.Fatal(err)
		}
		own := models.NewID() // the account's own delivery, no installation's
		if _, err := models.CreateWebhookDelivery(db, &models.WebhookDelivery{ID: own, AccountID: tn.accountID,
			Event: webhooks.EventJobFailed, Payload: models.JSON(`{}`), Status: models.WebhookFailed}); err != nil {
			t.Fatal(err)
		}
		s := newSupportEngine(db, tc)
		n := tc.count() // the order's start
		for what, replay := range map[string]func() error{
			"the plugin API's replay": func() error {
				_, err := s.Webhooks.ReplayWebhook(ctx, engine.WebhookScope{AccountID: tn.accountID, InstallationID: tn.installationID}, id)
				return err
			},
			"admin's replay": func() error { _, err := s.Support.ReplayWebhook(ctx, id); return err },
			"admin's check":  func() error { return s.Support.CheckWebhookReplay(ctx, id) },
		} {
			e := wantKind(t, replay(), engine.KindConflict, what)
			assert.Contains(t, e.Message, "no endpoint", what)
		}
		for what, replay := range map[string]func() error{
			"the external API's replay": func() error {
				_, err := s.Webhooks.ReplayWebhook(ctx, engine.WebhookScope{AccountID: tn.accountID}, own)
				return err
			},
			"admin's replay of the account's": func() error { _, err := s.Support.ReplayWebhook(ctx, own); return err },
		} {
			e := wantKind(t, replay(), engine.KindConflict, what)
			assert.Contains(t, e.Message, "no endpoint", what)
			assert.NotContains(t, strings.ToLower(e.Message), "installation", "%s: %s", what, e.Message)
			assert.NotContains(t, e.Message, "callback URL", "%s: %s", what, e.Message)
		}
		assert.Equal(t, n, tc.count(), "a refused replay starts no workflow")
		for _, id := range []string{id, own} {
			d, err := models.GetWebhookDelivery(db, id)
			require.NoError(t, err)
			assert.Equal(t, models.WebhookFailed, d.Status)
			assert.Zero(t, d.Attempts)
		}
	})
}

// docs/operations.md, "For support staff": a merchant reports the `webhook-id` their receiver got,
// which is the event's ID. `orders show` names it beside each delivery (event_id), and
// `webhooks replay` takes it when the event has one delivery; with several it names them.
func TestSupportFindsAndReplaysTheWebhookIDAMerchantReports(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := newSupportEngine(db, &recordingTemporal{})
		tn := newSupportTenant(t, db, 10) // one endpoint at the installation's callback URL
		o, jobs := submitOrder(t, s, tn, 1, "mug")
		failRun(t, db, jobs[0].ID, 1, errorcat.ContentPolicy)
		jobID := jobs[0].ID
		ev := &models.WebhookEvent{ID: models.EventID(jobID, "1", webhooks.EventJobFailed), AccountID: tn.accountID,
			InstallationID: &tn.installationID, Type: webhooks.EventJobFailed, Payload: models.JSON(`{}`),
			OrderID: &o.ID, JobID: &jobID, CreatedAt: time.Now().UTC()}
		ds, err := models.NewStore(db).RecordEvent(ctx, ev, models.EventDeliveries{Run: 1})
		if err != nil || len(ds) != 1 {
			t.Fatalf("record event: %v %d", err, len(ds))
		}
		webhookID := ev.ID // what the receiver sees as webhook-id (docs/webhooks.md, "The request")

		v, err := s.Support.ShowOrder(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(v.Deliveries)
		if !strings.Contains(string(out), webhookID) {
			t.Errorf("orders show never names the webhook-id %s the receiver got; its deliveries: %s", webhookID, out)
		}
		if _, err := s.Support.ReplayWebhook(ctx, webhookID); err != nil {
			t.Errorf("admin webhooks replay <webhook-id the merchant reports>: %v", err)
		}
		// A second endpoint: the event now has two deliveries, and its ID names neither alone.
		ep2 := models.WebhookEndpoint{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID,
			URL: "https://shop.example/second", Status: models.EndpointEnabled, Events: []string{webhooks.EventJobFailed},
			CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
		if err := db.Create(&ep2).Error; err != nil {
			t.Fatal(err)
		}
		two := &models.WebhookEvent{ID: models.EventID(jobID, "2", webhooks.EventJobFailed), AccountID: tn.accountID,
			InstallationID: &tn.installationID, Type: webhooks.EventJobFailed, Payload: models.JSON(`{}`),
			OrderID: &o.ID, JobID: &jobID, CreatedAt: time.Now().UTC()}
		if ds, err := models.NewStore(db).RecordEvent(ctx, two, models.EventDeliveries{Run: 2}); err != nil || len(ds) != 2 {
			t.Fatalf("record the second event: %v %d", err, len(ds))
		}
		_, err = s.Support.ReplayWebhook(ctx, two.ID)
		e := wantKind(t, err, engine.KindConflict, "an event of two deliveries")
		if !strings.Contains(e.Message, "2 endpoints") {
			t.Errorf("message %q", e.Message)
		}
	})
}
