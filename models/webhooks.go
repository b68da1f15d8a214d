package models

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Webhook delivery statuses.
const (
	// WebhookPending: created, not attempted yet.
	WebhookPending = "pending"
	// WebhookDelivering: attempted without success so far; more attempts are scheduled.
	WebhookDelivering = "delivering"
	// WebhookDelivered: the receiver acknowledged the latest run with a 2xx.
	WebhookDelivered = "delivered"
	// WebhookFailed: every attempt of the latest run failed; only a replay or a recover sends it
	// again. Also a delivery whose endpoint was deleted before it was delivered
	// (EndpointDeletedError), which nothing sends again.
	WebhookFailed = "failed"
	// WebhookHeld: recorded for, or stopped at, a disabled endpoint and not attempted; a recover
	// after the endpoint is enabled again sends it, and deleting the endpoint fails it.
	WebhookHeld = "held"
)

// PreviousSecretGrace is how long a rotated-out webhook secret keeps signing (api/openapi.yaml, rotateWebhookSecret).
const PreviousSecretGrace = 48 * time.Hour

// WebhookDelivery is one event sent to one endpoint. A delivery recorded before endpoints existed
// (migration 0016) has the ID of its event and its own copy of the body; later ones read the body
// from their event.
type WebhookDelivery struct {
	ID             string `gorm:"primaryKey"`
	EventID        string
	EndpointID     *string // nil: recorded before endpoints for an installation without a callback URL
	AccountID      string
	InstallationID *string // nil: an external account's
	OrderID        *string // nil: an event without an order (endpoint.disabled, webhook.test)
	JobID          *string
	Run            int
	Event          string
	Payload        JSON   // the body of a delivery recorded before 0016; nil for later ones (the event's)
	CallbackURL    string // the URL of the latest attempt, or where the first one will go
	Status         string
	Attempts       int // attempts of every run, replays included
	LastStatusCode *int
	LastError      string
	NextAttemptAt  *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	DeliveredAt    *time.Time
	// StartDueAt is set on a delivery recorded outside a workflow (a job the API cancelled) until
	// the start of its workflow is recorded: the outbox the sweeper starts it from (migration 0015).
	StartDueAt *time.Time
	// TestMode marks a delivery of a test twin (its account is one, migration 0021), copied from
	// the account when its event is recorded (migration 0028): every start of its workflow reads
	// the row, and gives the workflow its ShotflowLivemode from it.
	TestMode bool
}

// MaxKeptAttempts is how many attempts of one delivery the log keeps: the latest ones, as many as
// two whole runs of the retry schedule (8 attempts each) make. Recording an attempt deletes the
// delivery's attempts older than those (RecordWebhookAttempt), so replays and recovers cannot grow
// the log without bound; the delivery's Attempts still counts every attempt made.
const MaxKeptAttempts = 16

// WebhookAttempt is one HTTP request of a delivery.
type WebhookAttempt struct {
	ID         string `gorm:"primaryKey"`
	DeliveryID string
	Attempt    int  // number of the attempt within its workflow run (1–8)
	Replay     bool // made by a run started with POST /webhooks/{id}/replay
	StartedAt  time.Time
	StatusCode *int  // nil when no HTTP answer arrived
	LatencyMS  int64 `gorm:"column:latency_ms"`
	Error      string
	CreatedAt  time.Time
}

// deliveryNamespace derives stable delivery IDs.
var deliveryNamespace = uuid.MustParse("3b0d7c2e-5f4a-4c1e-9e8d-2a6b1f0c9d47")

// WebhookDeliveryID is the ID of the delivery of an event of a job run: the same inputs always
// give the same ID, so recording a delivery twice creates one row.
func WebhookDeliveryID(jobID string, run int, event string) string {
	return uuid.NewSHA1(deliveryNamespace, fmt.Appendf(nil, "%s/%d/%s", jobID, run, event)).String()
}

// CreateWebhookDelivery inserts d unless a delivery with its ID or its (event, endpoint) exists;
// created reports whether this call inserted it. Events record their deliveries with
// Store.RecordEvents; tests and tools set up single rows with it. d's TestMode is its account's
// test_mode, read here as RecordEvents reads it (an account never changes mode, migration 0028),
// whatever d said: a test twin's delivery is never stored live, nor a live account's as a test.
func CreateWebhookDelivery(db *gorm.DB, d *WebhookDelivery) (created bool, err error) {
	var modes []bool
	if err := db.Model(&Account{}).Where("id = ?", d.AccountID).Pluck("test_mode", &modes).Error; err != nil {
		return false, fmt.Errorf("mode of the account of delivery %s: %w", d.ID, err)
	}
	d.TestMode = len(modes) == 1 && modes[0]
	now := time.Now().UTC()
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	d.UpdatedAt = d.CreatedAt
	if d.Status == "" {
		d.Status = WebhookPending
	}
	if d.EventID == "" {
		d.EventID = d.ID // a delivery of its own event, as every delivery before 0016
	}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(d)
	return res.RowsAffected == 1, res.Error
}

// GetWebhookDelivery loads a delivery by ID.
func GetWebhookDelivery(db *gorm.DB, id string) (*WebhookDelivery, error) {
	var d WebhookDelivery
	if err := db.Where("id = ?", id).Take(&d).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &d, nil
}

// FindWebhookDelivery loads a delivery of one installation; another installation's is not found.
func FindWebhookDelivery(db *gorm.DB, installationID, id string) (*WebhookDelivery, error) {
	var d WebhookDelivery
	if err := db.Where("id = ? AND installation_id = ?", id, installationID).Take(&d).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &d, nil
}

// WebhookAttempts lists a delivery's attempts, oldest first.
func WebhookAttempts(db *gorm.DB, deliveryID string) ([]WebhookAttempt, error) {
	var out []WebhookAttempt
	err := db.Where("delivery_id = ?", deliveryID).Order("started_at, created_at").Find(&out).Error
	return out, err
}

// attemptsNewestFirst is the order in which a delivery's attempts are its latest first: by when
// they began, then when they were recorded, then ID (the reverse of the log's).
const attemptsNewestFirst = "started_at DESC, created_at DESC, id DESC"

// pruneAttempts deletes the attempts of a delivery beyond its latest MaxKeptAttempts.
func pruneAttempts(tx *gorm.DB, deliveryID string) error {
	kept := tx.Model(&WebhookAttempt{}).Select("id").Where("delivery_id = ?", deliveryID).
		Order(attemptsNewestFirst).Limit(MaxKeptAttempts)
	return tx.Where("delivery_id = ? AND id NOT IN (?)", deliveryID, kept).Delete(&WebhookAttempt{}).Error
}

// keepLatestAttempts keeps, of attempts (oldest first, of one delivery or several), the latest
// MaxKeptAttempts of each delivery, in their order: a delivery whose attempts were recorded before
// the log was bounded may have more until its next attempt prunes them, and no view shows them.
func keepLatestAttempts(attempts []WebhookAttempt) []WebhookAttempt {
	total := map[string]int{}
	for _, a := range attempts {
		total[a.DeliveryID]++
	}
	seen := map[string]int{}
	out := make([]WebhookAttempt, 0, len(attempts))
	for _, a := range attempts {
		seen[a.DeliveryID]++
		if total[a.DeliveryID]-seen[a.DeliveryID] < MaxKeptAttempts {
			out = append(out, a)
		}
	}
	return out
}

// AttemptRecord is the outcome of one attempt, for RecordWebhookAttempt.
type AttemptRecord struct {
	Attempt       int
	Replay        bool
	CallbackURL   string // where it was sent
	StartedAt     time.Time
	StatusCode    int // 0: no HTTP answer
	Latency       time.Duration
	Error         string
	Delivered     bool
	NextAttemptAt *time.Time // when the next attempt is due, if one is scheduled
}

// RecordWebhookAttempt stores an attempt and brings its delivery up to date in one transaction.
func RecordWebhookAttempt(db *gorm.DB, deliveryID string, r AttemptRecord) error {
	_, err := recordWebhookAttempt(db, deliveryID, r, false)
	return err
}

// recordWebhookAttempt is RecordWebhookAttempt, reporting whether the attempt was stale: a failed
// one that began before its delivery's 2xx (an attempt of a run a replay replaced, still sending
// when the replay was delivered). A stale attempt is logged, and changes nothing else. The
// delivery keeps its latest MaxKeptAttempts attempts: once it has made more, recording one deletes
// the oldest (one more statement, only then), and its attempts column counts them all. final
// marks a failed attempt after which nothing more is scheduled (its endpoint was deleted): the
// delivery ends failed rather than delivering.
func recordWebhookAttempt(db *gorm.DB, deliveryID string, r AttemptRecord, final bool) (stale bool, err error) {
	now := time.Now().UTC()
	var code *int
	if r.StatusCode != 0 {
		code = &r.StatusCode
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		fields := map[string]any{
			"attempts":         gorm.Expr("attempts + 1"),
			"last_status_code": code,
			"last_error":       r.Error,
			"callback_url":     r.CallbackURL,
			"status":           WebhookDelivering,
			"next_attempt_at":  r.NextAttemptAt,
			"updated_at":       now,
		}
		// The UPDATE returns the delivery's count of attempts, this one included.
		var after WebhookDelivery
		returning := clause.Returning{Columns: []clause.Column{{Name: "attempts"}}}
		q := tx.Model(&after).Clauses(returning).Where("id = ?", deliveryID)
		if r.Delivered {
			fields["status"] = WebhookDelivered
			fields["delivered_at"] = now
			fields["next_attempt_at"] = nil
		} else {
			if final {
				fields["status"], fields["next_attempt_at"] = WebhookFailed, nil
			}
			// A failed attempt that began before a 2xx another run got meanwhile (a replay that
			// replaced the run whose attempt was still sending) never takes it back: the delivery
			// stays delivered. One that began after it (a replay of a delivered delivery that
			// fails) is the delivery's state from then on.
			q = q.Where("(status <> ? OR delivered_at < ?)", WebhookDelivered, r.StartedAt.UTC())
		}
		res := q.Updates(fields)
		if res.Error == nil && res.RowsAffected == 0 && !r.Delivered {
			res = tx.Model(&after).Clauses(returning).Where("id = ?", deliveryID).Updates(map[string]any{
				"attempts": gorm.Expr("attempts + 1"), "updated_at": now})
			stale = res.RowsAffected > 0
		}
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		if err := tx.Create(&WebhookAttempt{
			ID: NewID(), DeliveryID: deliveryID, Attempt: r.Attempt, Replay: r.Replay, StartedAt: r.StartedAt.UTC(),
			StatusCode: code, LatencyMS: r.Latency.Milliseconds(), Error: r.Error, CreatedAt: now,
		}).Error; err != nil {
			return err
		}
		if after.Attempts <= MaxKeptAttempts {
			return nil
		}
		return pruneAttempts(tx, deliveryID)
	})
	return stale, err
}

// RotateWebhookSecret makes newSecret the installation's signing secret and keeps the current
// one as the previous secret, valid until now+PreviousSecretGrace. A secret that was already
// previous is dropped. The swap is one UPDATE, so concurrent rotations cannot lose a secret that
// was shown to a client. It returns the end of the previous secret's validity.
func RotateWebhookSecret(db *gorm.DB, box Sealer, installationID, newSecret string, now time.Time) (time.Time, error) {
	until := now.UTC().Add(PreviousSecretGrace)
	res := db.Exec(`UPDATE installations SET
		previous_webhook_secret_enc = webhook_secret_enc,
		webhook_secret_enc = ?,
		previous_secret_valid_until = ?,
		updated_at = ?
		WHERE id = ?`, box.Seal(newSecret), until, now.UTC(), installationID)
	if res.Error != nil {
		return time.Time{}, res.Error
	}
	if res.RowsAffected == 0 {
		return time.Time{}, ErrNotFound
	}
	return until, nil
}

// WebhookSecrets returns the secrets that sign the installation's webhooks at now: the current
// one, then the previous one while its validity lasts.
func WebhookSecrets(box Sealer, inst *Installation, now time.Time) ([]string, error) {
	current, err := box.Open(inst.WebhookSecretEnc)
	if err != nil {
		return nil, fmt.Errorf("webhook secret of installation %s: %w", inst.ID, err)
	}
	out := []string{current}
	if inst.PreviousWebhookSecretEnc != "" && inst.PreviousSecretValidUntil != nil && now.Before(*inst.PreviousSecretValidUntil) {
		previous, err := box.Open(inst.PreviousWebhookSecretEnc)
		if err != nil {
			return nil, fmt.Errorf("previous webhook secret of installation %s: %w", inst.ID, err)
		}
		out = append(out, previous)
	}
	return out, nil
}

// Installation is the delivery's installation ID, "" for an external account's.
func (d *WebhookDelivery) Installation() string { return valueOr(d.InstallationID) }

// Order is the delivery's order ID, "" for an event without an order.
func (d *WebhookDelivery) Order() string { return valueOr(d.OrderID) }

// Job is the delivery's job ID, "" for an event without a job.
func (d *WebhookDelivery) Job() string { return valueOr(d.JobID) }

// valueOr is *p, or "" when p is nil.
func valueOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
