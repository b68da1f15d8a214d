package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
)

func TestRunOnce(t *testing.T) {
	f := newSessionFixture(t, 1000)
	timing := engine.KeyTiming{Wait: 50 * time.Millisecond, Poll: 10 * time.Millisecond, Lease: time.Minute}
	runs := 0
	run := func(hash string, commit bool) engine.KeyResult {
		res, err := f.eng.Idempotency.RunOnce(t.Context(), engine.InstallationKeyScope(f.inst.ID), "key", hash, timing,
			func(claim *engine.KeyClaim) bool {
				runs++
				if !commit {
					return false // refused: nothing committed
				}
				record := func(ctx context.Context, tx *models.Store, s engine.Session) error {
					return claim.Record(ctx, tx, s.OrderID, engine.Answer{Status: 201, Body: []byte(`{"order_id":"` + s.OrderID + `"}`)})
				}
				_, err := f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 1)), record)
				require.NoError(t, err)
				assert.True(t, claim.Recorded())
				return true
			})
		require.NoError(t, err)
		return res
	}

	assert.Equal(t, engine.KeyRan, run("h1", false).Outcome)
	assert.Equal(t, engine.KeyRan, run("h2", true).Outcome, "a refusal releases the key, so another request may use it")
	var order models.Order
	require.NoError(t, f.db.Take(&order).Error)
	res := run("h2", true)
	assert.Equal(t, engine.KeyReplayed, res.Outcome)
	assert.Equal(t, 201, res.Answer.Status)
	assert.JSONEq(t, `{"order_id":"`+order.ID+`"}`, string(res.Answer.Body))
	assert.Equal(t, engine.KeyConflict, run("h3", true).Outcome)
	assert.Equal(t, 2, runs, "run runs only under a claim")
}

// A route without a transaction of its own completes its claim after its effect; the answer, with
// its headers, is replayed. A request whose in-transaction record finds its claim taken over looks
// at the key again and replays the other request's answer.
func TestRunOnceCompleteAndLostClaim(t *testing.T) {
	f := newSessionFixture(t, 1000)
	timing := engine.KeyTiming{Wait: time.Second, Poll: 10 * time.Millisecond, Lease: time.Minute}
	answer := engine.Answer{Status: 204, Headers: map[string][]string{"X-Thing": {"a"}}, Body: []byte{}}
	effects := 0
	once := func() engine.KeyResult {
		res, err := f.eng.Idempotency.RunOnce(t.Context(), engine.InstallationKeyScope(f.inst.ID), "del", "h", timing, func(claim *engine.KeyClaim) bool {
			effects++
			require.NoError(t, claim.Complete(t.Context(), answer))
			return true
		})
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, engine.KeyRan, once().Outcome)
	res := once()
	assert.Equal(t, engine.KeyReplayed, res.Outcome)
	assert.Equal(t, answer, res.Answer)
	assert.Equal(t, 1, effects)

	// The claim is taken over (as after a lease) before the first request records its answer.
	calls := 0
	res, err := f.eng.Idempotency.RunOnce(t.Context(), engine.InstallationKeyScope(f.inst.ID), "lost", "h", timing, func(claim *engine.KeyClaim) bool {
		calls++
		row, err := models.GetIdempotencyKey(f.db, f.inst.ID, "lost")
		require.NoError(t, err)
		require.NoError(t, f.db.Model(row).Update("claim_token", "someone-else").Error)
		row.ClaimToken = "someone-else"
		require.NoError(t, models.RecordIdempotencyAnswer(f.db, row, "", models.IdempotencyAnswer{Status: 200, Body: []byte("theirs")}))
		err = models.NewStore(f.db).Tx(t.Context(), func(tx *models.Store) error {
			return claim.Record(t.Context(), tx, "", engine.Answer{Status: 200, Body: []byte("mine")})
		})
		assert.ErrorIs(t, err, engine.ErrClaimLost)
		assert.True(t, claim.Lost())
		assert.False(t, claim.Recorded())
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, engine.KeyReplayed, res.Outcome)
	assert.Equal(t, "theirs", string(res.Answer.Body))
}

// A keyed generation request records its answer in the transaction that creates its order
// (KeyClaim.SubmittedRecord): a repeat replays it, and a request whose claim was taken over
// before it committed creates nothing.
func TestRunOnceRecordsAGenerationWithItsOrder(t *testing.T) {
	f := newGenFixture(t, 100)
	scope := engine.AccountKeyScope(f.account)
	timing := engine.KeyTiming{Wait: 200 * time.Millisecond, Poll: 10 * time.Millisecond, Lease: time.Minute}
	in := engine.IdeasInput{JobType: jobtype.SceneryIdea, Kind: engine.Sceneries, Preferences: "oak", Count: 2}
	requester := func(claim *engine.KeyClaim) engine.Requester {
		r := f.requester()
		r.Record = claim.SubmittedRecord(func(s engine.Submitted) (engine.Answer, error) {
			return engine.Answer{Status: 200, Body: []byte(s.OrderID + " " + s.ReservationID)}, nil
		})
		return r
	}
	var submitted engine.Submitted
	first, err := f.engine.Idempotency.RunOnce(t.Context(), scope, "k", "h", timing, func(claim *engine.KeyClaim) bool {
		s, err := f.engine.Generation.RegisterIdeas(t.Context(), requester(claim), in)
		require.NoError(t, err)
		assert.True(t, claim.Recorded(), "recorded in the order's transaction")
		submitted = s
		return true
	})
	require.NoError(t, err)
	assert.Equal(t, engine.KeyRan, first.Outcome)
	row, err := models.GetScopedIdempotencyKey(f.db, models.AccountKeyScope(f.account), "k")
	require.NoError(t, err)
	require.NotNil(t, row.OrderID)
	assert.Equal(t, submitted.OrderID, *row.OrderID)

	again, err := f.engine.Idempotency.RunOnce(t.Context(), scope, "k", "h", timing, func(*engine.KeyClaim) bool {
		t.Fatal("a repeat ran")
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, engine.KeyReplayed, again.Outcome)
	assert.Equal(t, submitted.OrderID+" "+submitted.ReservationID, string(again.Answer.Body))

	// The claim is taken over before the order commits: the order rolls back with its record.
	lost, err := f.engine.Idempotency.RunOnce(t.Context(), scope, "lost", "h", timing, func(claim *engine.KeyClaim) bool {
		row, err := models.GetScopedIdempotencyKey(f.db, models.AccountKeyScope(f.account), "lost")
		require.NoError(t, err)
		require.NoError(t, f.db.Model(row).Update("claim_token", "someone-else").Error)
		_, err = f.engine.Generation.RegisterIdeas(t.Context(), requester(claim), in)
		assert.ErrorIs(t, err, engine.ErrClaimLost)
		assert.True(t, claim.Lost())
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, engine.KeyBusy, lost.Outcome, "the other request's claim is still in progress")
	var orders int64
	require.NoError(t, f.db.Model(&models.Order{}).Where("account_id = ?", f.account).Count(&orders).Error)
	assert.Equal(t, int64(1), orders, "only the first request's order")
	acc, err := models.GetAccount(f.db, f.account)
	require.NoError(t, err)
	assert.Equal(t, submitted.CreditsReserved, acc.CreditsReserved)
}
