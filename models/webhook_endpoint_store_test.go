package models_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// webhookTenants is two installations of one account, that account's own scope, and another
// account's own scope.
type webhookTenants struct {
	inst, sibling, account, other models.WebhookScope
	instRow                       *models.Installation
}

func newWebhookTenants(t *testing.T, db *gorm.DB, box models.Sealer) webhookTenants {
	t.Helper()
	acc, err := models.CreateAccount(db, "Acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	other, err := models.CreateAccount(db, "Other", 10)
	if err != nil {
		t.Fatal(err)
	}
	var insts []*models.Installation
	for _, name := range []string{"shop", "sibling"} {
		created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: name}, "whsec_"+name)
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, &created.Installation)
	}
	return webhookTenants{
		inst:    models.WebhookScope{AccountID: acc.ID, InstallationID: insts[0].ID},
		sibling: models.WebhookScope{AccountID: acc.ID, InstallationID: insts[1].ID},
		account: models.WebhookScope{AccountID: acc.ID},
		other:   models.WebhookScope{AccountID: other.ID},
		instRow: insts[0],
	}
}

// endpointOf is a new endpoint row of the scope.
func endpointOf(scope models.WebhookScope, url string) *models.WebhookEndpoint {
	ep := &models.WebhookEndpoint{AccountID: scope.AccountID, URL: url, Events: models.StringList{"job.completed"}}
	if scope.Plugin() {
		id := scope.InstallationID
		ep.InstallationID = &id
	}
	return ep
}

func mustCreateEndpoint(t *testing.T, store *models.Store, scope models.WebhookScope, url string) *models.WebhookEndpoint {
	t.Helper()
	ep := endpointOf(scope, url)
	if err := store.CreateWebhookEndpoint(context.Background(), ep); err != nil {
		t.Fatal(err)
	}
	return ep
}

func TestWebhookEndpointStoreLimitHoldsUnderConcurrentCreates(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		for _, scope := range []models.WebhookScope{ten.inst, ten.account} {
			var wg sync.WaitGroup
			errs := make([]error, 20)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = store.CreateWebhookEndpoint(context.Background(), endpointOf(scope, fmt.Sprintf("https://hooks.example/%d", i)))
				}()
			}
			wg.Wait()
			created, refused := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					created++
				case errors.Is(err, models.ErrEndpointLimit):
					refused++
				default:
					t.Fatalf("create: %v", err)
				}
			}
			if created != models.MaxWebhookEndpoints || refused != 20-models.MaxWebhookEndpoints {
				t.Fatalf("scope %+v: %d created, %d refused; want %d and %d", scope, created, refused, models.MaxWebhookEndpoints, 20-models.MaxWebhookEndpoints)
			}
			live, err := store.WebhookEndpoints(context.Background(), scope, nil, 100)
			if err != nil || len(live) != models.MaxWebhookEndpoints {
				t.Fatalf("live endpoints: %d, %v", len(live), err)
			}
			// A deleted endpoint frees its place; the next create takes it and the one after is refused.
			if _, err := store.DeleteWebhookEndpoint(context.Background(), scope, live[0].ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := store.CreateWebhookEndpoint(context.Background(), endpointOf(scope, "https://hooks.example/again")); err != nil {
				t.Fatalf("create after delete: %v", err)
			}
			if err := store.CreateWebhookEndpoint(context.Background(), endpointOf(scope, "https://hooks.example/over")); !errors.Is(err, models.ErrEndpointLimit) {
				t.Fatalf("11th live endpoint: %v, want ErrEndpointLimit", err)
			}
		}
		// The installation's ten and the account's ten are separate: the sibling still has room.
		mustCreateEndpoint(t, store, ten.sibling, "https://hooks.example/sibling")
		var total int64
		if err := db.Model(&models.WebhookEndpoint{}).Where("deleted_at IS NULL").Count(&total).Error; err != nil {
			t.Fatal(err)
		}
		if total != 2*models.MaxWebhookEndpoints+1 {
			t.Fatalf("%d live endpoints in all, want %d", total, 2*models.MaxWebhookEndpoints+1)
		}
		// An owner that does not exist is not found, and nothing is written.
		err := store.CreateWebhookEndpoint(context.Background(), endpointOf(models.WebhookScope{AccountID: ten.other.AccountID, InstallationID: ten.instRow.ID}, "https://x.example"))
		if !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("installation of another account: %v, want ErrNotFound", err)
		}
		if err := store.CreateWebhookEndpoint(context.Background(), endpointOf(models.WebhookScope{AccountID: models.NewID()}, "https://x.example")); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown account: %v, want ErrNotFound", err)
		}
	})
}

func TestWebhookEndpointStoreScoping(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		scopes := []models.WebhookScope{ten.inst, ten.sibling, ten.account, ten.other}
		eps := make([]*models.WebhookEndpoint, len(scopes))
		for i, scope := range scopes {
			eps[i] = mustCreateEndpoint(t, store, scope, fmt.Sprintf("https://hooks.example/%d", i))
		}
		for i, scope := range scopes {
			list, err := store.WebhookEndpoints(ctx, scope, nil, 50)
			if err != nil || len(list) != 1 || list[0].ID != eps[i].ID {
				t.Fatalf("scope %d lists %+v, %v; want only its own", i, list, err)
			}
			for j, ep := range eps {
				got, err := store.WebhookEndpoint(ctx, scope, ep.ID)
				if i == j {
					if err != nil || got.URL != ep.URL || !slices.Equal(got.Events, ep.Events) || got.Status != models.EndpointEnabled {
						t.Fatalf("own endpoint: %+v, %v", got, err)
					}
					continue
				}
				if !errors.Is(err, models.ErrNotFound) {
					t.Fatalf("scope %d reads endpoint of scope %d: %v", i, j, err)
				}
				url := "https://taken.example"
				if _, err := store.UpdateWebhookEndpoint(ctx, scope, ep.ID, models.EndpointChanges{URL: &url}, time.Now()); !errors.Is(err, models.ErrNotFound) {
					t.Fatalf("scope %d updates endpoint of scope %d: %v", i, j, err)
				}
				if _, err := store.DeleteWebhookEndpoint(ctx, scope, ep.ID, time.Now()); !errors.Is(err, models.ErrNotFound) {
					t.Fatalf("scope %d deletes endpoint of scope %d: %v", i, j, err)
				}
			}
		}
		// Nothing of another scope changed.
		for _, ep := range eps {
			var row models.WebhookEndpoint
			if err := db.Take(&row, "id = ?", ep.ID).Error; err != nil || row.URL != ep.URL || row.DeletedAt != nil {
				t.Fatalf("endpoint changed by another scope: %+v, %v", row, err)
			}
		}
	})
}

func TestWebhookEndpointStoreCursorPaging(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		var want []string // newest first
		// Two endpoints share a creation time: the id orders them.
		for i, at := range []time.Time{base, base.Add(time.Second), base.Add(time.Second), base.Add(2 * time.Second), base.Add(3 * time.Second)} {
			ep := endpointOf(ten.inst, fmt.Sprintf("https://hooks.example/%d", i))
			ep.CreatedAt = at
			if err := store.CreateWebhookEndpoint(ctx, ep); err != nil {
				t.Fatal(err)
			}
			want = append(want, ep.ID)
		}
		gone := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/deleted")
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.inst, gone.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		all, err := store.WebhookEndpoints(ctx, ten.inst, nil, 50)
		if err != nil || len(all) != 5 {
			t.Fatalf("list: %d, %v", len(all), err)
		}
		for i := 1; i < len(all); i++ {
			a, b := all[i-1], all[i]
			if a.CreatedAt.Before(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID) {
				t.Fatalf("not newest first at %d: %v %s, %v %s", i, a.CreatedAt, a.ID, b.CreatedAt, b.ID)
			}
		}
		var paged []string
		var cur *models.WebhookCursor
		for range 10 {
			page, err := store.WebhookEndpoints(ctx, ten.inst, cur, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, ep := range page {
				paged = append(paged, ep.ID)
			}
			last := page[len(page)-1]
			cur = &models.WebhookCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		var listed []string
		for _, ep := range all {
			listed = append(listed, ep.ID)
		}
		if !slices.Equal(paged, listed) {
			t.Fatalf("pages %v, want %v", paged, listed)
		}
		for _, id := range want {
			if !slices.Contains(paged, id) {
				t.Fatalf("endpoint %s missing from the pages", id)
			}
		}
	})
}

func TestWebhookEndpointStoreUpdateAndDelete(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/a")

		// A partial update changes only what it names.
		desc := "orders"
		at := time.Now().Add(time.Minute)
		got, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{Description: &desc}, at)
		if err != nil || got.Description != desc || got.URL != ep.URL || !slices.Equal(got.Events, ep.Events) || got.Status != models.EndpointEnabled {
			t.Fatalf("update description: %+v, %v", got, err)
		}
		if !got.UpdatedAt.Equal(at.UTC().Truncate(time.Microsecond)) {
			t.Fatalf("updated_at %v, want %v", got.UpdatedAt, at)
		}
		url, events := "https://hooks.example/b", []string{"job.started", "order.completed"}
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{URL: &url, Events: &events}, time.Now()); err != nil {
			t.Fatal(err)
		}
		stored, err := store.WebhookEndpoint(ctx, ten.inst, ep.ID)
		if err != nil || stored.URL != url || !slices.Equal(stored.Events, events) || stored.Description != desc {
			t.Fatalf("stored after update: %+v, %v", stored, err)
		}

		// Disabling records the manual reason and when; disabling again keeps them.
		disabled, enabled := models.EndpointDisabled, models.EndpointEnabled
		first := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{Status: &disabled}, first); err != nil {
			t.Fatal(err)
		}
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{Status: &disabled}, time.Now()); err != nil {
			t.Fatal(err)
		}
		stored, _ = store.WebhookEndpoint(ctx, ten.inst, ep.ID)
		if stored.Status != disabled || stored.DisabledReason != models.EndpointDisabledManually || stored.DisabledAt == nil || !stored.DisabledAt.Equal(first) {
			t.Fatalf("disabled: %+v", stored)
		}
		// Enabling clears the reason, the time and the failing window.
		if err := db.Model(&models.WebhookEndpoint{}).Where("id = ?", ep.ID).Update("failing_since", first).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{Status: &enabled}, time.Now()); err != nil {
			t.Fatal(err)
		}
		stored, _ = store.WebhookEndpoint(ctx, ten.inst, ep.ID)
		if stored.Status != enabled || stored.DisabledReason != "" || stored.DisabledAt != nil || stored.FailingSince != nil {
			t.Fatalf("enabled: %+v", stored)
		}
		// An unknown status is refused and changes nothing.
		bogus := "paused"
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{Status: &bogus, URL: &desc}, time.Now()); err == nil {
			t.Fatal("status paused accepted")
		}
		if stored, _ = store.WebhookEndpoint(ctx, ten.inst, ep.ID); stored.URL != url {
			t.Fatalf("refused update changed the url to %q", stored.URL)
		}

		// A soft delete keeps the row, which is no longer found, listed, updated or deleted.
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.inst, ep.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		var row models.WebhookEndpoint
		if err := db.Take(&row, "id = ?", ep.ID).Error; err != nil || row.DeletedAt == nil {
			t.Fatalf("deleted row: %+v, %v", row, err)
		}
		if _, err := store.WebhookEndpoint(ctx, ten.inst, ep.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
		if list, _ := store.WebhookEndpoints(ctx, ten.inst, nil, 50); len(list) != 0 {
			t.Fatalf("deleted endpoint listed: %+v", list)
		}
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, ep.ID, models.EndpointChanges{URL: &url}, time.Now()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("update deleted: %v", err)
		}
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.inst, ep.ID, time.Now()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("delete deleted: %v", err)
		}
	})
}

func TestWebhookEndpointStoreRotateAndSecrets(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		box := testBox(t)
		ten := newWebhookTenants(t, db, box)
		ep := endpointOf(ten.account, "https://hooks.example/own")
		ep.SecretEnc = box.Seal("whsec_one")
		if err := store.CreateWebhookEndpoint(ctx, ep); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		secrets, err := models.EndpointSecrets(box, ep, nil, now)
		if err != nil || !slices.Equal(secrets, []string{"whsec_one"}) {
			t.Fatalf("secrets before rotation: %v, %v", secrets, err)
		}
		until, err := store.RotateEndpointSecret(ctx, box, ten.account, ep.ID, "whsec_two", now)
		if err != nil || !until.Equal(now.UTC().Truncate(time.Microsecond).Add(models.PreviousSecretGrace)) {
			t.Fatalf("rotate: %v, %v", until, err)
		}
		stored, _ := store.WebhookEndpoint(ctx, ten.account, ep.ID)
		if stored.SecretEnc == "whsec_two" || stored.SecretEnc == "" {
			t.Fatalf("new secret stored as %q, want it sealed", stored.SecretEnc)
		}
		if secrets, err = models.EndpointSecrets(box, stored, nil, now); err != nil || !slices.Equal(secrets, []string{"whsec_two", "whsec_one"}) {
			t.Fatalf("secrets in the grace period: %v, %v", secrets, err)
		}
		if secrets, err = models.EndpointSecrets(box, stored, nil, until.Add(time.Second)); err != nil || !slices.Equal(secrets, []string{"whsec_two"}) {
			t.Fatalf("secrets after the grace period: %v, %v", secrets, err)
		}
		// A second rotation drops the first secret.
		if _, err := store.RotateEndpointSecret(ctx, box, ten.account, ep.ID, "whsec_three", now); err != nil {
			t.Fatal(err)
		}
		stored, _ = store.WebhookEndpoint(ctx, ten.account, ep.ID)
		if secrets, _ = models.EndpointSecrets(box, stored, nil, now); !slices.Equal(secrets, []string{"whsec_three", "whsec_two"}) {
			t.Fatalf("secrets after two rotations: %v", secrets)
		}
		// Another account, an installation's scope and a deleted endpoint rotate nothing.
		for _, scope := range []models.WebhookScope{ten.other, ten.inst} {
			if _, err := store.RotateEndpointSecret(ctx, box, scope, ep.ID, "whsec_theirs", now); !errors.Is(err, models.ErrNotFound) {
				t.Fatalf("rotate from scope %+v: %v", scope, err)
			}
		}
		plugin := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/plugin")
		if _, err := store.RotateEndpointSecret(ctx, box, ten.account, plugin.ID, "whsec_theirs", now); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("rotate an installation's endpoint from the account: %v", err)
		}
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.account, ep.ID, now); err != nil {
			t.Fatal(err)
		}
		if _, err := store.RotateEndpointSecret(ctx, box, ten.account, ep.ID, "whsec_four", now); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("rotate a deleted endpoint: %v", err)
		}
		var row models.WebhookEndpoint
		_ = db.Take(&row, "id = ?", ep.ID).Error
		if secrets, _ = models.EndpointSecrets(box, &row, nil, now); secrets[0] != "whsec_three" {
			t.Fatalf("a refused rotation changed the secret: %v", secrets)
		}
		// A plugin endpoint signs with its installation's secrets.
		if secrets, err = models.EndpointSecrets(box, plugin, ten.instRow, now); err != nil || !slices.Equal(secrets, []string{"whsec_shop"}) {
			t.Fatalf("plugin endpoint's secrets: %v, %v", secrets, err)
		}
		if _, err := models.EndpointSecrets(box, plugin, nil, now); err == nil {
			t.Fatal("a plugin endpoint without its installation has secrets")
		}
	})
}

// deliveryTo stores an event of the scope and its delivery to ep in the status given (a pending one
// with its start owed when owed), and returns the delivery.
func deliveryTo(t *testing.T, db *gorm.DB, scope models.WebhookScope, ep *models.WebhookEndpoint, status string, owed bool) models.WebhookDelivery {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: scope.AccountID, InstallationID: ep.InstallationID, Type: "job.completed",
		Payload: models.JSON(`{"event":"job.completed"}`), CreatedAt: now}
	d := models.WebhookDelivery{ID: models.EventDeliveryID(ev.ID, ep.ID), EventID: ev.ID, EndpointID: &ep.ID, AccountID: scope.AccountID,
		InstallationID: ep.InstallationID, Run: 1, Event: ev.Type, CallbackURL: ep.URL, Status: status, LastError: "HTTP 503",
		CreatedAt: now, UpdatedAt: now}
	if status == models.WebhookDelivering {
		next := now.Add(time.Hour)
		d.NextAttemptAt, d.Attempts = &next, 1
	}
	if owed {
		d.StartDueAt = &now
	}
	if err := db.Create(&ev).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&d).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

// Deleting an endpoint ends, in its transaction, every delivery to it that has not ended: a held
// one (nothing would ever send it: a recover needs a live endpoint), a pending one whether its
// start is owed (the outbox would start a run only to fail it) or its run has not attempted yet,
// and one between attempts. Each becomes failed with "the endpoint was deleted", no next attempt
// and no start owed, and those that may have a running workflow (pending, delivering) are returned.
// Ended deliveries, and those of other endpoints, are left as they are.
func TestDeletingAnEndpointEndsItsWaitingDeliveries(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/gone")
		other := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/kept")
		waiting := []models.WebhookDelivery{
			deliveryTo(t, db, ten.inst, ep, models.WebhookHeld, false),
			deliveryTo(t, db, ten.inst, ep, models.WebhookPending, true),
			deliveryTo(t, db, ten.inst, ep, models.WebhookPending, false),
			deliveryTo(t, db, ten.inst, ep, models.WebhookDelivering, false),
		}
		ended := []models.WebhookDelivery{
			deliveryTo(t, db, ten.inst, ep, models.WebhookDelivered, false),
			deliveryTo(t, db, ten.inst, ep, models.WebhookFailed, false),
			deliveryTo(t, db, ten.inst, other, models.WebhookHeld, false),
			deliveryTo(t, db, ten.inst, other, models.WebhookPending, true),
		}

		running, err := store.DeleteWebhookEndpoint(ctx, ten.inst, ep.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		// The ones whose workflow may be running (not the held one, whose run stopped) are
		// returned, for the caller to cancel their workflows.
		want := []string{waiting[1].ID, waiting[2].ID, waiting[3].ID}
		slices.Sort(want)
		slices.Sort(running)
		if !slices.Equal(running, want) {
			t.Errorf("the deletion returned %v as the deliveries whose runs to cancel, want the pending and delivering ones %v", running, want)
		}
		for _, w := range waiting {
			d, err := models.GetWebhookDelivery(db, w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != models.WebhookFailed || d.LastError != models.EndpointDeletedError || d.NextAttemptAt != nil || d.StartDueAt != nil {
				t.Errorf("a %s delivery (start owed: %v) of the deleted endpoint = status %s, last error %q, next attempt %v, start due %v; want failed, %q",
					w.Status, w.StartDueAt != nil, d.Status, d.LastError, d.NextAttemptAt, d.StartDueAt, models.EndpointDeletedError)
			}
		}
		for _, e := range ended {
			d, err := models.GetWebhookDelivery(db, e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != e.Status || d.LastError != e.LastError || (d.StartDueAt == nil) != (e.StartDueAt == nil) {
				t.Errorf("delivery %s (%s, endpoint %s) changed to %s (%q)", e.ID, e.Status, *e.EndpointID, d.Status, d.LastError)
			}
		}
		if owed, err := store.DeliveriesOwedStart(ctx, ep.ID, 10); err != nil || len(owed) != 0 {
			t.Errorf("starts owed to the deleted endpoint: %d, %v", len(owed), err)
		}
		// A refused deletion (already deleted, another scope's endpoint) changes nothing.
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.sibling, other.ID, time.Now()); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("delete another installation's endpoint: %v", err)
		}
		if d, _ := models.GetWebhookDelivery(db, ended[2].ID); d.Status != models.WebhookHeld {
			t.Errorf("a refused deletion changed a delivery: %s", d.Status)
		}
	})
}

// A delivery whose run read its endpoint before the endpoint was deleted ends failed, not waiting:
// holding it (the endpoint was disabled) fails it instead, and a failed attempt that was under way
// ends it (Ended) with no next attempt, where it would have scheduled one. An attempt that
// delivered it still counts as delivered.
func TestADeliveryStoppedAfterItsEndpointWasDeletedEnds(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/gone")
		toHold := deliveryTo(t, db, ten.inst, ep, models.WebhookPending, false)
		failing := deliveryTo(t, db, ten.inst, ep, models.WebhookPending, false)
		answered := deliveryTo(t, db, ten.inst, ep, models.WebhookPending, false)
		live := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/disabled")
		kept := deliveryTo(t, db, ten.inst, live, models.WebhookPending, false)
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.inst, ep.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		// The deletion ended them; their runs, which read the endpoint before it, come back to them.
		for _, id := range []string{toHold.ID, failing.ID, answered.ID} {
			if err := db.Model(&models.WebhookDelivery{}).Where("id = ?", id).Updates(map[string]any{"status": models.WebhookPending}).Error; err != nil {
				t.Fatal(err)
			}
		}

		ended, err := store.HoldDelivery(ctx, toHold.ID, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := models.GetWebhookDelivery(db, toHold.ID); ended != models.WebhookFailed || d.Status != models.WebhookFailed || d.LastError != models.EndpointDeletedError {
			t.Errorf("holding a delivery of a deleted endpoint: ended %q, status %s (%q); want failed", ended, d.Status, d.LastError)
		}
		if again, err := store.HoldDelivery(ctx, toHold.ID, ep.ID); err != nil || again != "" {
			t.Errorf("holding it again: ended %q, %v; want nothing ended (it was already)", again, err)
		}
		next := time.Now().Add(5 * time.Minute)
		eff, err := store.RecordAttempt(ctx, failing.ID, ep.ID, models.AttemptRecord{Attempt: 1, CallbackURL: ep.URL,
			StartedAt: time.Now().Add(-time.Second), StatusCode: 503, Error: "HTTP 503", NextAttemptAt: &next}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := models.GetWebhookDelivery(db, failing.ID); !eff.Ended || d.Status != models.WebhookFailed || d.NextAttemptAt != nil || d.Attempts != 1 {
			t.Errorf("a failed attempt made while its endpoint was deleted: ended %v, status %s, next attempt %v, %d attempts; want failed with none next",
				eff.Ended, d.Status, d.NextAttemptAt, d.Attempts)
		}
		eff, err = store.RecordAttempt(ctx, answered.ID, ep.ID, models.AttemptRecord{Attempt: 1, CallbackURL: ep.URL,
			StartedAt: time.Now().Add(-time.Second), StatusCode: 204, Delivered: true}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := models.GetWebhookDelivery(db, answered.ID); eff.Ended || d.Status != models.WebhookDelivered {
			t.Errorf("a delivered attempt made while its endpoint was deleted: ended %v, status %s; want delivered", eff.Ended, d.Status)
		}

		// A disabled endpoint, not deleted: the delivery is held.
		disabled := models.EndpointDisabled
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.inst, live.ID, models.EndpointChanges{Status: &disabled}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if ended, err := store.HoldDelivery(ctx, kept.ID, live.ID); err != nil || ended != models.WebhookHeld {
			t.Fatalf("hold a delivery of a disabled endpoint: %q, %v", ended, err)
		}
		if again, err := store.HoldDelivery(ctx, kept.ID, live.ID); err != nil || again != "" {
			t.Errorf("hold it again: ended %q, %v; want nothing ended (it was held already)", again, err)
		}
		if d, _ := models.GetWebhookDelivery(db, kept.ID); d.Status != models.WebhookHeld {
			t.Errorf("delivery of a disabled endpoint = %s, want held", d.Status)
		}
	})
}

// pauseKey marks the context of the transaction TestDeletingAnEndpointWhileAnEventIsRecordedForIt
// pauses after it read the scope's endpoints.
type pauseKey struct{}

// An endpoint deleted while an event is being recorded for it (a job's end, in the transaction that
// ends the job), after the recording read the endpoint as live and before it commits: the deletion
// waits for that transaction (PostgreSQL: the endpoint's row, which the recording holds FOR KEY
// SHARE and the deletion takes FOR UPDATE; SQLite: its one writer), and then ends the delivery the
// event left held for the disabled endpoint. Had it not waited, the held delivery would have been
// committed after the deletion, to wait for ever.
func TestDeletingAnEndpointWhileAnEventIsRecordedForIt(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.inst, "https://hooks.example/gone")
		disabled := models.EndpointDisabled
		if _, err := store.UpdateWebhookEndpoint(t.Context(), ten.inst, ep.ID, models.EndpointChanges{Status: &disabled}, time.Now()); err != nil {
			t.Fatal(err)
		}
		read, resume := make(chan struct{}), make(chan struct{})
		release := sync.OnceFunc(func() { close(resume) })
		t.Cleanup(release) // a failed test never leaves the recording paused
		var once sync.Once
		if err := db.Callback().Query().After("gorm:query").Register("test:pause_after_endpoints", func(tx *gorm.DB) {
			if tx.Statement.Context.Value(pauseKey{}) != nil && tx.Statement.Table == "webhook_endpoints" {
				once.Do(func() { close(read); <-resume })
			}
		}); err != nil {
			t.Fatal(err)
		}
		ev := &models.WebhookEvent{ID: models.NewID(), AccountID: ten.inst.AccountID, InstallationID: &ten.inst.InstallationID,
			Type: "job.completed", Payload: models.JSON(`{"event":"job.completed"}`)}
		recorded := make(chan error, 1)
		go func() {
			_, err := store.RecordEvent(context.WithValue(t.Context(), pauseKey{}, true), ev, models.EventDeliveries{})
			recorded <- err
		}()
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			t.Fatal("the recording never read the endpoints")
		}
		deleted := make(chan error, 1)
		go func() {
			_, err := store.DeleteWebhookEndpoint(context.Background(), ten.inst, ep.ID, time.Now())
			deleted <- err
		}()
		var deleteErr error
		waited := true
		select {
		case deleteErr = <-deleted:
			waited = false
			t.Errorf("the deletion committed while the recording of an event for the endpoint was under way (%v)", deleteErr)
		case <-time.After(500 * time.Millisecond):
		}
		release()
		if err := <-recorded; err != nil {
			t.Fatal(err)
		}
		if waited {
			deleteErr = <-deleted
		}
		if deleteErr != nil {
			t.Fatal(deleteErr)
		}
		d, err := models.GetWebhookDelivery(db, models.EventDeliveryID(ev.ID, ep.ID))
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != models.WebhookFailed || d.LastError != models.EndpointDeletedError {
			t.Errorf("the delivery recorded while its endpoint was deleted = %s (%q), want failed: nothing will ever send it", d.Status, d.LastError)
		}
	})
}

// A replay queues its delivery again before its new run starts (Store.QueueReplay): whatever the
// delivery's state (failed, held, delivered, between attempts), it becomes pending with its start
// owed and no next attempt, addressed to its endpoint's current URL; its attempts, last answer and
// delivered_at stay the log's. The outbox sweep finds it (DeliveriesAwaitingStart) until the
// replay's start is recorded (MarkDeliveriesStarted). An unknown delivery is ErrNotFound.
func TestQueueReplayMakesADeliveryPendingWithItsStartOwed(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.account, "https://hooks.example/old")
		url := "https://hooks.example/new"
		if _, err := store.UpdateWebhookEndpoint(ctx, ten.account, ep.ID, models.EndpointChanges{URL: &url}, time.Now()); err != nil {
			t.Fatal(err)
		}
		delivered := deliveryTo(t, db, ten.account, ep, models.WebhookDelivered, false)
		deliveredAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
		if err := db.Model(&models.WebhookDelivery{}).Where("id = ?", delivered.ID).
			Updates(map[string]any{"delivered_at": deliveredAt, "attempts": 2}).Error; err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, status := range []string{models.WebhookFailed, models.WebhookHeld, models.WebhookDelivered, models.WebhookDelivering} {
			d := delivered
			if status != models.WebhookDelivered {
				d = deliveryTo(t, db, ten.account, ep, status, false)
			}
			before, err := models.GetWebhookDelivery(db, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := store.QueueReplay(ctx, d.ID, now); err != nil {
				t.Fatalf("queue the replay of a %s delivery: %v", status, err)
			}
			got, err := models.GetWebhookDelivery(db, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != models.WebhookPending || got.StartDueAt == nil || !got.StartDueAt.Equal(now) || got.NextAttemptAt != nil ||
				got.CallbackURL != url || !got.UpdatedAt.Equal(now) {
				t.Errorf("a replayed %s delivery = status %s, start due %v, next attempt %v, url %q, updated %v; want pending, due %v, none, %q",
					status, got.Status, got.StartDueAt, got.NextAttemptAt, got.CallbackURL, got.UpdatedAt, now, url)
			}
			if got.Attempts != before.Attempts || got.LastError != before.LastError || (got.DeliveredAt == nil) != (before.DeliveredAt == nil) {
				t.Errorf("a replayed %s delivery lost its log: attempts %d→%d, last error %q→%q, delivered_at %v→%v",
					status, before.Attempts, got.Attempts, before.LastError, got.LastError, before.DeliveredAt, got.DeliveredAt)
			}
		}
		owed, err := store.DeliveriesAwaitingStart(ctx, now, 10)
		if err != nil || len(owed) != 4 {
			t.Fatalf("the sweep finds %d replays owed a start (%v), want 4", len(owed), err)
		}
		if err := store.MarkDeliveriesStarted(ctx, delivered.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := models.GetWebhookDelivery(db, delivered.ID); got.StartDueAt != nil || got.Status != models.WebhookPending {
			t.Errorf("a replay whose start is recorded = %s, start due %v; want pending, none", got.Status, got.StartDueAt)
		}
		if err := store.QueueReplay(ctx, models.NewID(), now); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("queue the replay of an unknown delivery = %v, want ErrNotFound", err)
		}
	})
}

// A replay whose check of the endpoint came before the endpoint's deletion committed reaches the
// store after it: QueueReplay holds the endpoint's row first (lockEndpointForDelivery), as every
// write that leaves a delivery waiting does, and refuses with ErrEndpointDeleted, changing
// nothing. The delivery the deletion failed stays failed, and no start is owed to an endpoint that
// is gone.
func TestQueueReplayOfADeletedEndpointsDeliveryQueuesNothing(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.account, "https://hooks.example/gone")
		d := deliveryTo(t, db, ten.account, ep, models.WebhookDelivering, false)
		if _, err := store.DeleteWebhookEndpoint(ctx, ten.account, ep.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := store.QueueReplay(ctx, d.ID, time.Now()); !errors.Is(err, models.ErrEndpointDeleted) {
			t.Errorf("queue the replay of a deleted endpoint's delivery = %v, want ErrEndpointDeleted", err)
		}
		got, err := models.GetWebhookDelivery(db, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.WebhookFailed || got.LastError != models.EndpointDeletedError || got.StartDueAt != nil {
			t.Errorf("the deleted endpoint's delivery after a refused replay = %s (%q), start due %v; want failed (%q), none",
				got.Status, got.LastError, got.StartDueAt, models.EndpointDeletedError)
		}
		if owed, err := store.DeliveriesOwedStart(ctx, ep.ID, 10); err != nil || len(owed) != 0 {
			t.Errorf("starts owed to the deleted endpoint: %d, %v", len(owed), err)
		}
	})
}
