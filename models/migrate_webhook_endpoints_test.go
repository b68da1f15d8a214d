package models_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A database from before endpoints upgrades through 0016 without a change a plugin could see: an
// installation's callback URL becomes its one endpoint, subscribed to the three job events it
// received; an installation without one gets none; every delivery keeps its id, body, status and
// attempts, and becomes an event of the same id (its webhook-id), delivered to that endpoint.
func TestMigrationTurnsCallbackURLsIntoEndpoints(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 15)
		t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Old', ?, ?)", t0, t0)
		testdb.MustExec(t, db, `INSERT INTO installations (id, account_id, name, callback_url, webhook_secret_enc, created_at, updated_at)
				VALUES ('inst-hook', 'acc', 'shop', 'https://shop.example/hooks', 'x', ?, ?)`, t0, t0)
		testdb.MustExec(t, db, `INSERT INTO installations (id, account_id, name, webhook_secret_enc, created_at, updated_at)
				VALUES ('inst-none', 'acc', 'quiet', 'x', ?, ?)`, t0, t0)
		testdb.MustExec(t, db, `INSERT INTO orders (id, account_id, installation_id, api, job_type, session_config, status, jobs_total, created_at, updated_at)
				VALUES ('order-1', 'acc', 'inst-hook', 'plugin', 'photo_shoot', '{}', 'completed', 1, ?, ?)`, t0, t0)
		testdb.MustExec(t, db, `INSERT INTO jobs (id, order_id, account_id, installation_id, job_type, position, ai_model, aspect_ratio, credit_cost, status, created_at, updated_at)
				VALUES ('job-1', 'order-1', 'acc', 'inst-hook', 'photo_shoot', 0, 'local/studio-v1', '1:1', 1, 'completed', ?, ?)`, t0, t0)
		body := `{"event":"job.completed","delivery_id":"dlv-1","delivery_created_at":"2026-06-01T09:00:00Z","id":"job-1"}`
		testdb.MustExec(t, db, `INSERT INTO webhook_deliveries (id, account_id, installation_id, order_id, job_id, run, event, payload, callback_url, status, attempts, created_at, updated_at)
				VALUES ('dlv-1', 'acc', 'inst-hook', 'order-1', 'job-1', 1, 'job.completed', ?, 'https://shop.example/hooks', 'failed', 1, ?, ?)`, body, t0, t0)
		testdb.MustExec(t, db, `INSERT INTO webhook_attempts (id, delivery_id, attempt, started_at, status_code, latency_ms, error, created_at)
				VALUES ('att-1', 'dlv-1', 1, ?, 500, 12, 'HTTP 500', ?)`, t0, t0)

		if _, err := models.Migrate(t.Context(), db); err != nil {
			t.Fatalf("migrate a database with a callback URL and a delivery: %v", err)
		}

		var endpoints []models.WebhookEndpoint
		if err := db.Find(&endpoints).Error; err != nil {
			t.Fatal(err)
		}
		if len(endpoints) != 1 {
			t.Fatalf("%d endpoints, want the callback URL's only: %+v", len(endpoints), endpoints)
		}
		ep := endpoints[0]
		if ep.InstallationID == nil || *ep.InstallationID != "inst-hook" || ep.AccountID != "acc" || ep.URL != "https://shop.example/hooks" ||
			ep.Status != models.EndpointEnabled || !slices.Equal([]string(ep.Events), models.CallbackEvents) || !models.IsUUID(ep.ID) ||
			!ep.CreatedAt.Equal(t0) || ep.DeletedAt != nil || ep.SecretEnc != "" {
			t.Fatalf("endpoint = %+v", ep)
		}

		d, err := models.GetWebhookDelivery(db, "dlv-1")
		if err != nil {
			t.Fatal(err)
		}
		if d.EventID != "dlv-1" || d.EndpointID == nil || *d.EndpointID != ep.ID || d.Status != models.WebhookFailed || d.Attempts != 1 ||
			d.Job() != "job-1" || d.Installation() != "inst-hook" {
			t.Fatalf("delivery = %+v", d)
		}
		var ev models.WebhookEvent
		if err := db.Take(&ev, "id = ?", "dlv-1").Error; err != nil {
			t.Fatal(err)
		}
		var got, want map[string]any
		_ = json.Unmarshal(ev.Payload, &got)
		_ = json.Unmarshal([]byte(body), &want)
		if ev.Type != "job.completed" || ev.InstallationID == nil || *ev.InstallationID != "inst-hook" || ev.JobID == nil || *ev.JobID != "job-1" ||
			ev.Test || !ev.CreatedAt.Equal(t0) || len(got) != len(want) || got["delivery_id"] != "dlv-1" {
			t.Fatalf("event = %+v (%s)", ev, ev.Payload)
		}
		attempts, err := models.WebhookAttempts(db, "dlv-1")
		if err != nil || len(attempts) != 1 || attempts[0].ID != "att-1" {
			t.Fatalf("attempts = %+v, %v", attempts, err)
		}

		// Events without a job or an installation now have deliveries; one per event and endpoint.
		now := time.Now().UTC()
		test := models.WebhookDelivery{ID: models.NewID(), EventID: models.NewID(), EndpointID: &ep.ID, AccountID: "acc", Run: 0,
			Event: "webhook.test", CallbackURL: ep.URL, CreatedAt: now}
		if created, err := models.CreateWebhookDelivery(db, &test); err != nil || !created {
			t.Fatalf("a delivery without a job: %v, %v", created, err)
		}
		again := test
		again.ID = models.NewID()
		if created, err := models.CreateWebhookDelivery(db, &again); err != nil || created {
			t.Fatalf("a second delivery of the event to the endpoint: %v, %v; want none", created, err)
		}
	})
}

// External keys with the default scopes gain content.webhooks through 0017 and content.billing
// through 0024, each once; a narrowed key, a key that has a scope already and a plugin key are
// left as they were.
func TestMigrationGivesDefaultExternalKeysTheWebhooksAndBillingScopes(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 16)
		now := time.Now().UTC()
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Team', ?, ?)", now, now)
		keys := map[string]struct{ kind, before, after string }{
			"full":     {"external", "content.register content.read", "content.register content.read content.webhooks content.billing"},
			"reserved": {"external", "content.register content.read queue.nudge", "content.register content.read queue.nudge content.webhooks content.billing"},
			"narrow":   {"external", "content.read", "content.read"},
			"already":  {"external", "content.webhooks content.register content.read", "content.webhooks content.register content.read content.billing"},
			"billing":  {"external", "content.billing content.register content.read", "content.billing content.register content.read content.webhooks"},
			"plugin":   {"plugin", "plugin.jobs:read content.register content.read", "plugin.jobs:read content.register content.read"},
		}
		for id, k := range keys {
			testdb.MustExec(t, db, `INSERT INTO api_keys (id, kind, account_id, secret_hash, scopes, created_at) VALUES (?, ?, 'acc', 'h', ?, ?)`,
				id, k.kind, k.before, now)
		}
		if _, err := models.Migrate(t.Context(), db); err != nil {
			t.Fatal(err)
		}
		for id, k := range keys {
			var scopes string
			if err := db.Raw("SELECT scopes FROM api_keys WHERE id = ?", id).Scan(&scopes).Error; err != nil {
				t.Fatal(err)
			}
			if scopes != k.after {
				t.Errorf("key %s: scopes %q, want %q", id, scopes, k.after)
			}
		}
	})
}
