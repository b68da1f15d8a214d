package models

import (
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Idempotency-Key record statuses.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyCompleted  = "completed"
)

// IdempotencyTTL is how long a completed Idempotency-Key answer is replayed.
const IdempotencyTTL = 24 * time.Hour

// ErrIdempotencyClaimLost is returned by CompleteIdempotencyKey when the claim is no longer the
// caller's: it was released, or taken over after it had been abandoned for longer than the lease.
var ErrIdempotencyClaimLost = errors.New("idempotency key claim lost")

// IdempotencyKey is one Idempotency-Key of an installation: a claim while its first request runs,
// then the answer to replay.
type IdempotencyKey struct {
	ID             string `gorm:"primaryKey"`
	InstallationID string
	Key            string `gorm:"column:idempotency_key"`
	RequestHash    string
	Status         string
	ClaimToken     string
	OrderID        *string
	ResponseStatus *int
	// ResponseHeaders is the JSON of IdempotencyAnswer.Headers; nil on rows written before
	// migration 0011 (sessions, whose answer is JSON).
	ResponseHeaders *string
	ResponseBody    *string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	ExpiresAt       time.Time
}

// TableName is idempotency_keys.
func (IdempotencyKey) TableName() string { return "idempotency_keys" }

// IdempotencyAnswer is the answer recorded under a key and replayed for it: the status, the
// headers the route set (Content-Type, Cache-Control, ...) and the body, byte for byte.
type IdempotencyAnswer struct {
	Status  int
	Headers map[string][]string
	Body    []byte
}

// Answer is the recorded answer of a completed row (ok is false while the key is only claimed).
func (k *IdempotencyKey) Answer() (answer IdempotencyAnswer, ok bool, err error) {
	if k.Status != IdempotencyCompleted || k.ResponseBody == nil || k.ResponseStatus == nil {
		return IdempotencyAnswer{}, false, nil
	}
	answer = IdempotencyAnswer{Status: *k.ResponseStatus, Body: []byte(*k.ResponseBody)}
	if k.ResponseHeaders != nil {
		if err := json.Unmarshal([]byte(*k.ResponseHeaders), &answer.Headers); err != nil {
			return IdempotencyAnswer{}, false, err
		}
	}
	return answer, true, nil
}

// ClaimIdempotencyKey makes the caller the owner of (installationID, key) for a request whose
// canonical hash is requestHash, or returns the row that already holds the key.
//
// The claim is an INSERT that the unique index (installation_id, idempotency_key) arbitrates, so of
// any number of concurrent callers exactly one wins. A row that has expired, or a claim still in
// progress whose owner has not touched it for longer than lease (its process died between claim and
// commit: no order exists for it), is taken over with an UPDATE conditioned on its claim token, so
// a takeover also has exactly one winner. claimed is false when another request holds the key; the
// returned row then tells whether it completed and with which request hash.
func ClaimIdempotencyKey(db *gorm.DB, installationID, key, requestHash string, lease time.Duration) (row *IdempotencyKey, claimed bool, err error) {
	for range 5 {
		now := time.Now().UTC()
		fresh := &IdempotencyKey{
			ID: NewID(), InstallationID: installationID, Key: key, RequestHash: requestHash,
			Status: IdempotencyInProgress, ClaimToken: NewID(), CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(IdempotencyTTL),
		}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(fresh)
		if res.Error != nil {
			return nil, false, res.Error
		}
		if res.RowsAffected == 1 {
			return fresh, true, nil
		}
		existing, err := GetIdempotencyKey(db, installationID, key)
		if errors.Is(err, ErrNotFound) {
			continue // released or purged in between: claim again
		}
		if err != nil {
			return nil, false, err
		}
		expired := !now.Before(existing.ExpiresAt)
		abandoned := existing.Status == IdempotencyInProgress && now.Sub(existing.UpdatedAt) > lease
		if !expired && !abandoned {
			return existing, false, nil
		}
		// Take the row over: it becomes a fresh claim of this request (a different payload is fine,
		// since nothing was created under the old one, or its answer has expired).
		res = db.Model(&IdempotencyKey{}).
			Where("id = ? AND claim_token = ? AND status = ?", existing.ID, existing.ClaimToken, existing.Status).
			Updates(map[string]any{
				"request_hash": requestHash, "status": IdempotencyInProgress, "claim_token": fresh.ClaimToken,
				"order_id": nil, "response_status": nil, "response_headers": nil, "response_body": nil,
				"created_at": now, "updated_at": now, "expires_at": fresh.ExpiresAt,
			})
		if res.Error != nil {
			return nil, false, res.Error
		}
		if res.RowsAffected == 1 {
			fresh.ID = existing.ID
			return fresh, true, nil
		}
		// Another request took it over or completed it first: look again.
	}
	return nil, false, errors.New("idempotency key: claim did not settle after 5 rounds")
}

// GetIdempotencyKey loads the record of (installationID, key), or ErrNotFound.
func GetIdempotencyKey(db *gorm.DB, installationID, key string) (*IdempotencyKey, error) {
	var row IdempotencyKey
	err := db.Where("installation_id = ? AND idempotency_key = ?", installationID, key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &row, nil
}

// CompleteIdempotencyKey records the answer (status and body) of the claim's request, which
// created orderID: RecordIdempotencyAnswer without headers.
func CompleteIdempotencyKey(tx *gorm.DB, claim *IdempotencyKey, orderID string, status int, body []byte) error {
	return RecordIdempotencyAnswer(tx, claim, orderID, IdempotencyAnswer{Status: status, Body: body})
}

// RecordIdempotencyAnswer marks the claim completed with its request's answer. orderID names the
// order the request created ("" for none). Call it inside the transaction that commits the
// request's effect where there is one, so the effect and its answer commit together. It returns
// ErrIdempotencyClaimLost (and the caller must roll back) when the claim is no longer the caller's.
func RecordIdempotencyAnswer(tx *gorm.DB, claim *IdempotencyKey, orderID string, answer IdempotencyAnswer) error {
	now := time.Now().UTC()
	text := string(answer.Body)
	var headers *string
	if answer.Headers != nil {
		raw, err := json.Marshal(answer.Headers)
		if err != nil {
			return err
		}
		s := string(raw)
		headers = &s
	}
	var order *string
	if orderID != "" {
		order = &orderID
	}
	status := answer.Status
	res := tx.Model(&IdempotencyKey{}).
		Where("id = ? AND claim_token = ? AND status = ?", claim.ID, claim.ClaimToken, IdempotencyInProgress).
		Updates(map[string]any{
			"status": IdempotencyCompleted, "order_id": order, "response_status": status,
			"response_headers": headers, "response_body": text,
			"updated_at": now, "expires_at": now.Add(IdempotencyTTL),
		})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrIdempotencyClaimLost
	}
	claim.Status, claim.OrderID, claim.ResponseStatus = IdempotencyCompleted, order, &status
	claim.ResponseHeaders, claim.ResponseBody = headers, &text
	claim.UpdatedAt, claim.ExpiresAt = now, now.Add(IdempotencyTTL)
	return nil
}

// ReleaseIdempotencyKey deletes a claim that is still in progress and still the caller's, so a
// request that failed does not hold its key: a corrected retry may use it at once. A completed
// record is never deleted by it.
func ReleaseIdempotencyKey(db *gorm.DB, claim *IdempotencyKey) error {
	return db.Where("id = ? AND claim_token = ? AND status = ?", claim.ID, claim.ClaimToken, IdempotencyInProgress).
		Delete(&IdempotencyKey{}).Error
}
