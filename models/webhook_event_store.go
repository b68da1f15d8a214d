package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Events and their deliveries (issue 24): RecordEvent records an event and fans it out to the
// endpoints of its scope that subscribed; the delivery workflow's attempts keep the endpoint's
// failure streak, which disables it after WEBHOOK_DISABLE_AFTER; a recover queues an endpoint's
// failed and held deliveries again.

// Errors of the endpoint use cases that the store decides.
var (
	// ErrEndpointDisabled: the endpoint is disabled (a recover or a test send needs it enabled).
	ErrEndpointDisabled = errors.New("webhook endpoint is disabled")
	// ErrRecoveryRunning: a recover of the endpoint is still queueing its deliveries.
	ErrRecoveryRunning = errors.New("a recover of this endpoint is still running")
	// ErrEndpointDeleted: the endpoint of a delivery being replayed was deleted (QueueReplay).
	ErrEndpointDeleted = errors.New("webhook endpoint was deleted")
)

// recoveryStaleAfter is how long a recover's mark blocks another recover when its queueing was
// interrupted (the sweep clears the mark once every delivery it queued has started).
const recoveryStaleAfter = 10 * time.Minute

// EventDeliveryID is the ID of the delivery of an event to an endpoint: recording it again makes
// no second row.
func EventDeliveryID(eventID, endpointID string) string {
	return uuid.NewSHA1(deliveryNamespace, []byte(eventID+"/"+endpointID)).String()
}

// EventID derives the ID of an event from what makes it unique (a job run and its event type, an
// order's completion): recording the same event twice records it once.
func EventID(parts ...string) string {
	key := ""
	for i, p := range parts {
		if i > 0 {
			key += "/"
		}
		key += p
	}
	return uuid.NewSHA1(deliveryNamespace, []byte(key)).String()
}

// EventDeliveries narrows the deliveries RecordEvent makes.
type EventDeliveries struct {
	Only   string // only to this endpoint, subscribed to the type or not (a test send)
	Except string // not to this endpoint (endpoint.disabled is not sent to the endpoint it is about)
	Run    int    // the job run the event is about, if any
}

// RecordEvent inserts ev, unless an event with its ID exists, and with it one delivery per live
// endpoint of ev's scope that subscribed to its type (RecordEvents).
func (s *Store) RecordEvent(ctx context.Context, ev *WebhookEvent, to EventDeliveries) ([]WebhookDelivery, error) {
	return s.RecordEvents(ctx, []*WebhookEvent{ev}, to)
}

// RecordEvents inserts events of one scope (an installation's, or an account's own), each unless
// an event with its ID exists, and one delivery per event and live endpoint of the scope that
// subscribed to the event's type: pending with its start owed (start_due_at) for an enabled
// endpoint, held for a disabled one, each in the mode of the endpoint's account (test_mode, read
// with the endpoints). It writes atomically (Atomic: in the caller's transaction
// when there is one), with one insert of the events, one read of the scope's endpoints and one
// insert of the deliveries. It returns the deliveries whose start is owed: the new pending ones,
// and, when some event was recorded before, its deliveries whose start is still owed.
func (s *Store) RecordEvents(ctx context.Context, events []*WebhookEvent, to EventDeliveries) ([]WebhookDelivery, error) {
	if len(events) == 0 {
		return nil, nil
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ids := make([]string, len(events))
	for i, ev := range events {
		if ev.CreatedAt.IsZero() {
			ev.CreatedAt = now
		}
		ids[i] = ev.ID
	}
	first := events[0]
	var owed []WebhookDelivery
	err := s.Atomic(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(events)
		if res.Error != nil {
			return fmt.Errorf("record %s events: %w", first.Type, res.Error)
		}
		allNew := res.RowsAffected == int64(len(events))
		// An event recorded before (a repeated call, or an order's order.completed again after a
		// re-run) keeps the deliveries it was given then: an endpoint created since does not
		// receive it. Only the events this call added are fanned out.
		fresh, err := addedEvents(db, events, res.RowsAffected)
		if err != nil {
			return fmt.Errorf("record %s events: %w", first.Type, err)
		}
		var endpoints []modedEndpoint
		// FOR KEY SHARE: an endpoint being deleted is waited for, and is then not live; one read
		// here is not deleted until this commits, and its deletion then ends what this records
		// for it (DeleteWebhookEndpoint).
		q := scopeEndpoints(db.Clauses(clause.Locking{Strength: "KEY SHARE"}), first.AccountID, first.InstallationID).
			Select("webhook_endpoints.*, " + accountTestModeColumn)
		if to.Only != "" {
			q = q.Where("id = ?", to.Only)
		}
		if err := q.Order("created_at, id").Find(&endpoints).Error; err != nil {
			return err
		}
		var rows []WebhookDelivery
		for _, ev := range fresh {
			for i := range endpoints {
				ep := &endpoints[i].WebhookEndpoint
				if ep.ID == to.Except || (to.Only == "" && !ep.Subscribes(ev.Type)) {
					continue
				}
				d := WebhookDelivery{
					ID: EventDeliveryID(ev.ID, ep.ID), EventID: ev.ID, EndpointID: &ep.ID, AccountID: ev.AccountID,
					InstallationID: ev.InstallationID, OrderID: ev.OrderID, JobID: ev.JobID, Run: to.Run, Event: ev.Type,
					CallbackURL: ep.URL, Status: WebhookPending, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt,
					TestMode: endpoints[i].AccountTestMode,
				}
				if ep.Status == EndpointEnabled {
					due := ev.CreatedAt
					d.StartDueAt = &due
				} else {
					d.Status = WebhookHeld
				}
				rows = append(rows, d)
			}
		}
		if len(rows) > 0 {
			if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
				return fmt.Errorf("record deliveries of %s events: %w", first.Type, err)
			}
		}
		if !allNew {
			// Some event was recorded before (a repeated call): what of its deliveries is still owed.
			return db.Where("event_id IN ? AND start_due_at IS NOT NULL", ids).Order("created_at, id").Find(&owed).Error
		}
		for _, d := range rows {
			if d.StartDueAt != nil {
				owed = append(owed, d)
			}
		}
		return nil
	})
	return owed, err
}

// modedEndpoint is an endpoint read with the mode of its account (accountTestModeColumn), which
// the deliveries recorded for it carry (WebhookDelivery.TestMode).
type modedEndpoint struct {
	WebhookEndpoint `gorm:"embedded"`
	AccountTestMode bool
}

// accountTestModeColumn selects the test_mode of an endpoint's account beside the endpoint's
// columns (modedEndpoint): the endpoints of a scope are read anyway when an event is recorded, so
// its deliveries learn their mode without a statement of their own.
const accountTestModeColumn = "(SELECT a.test_mode FROM accounts a WHERE a.id = webhook_endpoints.account_id) AS account_test_mode"

// scopeEndpoints narrows q to the live endpoints of an installation, or of an account's own
// (installationID nil).
func scopeEndpoints(q *gorm.DB, accountID string, installationID *string) *gorm.DB {
	q = q.Model(&WebhookEndpoint{}).Where("deleted_at IS NULL")
	if installationID != nil {
		return q.Where("installation_id = ?", *installationID)
	}
	return q.Where("account_id = ? AND installation_id IS NULL", accountID)
}

// DeliveryTarget is what an attempt of a delivery needs: the delivery, its endpoint (nil for a
// delivery recorded before endpoints whose installation had no callback URL; possibly deleted or
// disabled) and the body to send.
type DeliveryTarget struct {
	Delivery WebhookDelivery
	Endpoint *WebhookEndpoint
	Body     JSON
}

// LoadDeliveryTarget loads a delivery with its endpoint and body; ErrNotFound when there is none.
func (s *Store) LoadDeliveryTarget(ctx context.Context, id string) (*DeliveryTarget, error) {
	db := s.conn(ctx)
	var t DeliveryTarget
	if err := db.Where("id = ?", id).Take(&t.Delivery).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	t.Body = t.Delivery.Payload
	if len(t.Body) == 0 || string(t.Body) == "null" {
		var ev WebhookEvent
		if err := db.Select("payload").Where("id = ?", t.Delivery.EventID).Take(&ev).Error; err != nil {
			return nil, fmt.Errorf("event %s of delivery %s: %w", t.Delivery.EventID, id, err)
		}
		t.Body = ev.Payload
	}
	if t.Delivery.EndpointID != nil {
		var ep WebhookEndpoint
		if err := db.Where("id = ?", *t.Delivery.EndpointID).Take(&ep).Error; err != nil {
			return nil, fmt.Errorf("endpoint of delivery %s: %w", id, err)
		}
		t.Endpoint = &ep
	}
	return &t, nil
}

// HoldDelivery records that a delivery to endpointID was not attempted because the endpoint is
// disabled: it waits, held, for a recover. A delivered one stays delivered. When the endpoint was
// deleted meanwhile, nothing could ever send it: it ends failed (EndpointDeletedError) instead.
// ended is how this call ended it, WebhookHeld or WebhookFailed, or "" when it had already ended
// so (a repeated call), so that its end is counted once. The endpoint's row is held first
// (lockEndpointForDelivery), so a deletion that commits before or after never leaves the delivery
// held.
func (s *Store) HoldDelivery(ctx context.Context, id, endpointID string) (ended string, err error) {
	err = s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		deleted, err := lockEndpointForDelivery(db, endpointID)
		if err != nil {
			return err
		}
		if deleted {
			failed, err := failDelivery(db, id, EndpointDeletedError)
			if failed {
				ended = WebhookFailed
			}
			return err
		}
		res := db.Model(&WebhookDelivery{}).Where("id = ? AND status NOT IN ?", id, []string{WebhookDelivered, WebhookHeld}).
			Updates(map[string]any{"status": WebhookHeld, "next_attempt_at": nil, "updated_at": time.Now().UTC()})
		if res.RowsAffected > 0 {
			ended = WebhookHeld
		}
		return res.Error
	})
	if err != nil {
		return "", err
	}
	return ended, nil
}

// FailDelivery ends a delivery failed with reason as its last error, without an attempt (its
// endpoint was deleted). A delivered one stays delivered; ended is as failDelivery's.
func (s *Store) FailDelivery(ctx context.Context, id, reason string) (ended bool, err error) {
	return failDelivery(s.conn(ctx), id, reason)
}

// failDelivery is FailDelivery on db; ended reports that it ended the delivery (false for one
// already delivered or failed: a repeated call), so that its end is counted once.
func failDelivery(db *gorm.DB, id, reason string) (ended bool, err error) {
	res := db.Model(&WebhookDelivery{}).Where("id = ? AND status NOT IN ?", id, []string{WebhookDelivered, WebhookFailed}).
		Updates(map[string]any{"status": WebhookFailed, "last_error": reason, "next_attempt_at": nil,
			"updated_at": time.Now().UTC()})
	return res.RowsAffected > 0, res.Error
}

// AttemptEffects is what an attempt changed beyond its delivery.
type AttemptEffects struct {
	// Disabled is the delivery's endpoint when this attempt disabled it: every attempt to it had
	// failed for the disable window.
	Disabled *WebhookEndpoint
	// Ended is true when the attempt ended its delivery because its endpoint was deleted while it
	// was being made: a failed attempt then schedules nothing more, and the delivery is failed.
	Ended bool
}

// RecordAttempt stores an attempt of a delivery and brings the delivery and its endpoint up to
// date in one transaction: a delivered attempt ends the endpoint's failure streak; a failed one
// starts it if needed, and disables the endpoint (reason failing) when the streak began
// disableAfter ago or longer (0: never). It holds the endpoint's row first
// (lockEndpointForDelivery): an attempt made while the endpoint was deleted ends the delivery,
// failed (Ended) unless the attempt delivered it, rather than leave it waiting for an attempt that
// will not come. ErrNotFound when the delivery does not exist.
func (s *Store) RecordAttempt(ctx context.Context, deliveryID, endpointID string, r AttemptRecord, disableAfter time.Duration) (AttemptEffects, error) {
	var eff AttemptEffects
	err := s.Atomic(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		deleted := false
		if endpointID != "" {
			var err error
			if deleted, err = lockEndpointForDelivery(db, endpointID); err != nil {
				return err
			}
		}
		if deleted && !r.Delivered {
			r.NextAttemptAt, eff.Ended = nil, true
		}
		stale, err := recordWebhookAttempt(db, deliveryID, r, eff.Ended)
		if err != nil {
			return err
		}
		if endpointID == "" || stale || deleted {
			// A stale attempt failed before a 2xx: it starts no failure streak; a deleted
			// endpoint has none to keep.
			return nil
		}
		if r.Delivered {
			return db.Model(&WebhookEndpoint{}).Where("id = ? AND failing_since IS NOT NULL", endpointID).
				Update("failing_since", nil).Error
		}
		started := r.StartedAt.UTC()
		if err := db.Model(&WebhookEndpoint{}).Where("id = ? AND failing_since IS NULL", endpointID).
			Update("failing_since", started).Error; err != nil {
			return err
		}
		if disableAfter <= 0 {
			return nil
		}
		now := time.Now().UTC()
		res := db.Model(&WebhookEndpoint{}).
			Where("id = ? AND status = ? AND deleted_at IS NULL AND failing_since <= ?", endpointID, EndpointEnabled, now.Add(-disableAfter)).
			Updates(map[string]any{"status": EndpointDisabled, "disabled_reason": EndpointDisabledFailing,
				"disabled_at": now, "updated_at": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var ep WebhookEndpoint
		if err := db.Where("id = ?", endpointID).Take(&ep).Error; err != nil {
			return err
		}
		eff.Disabled = &ep
		return nil
	})
	return eff, err
}

// QueueRecovery queues again every delivery of the endpoint created in [since, until) that ended
// failed or is held: each becomes pending with its start owed, and the endpoint is marked as
// recovering until they have all started (FinishRecovery). It returns how many it queued.
// ErrNotFound for an endpoint that is not live, ErrEndpointDisabled for a disabled one,
// ErrRecoveryRunning while an earlier recover is still queueing.
func (s *Store) QueueRecovery(ctx context.Context, endpointID string, since, until, now time.Time) (int, error) {
	n := 0
	err := s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var ep WebhookEndpoint
		q := db.Where("id = ? AND deleted_at IS NULL", endpointID)
		if db.Dialector.Name() == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Take(&ep).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return ErrNotFound
			}
			return err
		}
		if ep.Status != EndpointEnabled {
			return ErrEndpointDisabled
		}
		if ep.RecoveringSince != nil && ep.RecoveringSince.After(now.Add(-recoveryStaleAfter)) {
			return ErrRecoveryRunning
		}
		res := db.Model(&WebhookDelivery{}).
			Where("endpoint_id = ? AND status IN ? AND created_at >= ? AND created_at < ?",
				endpointID, []string{WebhookFailed, WebhookHeld}, halfOpenBound(db, since), halfOpenBound(db, until)).
			Updates(map[string]any{"status": WebhookPending, "start_due_at": now.UTC(), "next_attempt_at": nil,
				"callback_url": ep.URL, "updated_at": now.UTC()})
		if res.Error != nil {
			return res.Error
		}
		n = int(res.RowsAffected)
		if n == 0 {
			return nil
		}
		return db.Model(&WebhookEndpoint{}).Where("id = ?", endpointID).Update("recovering_since", now.UTC()).Error
	})
	return n, err
}

// QueueReplay queues a delivery again for a replay, before the replay's run starts
// (engine.Webhooks.StartWebhookReplay): whatever its state, it becomes pending with its start owed
// and no next attempt, addressed to its endpoint's current URL, as a recovered one does
// (QueueRecovery). Until the run's first attempt is recorded the log shows it waiting to be sent
// rather than the outcome of its previous run, and a replay whose start is lost (a crash, Temporal
// away) is started by the outbox sweep. Its attempts, last answer and delivered_at stay as they
// are. It holds the endpoint's row first (lockEndpointForDelivery), as every write that leaves a
// delivery waiting does: a replay checked before its endpoint's deletion committed and queued
// after it is refused with ErrEndpointDeleted, changing nothing, so the delivery the deletion
// failed stays failed (DeleteWebhookEndpoint). ErrNotFound when the delivery does not exist.
func (s *Store) QueueReplay(ctx context.Context, id string, now time.Time) error {
	now = now.UTC()
	return s.Tx(ctx, func(tx *Store) error {
		db := tx.conn(ctx)
		var d WebhookDelivery
		if err := db.Select("id", "endpoint_id").Where("id = ?", id).Take(&d).Error; err != nil {
			return orNotFound(err)
		}
		if d.EndpointID != nil {
			deleted, err := lockEndpointForDelivery(db, *d.EndpointID)
			if err != nil {
				return err
			}
			if deleted {
				return ErrEndpointDeleted
			}
		}
		url := gorm.Expr("COALESCE((SELECT e.url FROM webhook_endpoints e WHERE e.id = webhook_deliveries.endpoint_id), callback_url)")
		return db.Model(&WebhookDelivery{}).Where("id = ?", id).
			Updates(map[string]any{"status": WebhookPending, "start_due_at": now, "next_attempt_at": nil,
				"callback_url": url, "updated_at": now}).Error
	})
}

// DeliveriesOwedStart lists up to limit deliveries of the endpoint whose start is owed, oldest first.
func (s *Store) DeliveriesOwedStart(ctx context.Context, endpointID string, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.conn(ctx).Where("endpoint_id = ? AND start_due_at IS NOT NULL", endpointID).
		Order("created_at, id").Limit(limit).Find(&out).Error
	return out, err
}

// FinishRecoveries clears the recovering mark of every endpoint (or only of endpointID, when
// given) none of whose deliveries is still owed a start; it returns how many it cleared.
func (s *Store) FinishRecoveries(ctx context.Context, endpointID string) (int64, error) {
	q := s.conn(ctx).Model(&WebhookEndpoint{}).Where("recovering_since IS NOT NULL").
		Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = webhook_endpoints.id AND d.start_due_at IS NOT NULL)")
	if endpointID != "" {
		q = q.Where("id = ?", endpointID)
	}
	res := q.Update("recovering_since", nil)
	return res.RowsAffected, res.Error
}

// addedEvents are the events of a batch that its INSERT … ON CONFLICT DO NOTHING added, inserted
// of them: all, none, or (one recorded before beside new ones: an order's order.completed again
// with a re-run's job event) those whose stored time is the one this batch gave them, a time the
// earlier recording could not have had. Only that last case costs a statement.
func addedEvents(db *gorm.DB, events []*WebhookEvent, inserted int64) ([]*WebhookEvent, error) {
	switch inserted {
	case int64(len(events)):
		return events, nil
	case 0:
		return nil, nil
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	var stored []WebhookEvent
	if err := db.Select("id", "created_at").Where("id IN ?", ids).Find(&stored).Error; err != nil {
		return nil, err
	}
	var added []*WebhookEvent
	for _, ev := range events {
		i := slices.IndexFunc(stored, func(s WebhookEvent) bool { return s.ID == ev.ID })
		if i >= 0 && stored[i].CreatedAt.Truncate(time.Microsecond).Equal(ev.CreatedAt.Truncate(time.Microsecond)) {
			added = append(added, ev)
		}
	}
	return added, nil
}
