package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Idempotency-Key record statuses.
const (
	IdempotencyInProgress = "in_progress"
	IdempotencyCompleted  = "completed"
)

// IdempotencyTTL is how long a completed Idempotency-Key answer is replayed (24 hours; a claim
// may ask for another, ClaimScopedIdempotencyKey).
const IdempotencyTTL = 24 * time.Hour

// ErrIdempotencyClaimLost is returned by CompleteIdempotencyKey when the claim is no longer the
// caller's: it was released, or taken over after it had been abandoned for longer than the lease.
var ErrIdempotencyClaimLost = errors.New("idempotency key claim lost")

// IdempotencyKey is one Idempotency-Key of an installation or of an account (its scope): a claim
// while its first request runs, then the answer to replay.
type IdempotencyKey struct {
	ID string `gorm:"primaryKey"`
	// InstallationID is the installation whose key it is (the plugin API); nil for an account's.
	InstallationID *string
	// AccountID is the team account whose key it is (the external API); nil for an installation's.
	AccountID      *string
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

	// ttl is how long the answer recorded under this claim is replayed (IdempotencyTTL when 0).
	ttl time.Duration
}

// TableName is idempotency_keys.
func (IdempotencyKey) TableName() string { return "idempotency_keys" }

// IdempotencyScope is whose Idempotency-Keys a key is one of: an installation's (the plugin API)
// or a team account's (the external API). Exactly one of the two is set; two scopes may use the
// same key independently.
type IdempotencyScope struct {
	InstallationID string
	AccountID      string
}

// InstallationKeyScope is the scope of an installation's keys.
func InstallationKeyScope(installationID string) IdempotencyScope {
	return IdempotencyScope{InstallationID: installationID}
}

// AccountKeyScope is the scope of a team account's keys.
func AccountKeyScope(accountID string) IdempotencyScope {
	return IdempotencyScope{AccountID: accountID}
}

// check refuses a scope that names neither an installation nor an account, or both.
func (s IdempotencyScope) check() error {
	if (s.InstallationID == "") == (s.AccountID == "") {
		return fmt.Errorf("idempotency key: a scope names an installation or an account, exactly one (%+v)", s)
	}
	return nil
}

// of narrows q to the scope's keys (the unique index of the scope serves it).
func (s IdempotencyScope) of(q *gorm.DB) *gorm.DB {
	if s.InstallationID != "" {
		return q.Where("installation_id = ?", s.InstallationID)
	}
	return q.Where("account_id = ?", s.AccountID)
}

// owners are the row's installation_id and account_id.
func (s IdempotencyScope) owners() (installationID, accountID *string) {
	if s.InstallationID != "" {
		id := s.InstallationID
		return &id, nil
	}
	id := s.AccountID
	return nil, &id
}

// orTTL is ttl, or IdempotencyTTL when ttl is not positive.
func orTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return IdempotencyTTL
	}
	return ttl
}

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

// ClaimIdempotencyKey is ClaimScopedIdempotencyKey for an installation's key, whose answer is
// replayed for IdempotencyTTL.
func ClaimIdempotencyKey(db *gorm.DB, installationID, key, requestHash string, lease time.Duration) (row *IdempotencyKey, claimed bool, err error) {
	return ClaimScopedIdempotencyKey(db, InstallationKeyScope(installationID), key, requestHash, lease, IdempotencyTTL)
}

// ClaimScopedIdempotencyKey makes the caller the owner of the scope's key for a request whose
// canonical hash is requestHash, or returns the row that already holds the key. The answer the
// caller records under its claim is replayed for ttl (IdempotencyTTL when 0).
//
// The claim is an INSERT that the unique index of the scope ((installation_id, idempotency_key)
// or (account_id, idempotency_key)) arbitrates, so of any number of concurrent callers exactly
// one wins. A row that has expired, or a claim still in progress whose owner has not touched it
// for longer than lease (its process died between claim and commit: no order exists for it), is
// taken over with an UPDATE conditioned on its claim token, so a takeover also has exactly one
// winner. claimed is false when another request holds the key; the returned row then tells
// whether it completed and with which request hash.
func ClaimScopedIdempotencyKey(db *gorm.DB, scope IdempotencyScope, key, requestHash string, lease, ttl time.Duration) (row *IdempotencyKey, claimed bool, err error) {
	if err := scope.check(); err != nil {
		return nil, false, err
	}
	ttl = orTTL(ttl)
	installationID, accountID := scope.owners()
	for range 5 {
		now := time.Now().UTC()
		fresh := &IdempotencyKey{
			ID: NewID(), InstallationID: installationID, AccountID: accountID, Key: key, RequestHash: requestHash,
			Status: IdempotencyInProgress, ClaimToken: NewID(), CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(ttl), ttl: ttl,
		}
		res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(fresh)
		if res.Error != nil {
			return nil, false, res.Error
		}
		if res.RowsAffected == 1 {
			return fresh, true, nil
		}
		existing, err := GetScopedIdempotencyKey(db, scope, key)
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

// GetIdempotencyKey loads the record of an installation's key, or ErrNotFound.
func GetIdempotencyKey(db *gorm.DB, installationID, key string) (*IdempotencyKey, error) {
	return GetScopedIdempotencyKey(db, InstallationKeyScope(installationID), key)
}

// GetScopedIdempotencyKey loads the record of the scope's key, or ErrNotFound.
func GetScopedIdempotencyKey(db *gorm.DB, scope IdempotencyScope, key string) (*IdempotencyKey, error) {
	if err := scope.check(); err != nil {
		return nil, err
	}
	var row IdempotencyKey
	err := scope.of(db).Where("idempotency_key = ?", key).Take(&row).Error
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
	expires := now.Add(orTTL(claim.ttl))
	res := tx.Model(&IdempotencyKey{}).
		Where("id = ? AND claim_token = ? AND status = ?", claim.ID, claim.ClaimToken, IdempotencyInProgress).
		Updates(map[string]any{
			"status": IdempotencyCompleted, "order_id": order, "response_status": status,
			"response_headers": headers, "response_body": text,
			"updated_at": now, "expires_at": expires,
		})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrIdempotencyClaimLost
	}
	claim.Status, claim.OrderID, claim.ResponseStatus = IdempotencyCompleted, order, &status
	claim.ResponseHeaders, claim.ResponseBody = headers, &text
	claim.UpdatedAt, claim.ExpiresAt = now, expires
	return nil
}

// ReleaseIdempotencyKey deletes a claim that is still in progress and still the caller's, so a
// request that failed does not hold its key: a corrected retry may use it at once. A completed
// record is never deleted by it.
func ReleaseIdempotencyKey(db *gorm.DB, claim *IdempotencyKey) error {
	return db.Where("id = ? AND claim_token = ? AND status = ?", claim.ID, claim.ClaimToken, IdempotencyInProgress).
		Delete(&IdempotencyKey{}).Error
}
