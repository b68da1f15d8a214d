package models_test

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// pluginJob creates an account, an installation with a callback URL and one failed job of it.
func pluginJob(t *testing.T, db *gorm.DB, box models.Sealer) (*models.Installation, *models.Job) {
	t.Helper()
	acc, err := models.CreateAccount(db, "Acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	created, err := models.CreateInstallation(db, box, models.NewInstallation{
		AccountID: acc.ID, Name: "shop", CallbackURL: "https://shop.example/hook",
	}, "whsec_first")
	if err != nil {
		t.Fatal(err)
	}
	inst := created.Installation
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderFailed, JobsTotal: 1,
		CreatedAt: now, UpdatedAt: now}
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, InstallationID: &inst.ID,
		JobType: jobtype.PhotoShoot, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
		Status: status.JobFailed, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&order).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&job).Error; err != nil {
		t.Fatal(err)
	}
	return &inst, &job
}

func newDelivery(inst *models.Installation, job *models.Job, id string) *models.WebhookDelivery {
	return &models.WebhookDelivery{
		ID: id, EventID: id, AccountID: inst.AccountID, InstallationID: &inst.ID, OrderID: &job.OrderID, JobID: &job.ID, Run: job.Run,
		Event: "job.failed", Payload: models.JSON(`{"id":"` + id + `","type":"job.failed"}`), CallbackURL: inst.CallbackURL,
	}
}

func TestWebhookDeliveryIsCreatedOncePerEventAndEndpoint(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		inst, job := pluginJob(t, db, testBox(t))
		id := models.WebhookDeliveryID(job.ID, 1, "job.failed")
		if id != models.WebhookDeliveryID(job.ID, 1, "job.failed") || !models.IsUUID(id) {
			t.Fatalf("delivery ID %q is not a stable UUID", id)
		}
		if id == models.WebhookDeliveryID(job.ID, 2, "job.failed") || id == models.WebhookDeliveryID(job.ID, 1, "job.completed") {
			t.Fatal("delivery IDs of different runs or events collide")
		}
		endpoint := models.WebhookEndpoint{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID,
			URL: "https://shop.example/hook", Events: models.StringList{"job.failed"}, Status: models.EndpointEnabled,
			CreatedAt: time.Now(), UpdatedAt: time.Now()}
		if err := db.Create(&endpoint).Error; err != nil {
			t.Fatal(err)
		}
		first := newDelivery(inst, job, id)
		first.EndpointID = &endpoint.ID
		created, err := models.CreateWebhookDelivery(db, first)
		if err != nil || !created {
			t.Fatalf("first create = %v, %v", created, err)
		}
		// A replayed activity: same ID.
		again := newDelivery(inst, job, id)
		again.Payload = models.JSON(`{"changed":true}`)
		created, err = models.CreateWebhookDelivery(db, again)
		if err != nil || created {
			t.Fatalf("second create with the same ID = %v, %v; want false, nil", created, err)
		}
		// Another ID for the same event and endpoint is refused by the unique index, quietly.
		second := newDelivery(inst, job, models.NewID())
		second.EventID, second.EndpointID = id, &endpoint.ID
		created, err = models.CreateWebhookDelivery(db, second)
		if err != nil || created {
			t.Fatalf("create with a second ID for the same event and endpoint = %v, %v; want false, nil", created, err)
		}
		var n int64
		db.Model(&models.WebhookDelivery{}).Where("job_id = ?", job.ID).Count(&n)
		if n != 1 {
			t.Fatalf("%d deliveries for one job run and event, want 1", n)
		}
		d, err := models.GetWebhookDelivery(db, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != models.WebhookPending || d.Attempts != 0 || string(d.Payload) == `{"changed":true}` || d.Order() != job.OrderID {
			t.Fatalf("delivery = %+v (payload %s)", d, d.Payload)
		}
		if _, err := models.FindWebhookDelivery(db, inst.ID, id); err != nil {
			t.Fatalf("find by its installation: %v", err)
		}
		if _, err := models.FindWebhookDelivery(db, models.NewID(), id); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("find by another installation = %v, want ErrNotFound", err)
		}
	})
}

func TestRecordWebhookAttempts(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		inst, job := pluginJob(t, db, testBox(t))
		id := models.WebhookDeliveryID(job.ID, 1, "job.failed")
		if _, err := models.CreateWebhookDelivery(db, newDelivery(inst, job, id)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		next := t0.Add(5 * time.Second)
		if err := models.RecordWebhookAttempt(db, id, models.AttemptRecord{
			Attempt: 1, CallbackURL: "https://shop.example/new", StartedAt: t0, StatusCode: 503,
			Latency: 42 * time.Millisecond, Error: "HTTP 503", NextAttemptAt: &next,
		}); err != nil {
			t.Fatal(err)
		}
		d, _ := models.GetWebhookDelivery(db, id)
		if d.Status != models.WebhookDelivering || d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 503 ||
			d.LastError != "HTTP 503" || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(next) || d.DeliveredAt != nil ||
			d.CallbackURL != "https://shop.example/new" {
			t.Fatalf("after a failed attempt: %+v", d)
		}
		if err := models.RecordWebhookAttempt(db, id, models.AttemptRecord{
			Attempt: 2, CallbackURL: inst.CallbackURL, StartedAt: t0.Add(6 * time.Second), Error: "no answer within 15s",
		}); err != nil {
			t.Fatal(err)
		}
		if err := models.RecordWebhookAttempt(db, id, models.AttemptRecord{
			Attempt: 1, Replay: true, CallbackURL: inst.CallbackURL, StartedAt: t0.Add(time.Minute), StatusCode: 204, Delivered: true,
		}); err != nil {
			t.Fatal(err)
		}
		d, _ = models.GetWebhookDelivery(db, id)
		if d.Status != models.WebhookDelivered || d.Attempts != 3 || *d.LastStatusCode != 204 || d.LastError != "" ||
			d.DeliveredAt == nil || d.NextAttemptAt != nil {
			t.Fatalf("after a successful replay: %+v", d)
		}
		attempts, err := models.WebhookAttempts(db, id)
		if err != nil || len(attempts) != 3 {
			t.Fatalf("attempts = %+v, %v", attempts, err)
		}
		if a := attempts[0]; a.Attempt != 1 || a.Replay || *a.StatusCode != 503 || a.LatencyMS != 42 || a.Error != "HTTP 503" || !a.StartedAt.Equal(t0) {
			t.Fatalf("first attempt = %+v", a)
		}
		if a := attempts[1]; a.StatusCode != nil || a.Error != "no answer within 15s" {
			t.Fatalf("second attempt = %+v", a)
		}
		if a := attempts[2]; !a.Replay || *a.StatusCode != 204 {
			t.Fatalf("replay attempt = %+v", a)
		}
		// A run that gives up does not undo a delivery made in the meantime.
		if ended, err := models.NewStore(db).MarkWebhookFailed(t.Context(), id); err != nil || ended {
			t.Fatalf("MarkWebhookFailed of a delivered delivery: ended %v, %v", ended, err)
		}
		if d, _ = models.GetWebhookDelivery(db, id); d.Status != models.WebhookDelivered {
			t.Fatalf("MarkWebhookFailed overwrote a delivered delivery: %s", d.Status)
		}
		if err := models.RecordWebhookAttempt(db, models.NewID(), models.AttemptRecord{Attempt: 1}); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("attempt of an unknown delivery = %v, want ErrNotFound", err)
		}
	})
}

// A delivery keeps its latest models.MaxKeptAttempts attempts: replays and recovers make new runs
// of it without end (bounded only by the rate limit and the 30-day log), so recording an attempt
// beyond the bound deletes the oldest, and its attempts column counts every one. The reads (the
// delivery log of both APIs, and support's order history) show the same latest ones, also of a
// delivery recorded before the bound, until its next attempt prunes it.
func TestDeliveryKeepsItsLatestAttempts(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		store := models.NewStore(db)
		inst, job := pluginJob(t, db, testBox(t))
		id := models.WebhookDeliveryID(job.ID, 1, "job.failed")
		if _, err := models.CreateWebhookDelivery(db, newDelivery(inst, job, id)); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
		const made = models.MaxKeptAttempts + 5
		for i := range made {
			// Runs of eight attempts, each run after the first a replay; the last one is delivered.
			r := models.AttemptRecord{Attempt: i%8 + 1, Replay: i >= 8, CallbackURL: inst.CallbackURL,
				StartedAt: t0.Add(time.Duration(i) * time.Minute), StatusCode: 500 + i, Error: "HTTP 5xx"}
			if i == made-1 {
				r.StatusCode, r.Error, r.Delivered = 204, "", true
			}
			if err := models.RecordWebhookAttempt(db, id, r); err != nil {
				t.Fatal(err)
			}
		}
		latest := func(what string, got []models.WebhookAttempt) {
			t.Helper()
			if len(got) != models.MaxKeptAttempts {
				t.Fatalf("%s: %d attempts, want the latest %d of %d", what, len(got), models.MaxKeptAttempts, made)
			}
			for i, a := range got {
				if want := t0.Add(time.Duration(made-models.MaxKeptAttempts+i) * time.Minute); !a.StartedAt.Equal(want) {
					t.Fatalf("%s: attempt %d began at %v, want %v (the latest, oldest first)", what, i, a.StartedAt, want)
				}
			}
			if a := got[len(got)-1]; a.StatusCode == nil || *a.StatusCode != 204 {
				t.Fatalf("%s: the last attempt is %+v, want the delivered one", what, a)
			}
		}
		stored, err := models.WebhookAttempts(db, id)
		if err != nil {
			t.Fatal(err)
		}
		latest("stored", stored)
		d, _ := models.GetWebhookDelivery(db, id)
		if d.Attempts != made || d.Status != models.WebhookDelivered {
			t.Fatalf("delivery = %+v, want %d attempts counted and delivered", d, made)
		}

		// Rows of a delivery recorded before the bound: the reads show its latest ones alone.
		for i := 1; i <= 4; i++ {
			code := 599
			if err := db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: id, Attempt: 1,
				StartedAt: t0.Add(-time.Duration(i) * time.Hour), StatusCode: &code, Error: "HTTP 599", CreatedAt: t0}).Error; err != nil {
				t.Fatal(err)
			}
		}
		scope := models.WebhookScope{AccountID: inst.AccountID, InstallationID: inst.ID}
		one, err := store.ScopedWebhookDelivery(ctx, scope, id)
		if err != nil {
			t.Fatal(err)
		}
		latest("GET /webhook-deliveries/{id}", one.Attempts)
		page, err := store.WebhookDeliveries(ctx, scope, models.DeliveryQuery{Limit: 10})
		if err != nil || len(page) != 1 {
			t.Fatalf("GET /webhook-deliveries: %d, %v", len(page), err)
		}
		latest("GET /webhook-deliveries", page[0].Attempts)
		h, err := store.OrderHistory(ctx, job.OrderID)
		if err != nil {
			t.Fatal(err)
		}
		latest("orders show", h.Attempts)

		// The next attempt prunes them.
		if err := models.RecordWebhookAttempt(db, id, models.AttemptRecord{Attempt: 1, Replay: true, CallbackURL: inst.CallbackURL,
			StartedAt: t0.Add(made * time.Minute), StatusCode: 204, Delivered: true}); err != nil {
			t.Fatal(err)
		}
		if stored, _ = models.WebhookAttempts(db, id); len(stored) != models.MaxKeptAttempts || !stored[0].StartedAt.Equal(t0.Add(6*time.Minute)) {
			t.Fatalf("after one more attempt: %d stored, the oldest at %v", len(stored), stored[0].StartedAt)
		}
		if d, _ = models.GetWebhookDelivery(db, id); d.Attempts != made+1 {
			t.Fatalf("attempts counted = %d, want %d", d.Attempts, made+1)
		}
	})
}

func TestMarkWebhookFailed(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		inst, job := pluginJob(t, db, testBox(t))
		id := models.WebhookDeliveryID(job.ID, 1, "job.failed")
		if _, err := models.CreateWebhookDelivery(db, newDelivery(inst, job, id)); err != nil {
			t.Fatal(err)
		}
		next := time.Now().Add(time.Hour)
		if err := models.RecordWebhookAttempt(db, id, models.AttemptRecord{Attempt: 8, StartedAt: time.Now(), StatusCode: 500, NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
		if ended, err := models.NewStore(db).MarkWebhookFailed(t.Context(), id); err != nil || !ended {
			t.Fatalf("MarkWebhookFailed: ended %v, %v", ended, err)
		}
		if again, err := models.NewStore(db).MarkWebhookFailed(t.Context(), id); err != nil || again {
			t.Fatalf("MarkWebhookFailed again: ended %v, %v; want nothing ended (it was failed already)", again, err)
		}
		d, _ := models.GetWebhookDelivery(db, id)
		if d.Status != models.WebhookFailed || d.NextAttemptAt != nil || d.Attempts != 1 {
			t.Fatalf("after giving up: %+v", d)
		}
	})
}

func TestRotateWebhookSecret(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		box := testBox(t)
		inst, _ := pluginJob(t, db, box)
		load := func() *models.Installation {
			t.Helper()
			i, err := models.GetInstallation(db, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			return i
		}
		now := time.Now().UTC()
		got, err := models.WebhookSecrets(box, load(), now)
		if err != nil || len(got) != 1 || got[0] != "whsec_first" {
			t.Fatalf("before rotation: %q, %v", got, err)
		}

		until, err := models.RotateWebhookSecret(db, box, inst.ID, "whsec_second", now)
		if err != nil {
			t.Fatal(err)
		}
		if !until.Equal(now.Add(48 * time.Hour)) {
			t.Fatalf("previous secret valid until %v, want now + 48h", until)
		}
		rotated := load()
		if rotated.WebhookSecretEnc == "" || rotated.WebhookSecretEnc == "whsec_second" {
			t.Fatal("the new secret is not stored encrypted")
		}
		got, _ = models.WebhookSecrets(box, rotated, now.Add(47*time.Hour))
		if len(got) != 2 || got[0] != "whsec_second" || got[1] != "whsec_first" {
			t.Fatalf("within 48 h: %q, want the new then the previous secret", got)
		}
		got, _ = models.WebhookSecrets(box, rotated, now.Add(48*time.Hour))
		if len(got) != 1 || got[0] != "whsec_second" {
			t.Fatalf("after 48 h: %q, want only the new secret", got)
		}

		// A second rotation keeps only the secret it replaces.
		if _, err := models.RotateWebhookSecret(db, box, inst.ID, "whsec_third", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, _ = models.WebhookSecrets(box, load(), now.Add(2*time.Hour))
		if len(got) != 2 || got[0] != "whsec_third" || got[1] != "whsec_second" {
			t.Fatalf("after a second rotation: %q", got)
		}
		if _, err := models.RotateWebhookSecret(db, box, models.NewID(), "whsec_x", now); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("rotating an unknown installation = %v, want ErrNotFound", err)
		}
	})
}
