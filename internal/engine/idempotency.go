package engine

import (
	"context"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
)

// Idempotency keys: a mutation sent with a client's key creates its order at most once per
// installation and key (the rules are the plugin API's, api/plugin/idempotency.go). The engine
// claims the key, replays the answer recorded under it, or waits for the request that holds it;
// the façade reads the key, hashes the request and encodes the answer it records.

// KeyTiming tunes RunOnce.
type KeyTiming struct {
	Wait  time.Duration // how long a request waits for the first request with its key to finish
	Poll  time.Duration // how often a waiting request looks at the key again
	Lease time.Duration // how long an unfinished claim is kept before another request may take it over
}

// KeyOutcome is what RunOnce did with a key.
type KeyOutcome int

const (
	// KeyRan: the request claimed the key and ran create.
	KeyRan KeyOutcome = iota
	// KeyReplayed: the key already names an answer for the same request; KeyResult.Body holds it.
	KeyReplayed
	// KeyConflict: the key was used with a different request.
	KeyConflict
	// KeyBusy: the first request with the key and payload still runs after Wait (or ctx ended).
	KeyBusy
)

// KeyResult is RunOnce's outcome, with the recorded answer of a replay.
type KeyResult struct {
	Outcome KeyOutcome
	Body    []byte
}

// KeyAnswer encodes the answer recorded under a key for a committed session.
type KeyAnswer func(order *models.Order, jobs []models.Job) ([]byte, error)

// RunOnce runs create at most once for the installation's key and request hash. It first deletes
// the installation's expired keys. When it claims the key it calls create with the SessionRecord to
// commit the session with (it records answer's body, with status, under the key in the order's
// transaction); create reports whether the session committed and whether the claim was lost to
// another request before it did (then RunOnce looks at the key again). A claim whose create commits
// nothing (a refusal, an error, a panic) is released so that the key is free again, also when ctx
// has ended. An error is the store's, from claiming the key.
func (e *Engine) RunOnce(ctx context.Context, installationID, key, hash string, timing KeyTiming, status int, answer KeyAnswer,
	create func(record SessionRecord) (committed, claimLost bool)) (KeyResult, error) {
	db := e.DB.WithContext(ctx)
	if _, err := models.PurgeExpiredIdempotencyKeys(db, installationID, time.Now()); err != nil {
		e.Log.Warn("purge expired idempotency keys", zap.String("installation_id", installationID), zap.Error(err))
	}
	deadline := time.Now().Add(timing.Wait)
	for {
		row, claimed, err := models.ClaimIdempotencyKey(db, installationID, key, hash, timing.Lease)
		if err != nil {
			return KeyResult{}, err
		}
		if claimed {
			if lost := e.runClaimed(ctx, row, status, answer, create); lost {
				continue // another request took the claim over: wait for its answer
			}
			return KeyResult{Outcome: KeyRan}, nil
		}
		if row.RequestHash != hash {
			return KeyResult{Outcome: KeyConflict}, nil
		}
		if row.Status == models.IdempotencyCompleted && row.ResponseBody != nil {
			return KeyResult{Outcome: KeyReplayed, Body: []byte(*row.ResponseBody)}, nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return KeyResult{Outcome: KeyBusy}, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(timing.Poll):
		}
	}
}

// runClaimed runs create under a claim the request holds and releases the claim unless a session
// committed under it.
func (e *Engine) runClaimed(ctx context.Context, claim *models.IdempotencyKey, status int, answer KeyAnswer,
	create func(record SessionRecord) (committed, claimLost bool)) (claimLost bool) {
	committed := false
	defer func() {
		if committed {
			return
		}
		// Also when the client hung up: the claim must not outlive the request.
		relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := models.ReleaseIdempotencyKey(e.DB.WithContext(relCtx), claim); err != nil {
			e.Log.Warn("release idempotency key", zap.String("id", claim.ID), zap.Error(err))
		}
	}()
	committed, claimLost = create(func(tx *gorm.DB, order *models.Order, jobs []models.Job) error {
		body, err := answer(order, jobs)
		if err != nil {
			return err
		}
		return models.CompleteIdempotencyKey(tx, claim, order.ID, status, body)
	})
	return claimLost
}
