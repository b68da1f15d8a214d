package models_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// logEvent stores an event of the scope and one delivery of it to ep, with attempts attempts.
func logEvent(t *testing.T, db *gorm.DB, scope models.WebhookScope, ep *models.WebhookEndpoint, typ, status string, at time.Time, test bool, attempts int) (models.WebhookEvent, models.WebhookDelivery) {
	t.Helper()
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: scope.AccountID, Type: typ, Payload: models.JSON(`{"event":"` + typ + `"}`),
		Test: test, CreatedAt: at}
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &ep.ID, AccountID: scope.AccountID, Run: 1,
		Event: typ, CallbackURL: ep.URL, Status: status, CreatedAt: at, UpdatedAt: at}
	if scope.Plugin() {
		inst := scope.InstallationID
		ev.InstallationID, d.InstallationID = &inst, &inst
	}
	if err := db.Create(&ev).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&d).Error; err != nil {
		t.Fatal(err)
	}
	for i := range attempts {
		code := 500 + i
		a := models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: i + 1, StartedAt: at.Add(time.Duration(attempts-i) * time.Second),
			StatusCode: &code, LatencyMS: int64(10 * i), CreatedAt: at}
		if err := db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
	}
	return ev, d
}

func TestWebhookLogStoreDeliveries(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		epA := mustCreateEndpoint(t, store, ten.inst, "https://a.example")
		epB := mustCreateEndpoint(t, store, ten.inst, "https://b.example")
		sib := mustCreateEndpoint(t, store, ten.sibling, "https://sib.example")
		own := mustCreateEndpoint(t, store, ten.account, "https://own.example")
		base := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
		_, d1 := logEvent(t, db, ten.inst, epA, "job.completed", models.WebhookDelivered, base, false, 1)
		ev2, d2 := logEvent(t, db, ten.inst, epB, "job.failed", models.WebhookFailed, base.Add(time.Minute), false, 3)
		_, d3 := logEvent(t, db, ten.inst, epA, "job.failed", models.WebhookHeld, base.Add(2*time.Minute), false, 0)
		_, dSib := logEvent(t, db, ten.sibling, sib, "job.failed", models.WebhookFailed, base.Add(time.Minute), false, 1)
		_, dOwn := logEvent(t, db, ten.account, own, "record.done", models.WebhookPending, base.Add(time.Minute), false, 0)

		ids := func(q models.DeliveryQuery, scope models.WebhookScope) []string {
			t.Helper()
			if q.Limit == 0 {
				q.Limit = 50
			}
			rows, err := store.WebhookDeliveries(ctx, scope, q)
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, r := range rows {
				out = append(out, r.Delivery.ID)
			}
			return out
		}
		after, before := base.Add(time.Minute), base.Add(2*time.Minute)
		for name, c := range map[string]struct {
			q    models.DeliveryQuery
			want []string
		}{
			"all, newest first":  {models.DeliveryQuery{}, []string{d3.ID, d2.ID, d1.ID}},
			"endpoint":           {models.DeliveryQuery{EndpointID: epA.ID}, []string{d3.ID, d1.ID}},
			"event":              {models.DeliveryQuery{Event: "job.failed"}, []string{d3.ID, d2.ID}},
			"event id":           {models.DeliveryQuery{EventID: ev2.ID}, []string{d2.ID}},
			"status":             {models.DeliveryQuery{Status: models.WebhookHeld}, []string{d3.ID}},
			"created after":      {models.DeliveryQuery{CreatedAfter: &after}, []string{d3.ID, d2.ID}},
			"created before":     {models.DeliveryQuery{CreatedBefore: &before}, []string{d2.ID, d1.ID}},
			"window":             {models.DeliveryQuery{CreatedAfter: &after, CreatedBefore: &before}, []string{d2.ID}},
			"combined, none":     {models.DeliveryQuery{EndpointID: epB.ID, Status: models.WebhookHeld}, []string{}},
			"another's endpoint": {models.DeliveryQuery{EndpointID: sib.ID}, []string{}},
			"cursor":             {models.DeliveryQuery{After: &models.WebhookCursor{CreatedAt: d2.CreatedAt, ID: d2.ID}}, []string{d1.ID}},
			"limit":              {models.DeliveryQuery{Limit: 2}, []string{d3.ID, d2.ID}},
		} {
			if got := ids(c.q, ten.inst); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", name, got, c.want)
			}
		}
		if got := ids(models.DeliveryQuery{}, ten.sibling); !slices.Equal(got, []string{dSib.ID}) {
			t.Errorf("sibling lists %v", got)
		}
		if got := ids(models.DeliveryQuery{}, ten.account); !slices.Equal(got, []string{dOwn.ID}) {
			t.Errorf("account lists %v", got)
		}
		if got := ids(models.DeliveryQuery{}, ten.other); len(got) != 0 {
			t.Errorf("another account lists %v", got)
		}

		// The page carries every attempt of each delivery, oldest first.
		rows, err := store.WebhookDeliveries(ctx, ten.inst, models.DeliveryQuery{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, r := range rows {
			counts[r.Delivery.ID] = len(r.Attempts)
			if r.Attempts == nil {
				t.Fatalf("delivery %s: nil attempts", r.Delivery.ID)
			}
			for i := 1; i < len(r.Attempts); i++ {
				if r.Attempts[i].StartedAt.Before(r.Attempts[i-1].StartedAt) {
					t.Fatalf("attempts of %s not oldest first", r.Delivery.ID)
				}
			}
		}
		if counts[d1.ID] != 1 || counts[d2.ID] != 3 || counts[d3.ID] != 0 {
			t.Fatalf("attempt counts %v", counts)
		}

		// One delivery, scoped.
		got, err := store.ScopedWebhookDelivery(ctx, ten.inst, d2.ID)
		if err != nil || got.Delivery.ID != d2.ID || len(got.Attempts) != 3 || *got.Attempts[0].StatusCode != 502 {
			t.Fatalf("get delivery: %+v, %v", got, err)
		}
		for _, c := range []struct {
			scope models.WebhookScope
			id    string
		}{{ten.sibling, d2.ID}, {ten.account, d2.ID}, {ten.inst, dOwn.ID}, {ten.other, dOwn.ID}, {ten.inst, models.NewID()}} {
			if _, err := store.ScopedWebhookDelivery(ctx, c.scope, c.id); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("scope %+v reads delivery %s: %v", c.scope, c.id, err)
			}
		}
		if got, err := store.ScopedWebhookDelivery(ctx, ten.account, dOwn.ID); err != nil || got.Attempts == nil {
			t.Fatalf("account's delivery: %+v, %v", got, err)
		}
	})
}

func TestWebhookLogStoreEvents(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		store := models.NewStore(db)
		ten := newWebhookTenants(t, db, testBox(t))
		ep := mustCreateEndpoint(t, store, ten.inst, "https://a.example")
		own := mustCreateEndpoint(t, store, ten.account, "https://own.example")
		base := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
		e1, _ := logEvent(t, db, ten.inst, ep, "job.completed", models.WebhookDelivered, base, false, 0)
		e2, _ := logEvent(t, db, ten.inst, ep, "job.failed", models.WebhookDelivered, base.Add(time.Minute), false, 0)
		e3, _ := logEvent(t, db, ten.inst, ep, "job.completed", models.WebhookDelivered, base.Add(time.Minute), false, 0)
		test, _ := logEvent(t, db, ten.inst, ep, "webhook.test", models.WebhookDelivered, base.Add(2*time.Minute), true, 0)
		mine, _ := logEvent(t, db, ten.account, own, "record.done", models.WebhookDelivered, base, false, 0)

		list := func(scope models.WebhookScope, q models.EventQuery) []string {
			t.Helper()
			if q.Limit == 0 {
				q.Limit = 50
			}
			rows, err := store.WebhookEvents(ctx, scope, q)
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		newest := []string{e3.ID, e2.ID}
		if e2.ID > e3.ID {
			newest = []string{e2.ID, e3.ID}
		}
		after := base.Add(time.Minute)
		for name, c := range map[string]struct {
			q    models.EventQuery
			want []string
		}{
			"all but the test, newest first": {models.EventQuery{}, append(slices.Clone(newest), e1.ID)},
			"type":                           {models.EventQuery{Type: "job.completed"}, []string{e3.ID, e1.ID}},
			"test type lists nothing":        {models.EventQuery{Type: "webhook.test"}, []string{}},
			"created after":                  {models.EventQuery{CreatedAfter: &after}, newest},
			"created before":                 {models.EventQuery{CreatedBefore: &after}, []string{e1.ID}},
			"cursor":                         {models.EventQuery{After: &models.WebhookCursor{CreatedAt: after, ID: newest[0]}}, []string{newest[1], e1.ID}},
			"limit":                          {models.EventQuery{Limit: 1}, newest[:1]},
		} {
			if got := list(ten.inst, c.q); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", name, got, c.want)
			}
		}
		if got := list(ten.account, models.EventQuery{}); !slices.Equal(got, []string{mine.ID}) {
			t.Errorf("account lists %v", got)
		}
		for _, scope := range []models.WebhookScope{ten.sibling, ten.other} {
			if got := list(scope, models.EventQuery{}); len(got) != 0 {
				t.Errorf("scope %+v lists %v", scope, got)
			}
		}
		// A test send is found by its id.
		got, err := store.ScopedWebhookEvent(ctx, ten.inst, test.ID)
		if err != nil || !got.Test || string(got.Payload) == "" {
			t.Fatalf("test event: %+v, %v", got, err)
		}
		for _, c := range []struct {
			scope models.WebhookScope
			id    string
		}{{ten.sibling, e1.ID}, {ten.account, e1.ID}, {ten.other, mine.ID}, {ten.inst, mine.ID}, {ten.inst, models.NewID()}} {
			if _, err := store.ScopedWebhookEvent(ctx, c.scope, c.id); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("scope %+v reads event %s: %v", c.scope, c.id, err)
			}
		}
	})
}
