package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ErrEndpointLimit refuses a new webhook endpoint of a scope that has MaxWebhookEndpoints live ones.
var ErrEndpointLimit = errors.New("webhook endpoint limit reached")

// WebhookScope is whose webhook endpoints, deliveries and events a query sees: one installation's
// (plugin API), or, with InstallationID "", one account's own (external API), which never include
// the endpoints, deliveries or events of the account's installations.
type WebhookScope struct {
	AccountID      string
	InstallationID string
}

// Plugin reports whether the scope is an installation's.
func (s WebhookScope) Plugin() bool { return s.InstallationID != "" }

// where restricts q, a query of a table with account_id and installation_id, to the scope's rows.
func (s WebhookScope) where(q *gorm.DB) *gorm.DB {
	if s.Plugin() {
		return q.Where("installation_id = ?", s.InstallationID)
	}
	return q.Where("account_id = ? AND installation_id IS NULL", s.AccountID)
}

// WebhookCursor is a position in the (created_at DESC, id DESC) order of a webhook list: the last
// row of a page. The next page starts right after it.
type WebhookCursor struct {
	CreatedAt time.Time
	ID        string
}

// after restricts q to the rows after cur in the (created_at DESC, id DESC) order.
func (cur *WebhookCursor) after(q *gorm.DB) *gorm.DB {
	if cur == nil {
		return q
	}
	at := cur.CreatedAt.UTC()
	return q.Where("(created_at < ? OR (created_at = ? AND id < ?))", at, at, cur.ID)
}

// lockWebhookOwner locks the row of the scope's owner (the installation, or the account) until the
// transaction ends, so that concurrent creations of the scope's endpoints count one after the other
// on PostgreSQL; SQLite's immediate transactions already run one at a time. ErrNotFound when the
// owner does not exist (or the installation is not the account's).
func lockWebhookOwner(tx *gorm.DB, scope WebhookScope) error {
	q := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id")
	var err error
	if scope.Plugin() {
		err = q.Where("id = ? AND account_id = ?", scope.InstallationID, scope.AccountID).Take(&Installation{}).Error
	} else {
		err = q.Where("id = ?", scope.AccountID).Take(&Account{}).Error
	}
	return orNotFound(err)
}

// CreateWebhookEndpoint inserts ep, an endpoint of the scope its AccountID and InstallationID name,
// unless the scope already has MaxWebhookEndpoints live (not deleted) endpoints: ErrEndpointLimit
// then, and nothing is written. The count and the insert run in one transaction (a savepoint when
// the store is in one) that holds the owner's row (lockWebhookOwner), so concurrent creations never
// exceed the limit. ErrNotFound when the installation or account does not exist. Zero timestamps
// and an empty status are filled in.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, ep *WebhookEndpoint) error {
	scope := WebhookScope{AccountID: ep.AccountID}
	if ep.InstallationID != nil {
		scope.InstallationID = *ep.InstallationID
	}
	if ep.ID == "" {
		ep.ID = NewID()
	}
	if ep.CreatedAt.IsZero() {
		ep.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	ep.UpdatedAt = ep.CreatedAt
	if ep.Status == "" {
		ep.Status = EndpointEnabled
	}
	if ep.Events == nil {
		ep.Events = StringList{}
	}
	return s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockWebhookOwner(tx, scope); err != nil {
			return err
		}
		var live int64
		if err := scope.where(tx.Model(&WebhookEndpoint{})).Where("deleted_at IS NULL").Count(&live).Error; err != nil {
			return err
		}
		if live >= MaxWebhookEndpoints {
			return ErrEndpointLimit
		}
		return tx.Create(ep).Error
	})
}

// WebhookEndpoint loads a live endpoint of the scope; ErrNotFound for a missing, deleted or
// another scope's one.
func (s *Store) WebhookEndpoint(ctx context.Context, scope WebhookScope, id string) (*WebhookEndpoint, error) {
	return findWebhookEndpoint(scope.where(s.conn(ctx)), id)
}

func findWebhookEndpoint(q *gorm.DB, id string) (*WebhookEndpoint, error) {
	var ep WebhookEndpoint
	if err := q.Where("id = ? AND deleted_at IS NULL", id).Take(&ep).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &ep, nil
}

// WebhookEndpoints returns up to limit live endpoints of the scope after cursor (nil: from the
// newest), newest first by (created_at, id), walking the scope's index of webhook_endpoints.
func (s *Store) WebhookEndpoints(ctx context.Context, scope WebhookScope, after *WebhookCursor, limit int) ([]WebhookEndpoint, error) {
	q := after.after(scope.where(s.conn(ctx)).Where("deleted_at IS NULL"))
	var out []WebhookEndpoint
	err := q.Order("created_at DESC, id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// EndpointChanges are the fields an update sets; nil leaves one as it is.
type EndpointChanges struct {
	URL         *string
	Events      *[]string
	Description *string
	Status      *string // EndpointEnabled or EndpointDisabled
}

// UpdateWebhookEndpoint applies changes to a live endpoint of the scope at now and returns it as it
// is afterwards; ErrNotFound for a missing, deleted or another scope's one. A status change to
// enabled clears disabled_reason, disabled_at and failing_since (the failing window starts afresh);
// to disabled records disabled_reason manual and disabled_at. Setting the status an endpoint has
// already changes neither, so a disabled endpoint keeps why and since when it is; an update that
// changes no field writes nothing, updated_at included. A new URL is also where the endpoint's
// deliveries not attempted yet (pending or held) show their first attempt will go. The read and
// the writes run in one transaction (a savepoint when the store is in one) holding the row.
func (s *Store) UpdateWebhookEndpoint(ctx context.Context, scope WebhookScope, id string, changes EndpointChanges, now time.Time) (*WebhookEndpoint, error) {
	now = now.UTC().Truncate(time.Microsecond)
	var ep *WebhookEndpoint
	err := s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		ep, err = findWebhookEndpoint(scope.where(tx.Clauses(clause.Locking{Strength: "UPDATE"})), id)
		if err != nil {
			return err
		}
		fields := map[string]any{}
		if changes.URL != nil && *changes.URL != ep.URL {
			fields["url"], ep.URL = *changes.URL, *changes.URL
			// The deliveries not attempted yet show where their first attempt will go: the
			// endpoint's URL at that moment (the attempts themselves read it then).
			if err := tx.Model(&WebhookDelivery{}).Where("endpoint_id = ? AND attempts = 0 AND status IN ?", ep.ID,
				[]string{WebhookPending, WebhookHeld}).Update("callback_url", ep.URL).Error; err != nil {
				return err
			}
		}
		if changes.Events != nil && !slices.Equal(*changes.Events, []string(ep.Events)) {
			ep.Events = StringList(append([]string{}, *changes.Events...))
			fields["events"] = ep.Events
		}
		if changes.Description != nil && *changes.Description != ep.Description {
			fields["description"], ep.Description = *changes.Description, *changes.Description
		}
		if changes.Status != nil && *changes.Status != ep.Status {
			switch *changes.Status {
			case EndpointEnabled:
				ep.Status, ep.DisabledReason, ep.DisabledAt, ep.FailingSince = EndpointEnabled, "", nil, nil
			case EndpointDisabled:
				disabledAt := now
				ep.Status, ep.DisabledReason, ep.DisabledAt = EndpointDisabled, EndpointDisabledManually, &disabledAt
			default:
				return fmt.Errorf("webhook endpoint status %q", *changes.Status)
			}
			fields["status"], fields["disabled_reason"] = ep.Status, ep.DisabledReason
			fields["disabled_at"], fields["failing_since"] = ep.DisabledAt, ep.FailingSince
		}
		if len(fields) == 0 {
			return nil // what it was sent is what it has: nothing changes, updated_at included
		}
		fields["updated_at"], ep.UpdatedAt = now, now
		return tx.Model(&WebhookEndpoint{}).Where("id = ?", ep.ID).Updates(fields).Error
	})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// EndpointDeletedError is the last error of a delivery ended because its endpoint was deleted.
const EndpointDeletedError = "the endpoint was deleted"

// DeleteWebhookEndpoint soft-deletes a live endpoint of the scope at now: it no longer counts
// towards the limit, receives nothing and is not found. In the same transaction every delivery to
// it that has not ended (pending, its start owed or not; held; delivering) ends failed with
// EndpointDeletedError as its last error and no start owed: nothing would ever send a held one,
// and the log shows no delivery waiting for an endpoint that is gone.
//
// It returns the deliveries it ended whose workflow may still be running: the pending ones (a run
// started, or whose start is under way, that has not attempted yet) and the delivering ones (a
// run waiting for its next attempt). The caller cancels those workflows after the commit; one it
// does not reach finds the endpoint deleted at its next attempt and stops (DeliverWebhook). A held
// delivery has no run to cancel: it was recorded held, never started, or its run held it and
// stopped.
//
// It holds the endpoint's row (FOR UPDATE) before it touches a delivery, as every write that could
// leave a delivery waiting holds it before its own (recording an event for it, holding a delivery,
// queueing a replay, recording an attempt: FOR KEY SHARE; a recover or an update: FOR UPDATE), so
// on PostgreSQL a deletion and each of them run one after the other, whichever first, and the
// second sees what the first did: a delivery recorded, held or replayed just before the deletion
// is ended by it, one after it is not recorded, held or replayed. ErrNotFound for a missing,
// deleted or another scope's endpoint.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, scope WebhookScope, id string, now time.Time) (running []string, err error) {
	now = now.UTC().Truncate(time.Microsecond)
	err = s.conn(ctx).Transaction(func(tx *gorm.DB) error {
		ep, err := findWebhookEndpoint(scope.where(tx.Clauses(clause.Locking{Strength: "UPDATE"})), id)
		if err != nil {
			return err
		}
		if err := tx.Model(&WebhookEndpoint{}).Where("id = ?", ep.ID).
			Updates(map[string]any{"deleted_at": now, "updated_at": now}).Error; err != nil {
			return err
		}
		end := map[string]any{"status": WebhookFailed, "last_error": EndpointDeletedError, "next_attempt_at": nil,
			"start_due_at": nil, "updated_at": now}
		// Those that may have a run, by the UPDATE's RETURNING; then the held ones.
		var ended []WebhookDelivery
		if err := tx.Model(&ended).Clauses(clause.Returning{Columns: []clause.Column{{Name: "id"}}}).
			Where("endpoint_id = ? AND status IN ?", ep.ID, []string{WebhookPending, WebhookDelivering}).
			Updates(end).Error; err != nil {
			return err
		}
		for _, d := range ended {
			running = append(running, d.ID)
		}
		return tx.Model(&WebhookDelivery{}).Where("endpoint_id = ? AND status = ?", ep.ID, WebhookHeld).
			Updates(end).Error
	})
	if err != nil {
		return nil, err
	}
	return running, nil
}

// lockEndpointForDelivery holds the row of an endpoint (FOR KEY SHARE, which a deletion's FOR
// UPDATE waits for, and which waits for it) until the transaction ends, and reports whether the
// endpoint was deleted: what every write that leaves a delivery to it waiting checks first
// (DeleteWebhookEndpoint). An endpoint that does not exist is as good as deleted.
func lockEndpointForDelivery(tx *gorm.DB, endpointID string) (deleted bool, err error) {
	var ep WebhookEndpoint
	err = tx.Clauses(clause.Locking{Strength: "KEY SHARE"}).Select("id", "deleted_at").
		Where("id = ?", endpointID).Take(&ep).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return true, nil
	}
	return ep.DeletedAt != nil, err
}

// RotateEndpointSecret makes newSecret, sealed by box, the signing secret of a live endpoint of an
// account's own scope and keeps the current one as the previous secret, valid until
// now+PreviousSecretGrace (which it returns); a secret that was already previous is dropped. The
// swap is one UPDATE, so concurrent rotations cannot lose a secret that was shown to a client, as
// with RotateWebhookSecret. ErrNotFound for a missing, deleted or another scope's endpoint, and for
// every endpoint of an installation (which signs with its installation's secret).
func (s *Store) RotateEndpointSecret(ctx context.Context, box Sealer, scope WebhookScope, id, newSecret string, now time.Time) (time.Time, error) {
	if scope.Plugin() {
		return time.Time{}, ErrNotFound
	}
	now = now.UTC().Truncate(time.Microsecond)
	until := now.Add(PreviousSecretGrace)
	res := s.conn(ctx).Exec(`UPDATE webhook_endpoints SET
		previous_secret_enc = secret_enc,
		secret_enc = ?,
		previous_secret_valid_until = ?,
		updated_at = ?
		WHERE id = ? AND account_id = ? AND installation_id IS NULL AND deleted_at IS NULL`,
		box.Seal(newSecret), until, now, id, scope.AccountID)
	if res.Error != nil {
		return time.Time{}, res.Error
	}
	if res.RowsAffected == 0 {
		return time.Time{}, ErrNotFound
	}
	return until, nil
}

// EndpointSecrets returns the secrets that sign the deliveries to ep at now: the endpoint's own
// (current, then previous while its validity lasts) when it has one (an account's endpoint), else
// its installation's (WebhookSecrets); inst may be nil for an endpoint with its own secret.
func EndpointSecrets(box Sealer, ep *WebhookEndpoint, inst *Installation, now time.Time) ([]string, error) {
	if ep.SecretEnc == "" {
		if inst == nil {
			return nil, fmt.Errorf("webhook endpoint %s has no secret of its own and no installation", ep.ID)
		}
		return WebhookSecrets(box, inst, now)
	}
	current, err := box.Open(ep.SecretEnc)
	if err != nil {
		return nil, fmt.Errorf("webhook secret of endpoint %s: %w", ep.ID, err)
	}
	out := []string{current}
	if ep.PreviousSecretEnc != "" && ep.PreviousSecretValidUntil != nil && now.Before(*ep.PreviousSecretValidUntil) {
		previous, err := box.Open(ep.PreviousSecretEnc)
		if err != nil {
			return nil, fmt.Errorf("previous webhook secret of endpoint %s: %w", ep.ID, err)
		}
		out = append(out, previous)
	}
	return out, nil
}
