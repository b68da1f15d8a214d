package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

func TestRunOnce(t *testing.T) {
	f := newSessionFixture(t, 1000)
	timing := engine.KeyTiming{Wait: 50 * time.Millisecond, Poll: 10 * time.Millisecond, Lease: time.Minute}
	answer := func(order *models.Order, _ []models.Job) ([]byte, error) {
		return []byte(`{"order_id":"` + order.ID + `"}`), nil
	}
	runs := 0
	run := func(hash string, commit bool) engine.KeyResult {
		res, err := f.eng.RunOnce(t.Context(), f.inst.ID, "key", hash, timing, 201, answer,
			func(record engine.SessionRecord) (bool, bool) {
				runs++
				if !commit {
					return false, false // refused: nothing committed
				}
				_, _, err := f.eng.CommitSession(t.Context(), f.request("", shoot("ok", 1)), record)
				require.NoError(t, err)
				return true, false
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
	assert.JSONEq(t, `{"order_id":"`+order.ID+`"}`, string(res.Body))
	assert.Equal(t, engine.KeyConflict, run("h3", true).Outcome)
	assert.Equal(t, 2, runs, "create runs only under a claim")
}
