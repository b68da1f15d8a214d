package engine

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/models"
)

// Idempotency keys: a mutation sent with a client's key takes effect at most once per scope
// (an installation for the plugin API, a team account for the external API) and key; the rules
// are api/idempotency's. The engine claims the key, replays the answer recorded under it, or
// waits for the request that holds it; the façade reads the key, hashes the request and records
// the answer it sent: inside the transaction of the request's effect where the use case offers
// one (KeyClaim.Record, SessionRecord, SubmittedRecord), else right after (Complete).

// KeyScope is whose Idempotency-Keys a key is one of: an installation's (the plugin API) or a team
// account's (the external API); exactly one is set. Two scopes may use the same key independently.
type KeyScope struct {
	InstallationID string
	AccountID      string
}

// InstallationKeyScope is the scope of an installation's keys.
func InstallationKeyScope(installationID string) KeyScope {
	return KeyScope{InstallationID: installationID}
}

// AccountKeyScope is the scope of a team account's keys.
func AccountKeyScope(accountID string) KeyScope { return KeyScope{AccountID: accountID} }

// KeyTiming tunes RunOnce.
type KeyTiming struct {
	Wait  time.Duration // how long a request waits for the first request with its key to finish
	Poll  time.Duration // how often a waiting request looks at the key again
	Lease time.Duration // how long an unfinished claim is kept before another request may take it over
	TTL   time.Duration // how long a recorded answer is replayed; 0 is models.IdempotencyTTL (24 hours)
}

// KeyOutcome is what RunOnce did with a key.
type KeyOutcome int

const (
	// KeyRan: the request claimed the key and ran.
	KeyRan KeyOutcome = iota
	// KeyReplayed: the key already names an answer for the same request; KeyResult.Answer holds it.
	KeyReplayed
	// KeyConflict: the key was used with a different request.
	KeyConflict
	// KeyBusy: the first request with the key and payload still runs after Wait (or ctx ended).
	KeyBusy
)

// KeyResult is RunOnce's outcome, with the recorded answer of a replay.
type KeyResult struct {
	Outcome KeyOutcome
	Answer  Answer
}

// Answer is an answer recorded under a key and replayed for it: the status, the headers the route
// set (Content-Type, Cache-Control, ...) and the body, byte for byte.
type Answer struct {
	Status  int
	Headers map[string][]string
	Body    []byte
}

// ErrClaimLost is what recording an answer returns, and what rolls its transaction back, when
// another request has taken the key's claim over (after its lease): nothing was committed under it.
var ErrClaimLost = errors.New("idempotency key: the claim was taken over by another request")

// KeyClaim is a key its request holds while it runs: the request records its answer with it.
// It belongs to one request (one goroutine).
type KeyClaim struct {
	e        *Idempotency
	row      *models.IdempotencyKey
	recorded bool
	lost     bool
}

// Record records answer under the claim with tx, which should be the store of the transaction
// that commits the request's effect (orderID names the order it creates, "" for none), so that the
// effect and its answer commit together. It returns ErrClaimLost, and tx must roll back, when
// another request has taken the claim over.
func (k *KeyClaim) Record(ctx context.Context, tx *models.Store, orderID string, answer Answer) error {
	err := tx.RecordIdempotencyAnswer(ctx, k.row, orderID,
		models.IdempotencyAnswer{Status: answer.Status, Headers: answer.Headers, Body: answer.Body})
	switch {
	case errors.Is(err, models.ErrIdempotencyClaimLost):
		k.lost = true
		return ErrClaimLost
	case err == nil:
		k.recorded = true
	}
	return err
}

// SessionAnswer is the answer a keyed session records: what the façade would send for the session
// it commits.
type SessionAnswer func(s Session) (Answer, error)

// SessionRecord is what a keyed session commits with: it records answer's result under the claim
// in the transaction that creates the order, so the order exists exactly when the key names it.
func (k *KeyClaim) SessionRecord(answer SessionAnswer) SessionRecord {
	return func(ctx context.Context, tx *models.Store, s Session) error {
		a, err := answer(s)
		if err != nil {
			return err
		}
		return k.Record(ctx, tx, s.OrderID, a)
	}
}

// SubmittedAnswer is the answer a keyed generation request records: what the façade would send
// for the request it commits.
type SubmittedAnswer func(s Submitted) (Answer, error)

// SubmittedRecord is what a keyed generation request commits with (Requester.Record): it records
// answer's result under the claim in the transaction that creates the order, so the order exists
// exactly when the key names it.
func (k *KeyClaim) SubmittedRecord(answer SubmittedAnswer) SubmittedRecord {
	return func(ctx context.Context, tx *models.Store, s Submitted) error {
		a, err := answer(s)
		if err != nil {
			return err
		}
		return k.Record(ctx, tx, s.OrderID, a)
	}
}

// Complete records answer on its own, for a request whose effect has already committed: a crash
// between the two leaves the claim unfinished, and it is taken over after the lease. It records
// also when ctx has ended (the client hung up after the effect).
func (k *KeyClaim) Complete(ctx context.Context, answer Answer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return k.Record(ctx, k.e.store, "", answer)
}

// Recorded reports whether an answer was recorded under the claim (by Record, in a transaction
// the caller knows the fate of, or by Complete).
func (k *KeyClaim) Recorded() bool { return k.recorded }

// Lost reports whether recording found the claim taken over by another request.
func (k *KeyClaim) Lost() bool { return k.lost }

// RunOnce runs run at most once for the scope's key and request hash, and replays the
// answer recorded under the key otherwise; an expired key is claimed afresh (the worker's retention
// sweep deletes expired keys, retention.Purger). When it claims the key it calls run with the
// claim, and run reports whether the request's effect committed. A claim under which nothing
// committed (a refusal, an error, a panic) is released, so that the key is free again, also when
// ctx has ended; when nothing committed because the claim was lost to another request
// (KeyClaim.Lost), RunOnce looks at the key again. An error is the
// store's, from claiming the key or reading its answer.
func (e *Idempotency) RunOnce(ctx context.Context, scope KeyScope, key, hash string, timing KeyTiming,
	run func(claim *KeyClaim) (committed bool)) (KeyResult, error) {
	deadline := time.Now().Add(timing.Wait)
	stored := models.IdempotencyScope{InstallationID: scope.InstallationID, AccountID: scope.AccountID}
	for {
		row, claimed, err := e.store.ClaimIdempotencyKey(ctx, stored, key, hash, timing.Lease, timing.TTL)
		if err != nil {
			return KeyResult{}, err
		}
		if claimed {
			if lost := e.runClaimed(ctx, &KeyClaim{e: e, row: row}, run); lost {
				continue // another request took the claim over: wait for its answer
			}
			return KeyResult{Outcome: KeyRan}, nil
		}
		if row.RequestHash != hash {
			return KeyResult{Outcome: KeyConflict}, nil
		}
		answer, done, err := row.Answer()
		if err != nil {
			return KeyResult{}, err
		}
		if done {
			return KeyResult{Outcome: KeyReplayed, Answer: Answer{Status: answer.Status, Headers: answer.Headers, Body: answer.Body}}, nil
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

// runClaimed runs run under a claim the request holds and releases the claim unless something
// committed under it. claimLost is true when nothing committed because the claim was taken over.
func (e *Idempotency) runClaimed(ctx context.Context, claim *KeyClaim, run func(claim *KeyClaim) bool) (claimLost bool) {
	committed := false
	defer func() {
		if committed {
			return
		}
		// Also when the client hung up: the claim must not outlive the request.
		relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := e.store.ReleaseIdempotencyKey(relCtx, claim.row); err != nil {
			e.cfg.Log.Warn("release idempotency key", zap.String("id", claim.row.ID), zap.Error(err))
		}
	}()
	committed = run(claim)
	return !committed && claim.lost
}
