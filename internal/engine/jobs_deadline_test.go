package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// Cancel-After's edges: 10 s and 24 h are allowed, a second less or more is not; a Go duration or
// a whole number of seconds; anything else, and the header twice, is refused naming the header.
func TestParseCancelAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		values []string
		want   time.Duration // 0 with ok: no header
		ok     bool
	}{
		{nil, 0, true},
		{[]string{"10s"}, 10 * time.Second, true},
		{[]string{"24h"}, 24 * time.Hour, true},
		{[]string{"90s"}, 90 * time.Second, true},
		{[]string{"2h30m"}, 150 * time.Minute, true},
		{[]string{"600"}, 10 * time.Minute, true},
		{[]string{"10"}, 10 * time.Second, true},
		{[]string{"86400"}, 24 * time.Hour, true},
		{[]string{"0.5m"}, 30 * time.Second, true},
		{[]string{"9s"}, 0, false},
		{[]string{"9999ms"}, 0, false},
		{[]string{"9"}, 0, false},
		{[]string{"24h1s"}, 0, false},
		{[]string{"86401"}, 0, false},
		{[]string{"99999999999999999999999"}, 0, false},
		{[]string{"abc"}, 0, false},
		{[]string{"-5"}, 0, false},
		{[]string{"-5s"}, 0, false},
		{[]string{"0"}, 0, false},
		{[]string{""}, 0, false},
		{[]string{"1.5"}, 0, false},
		{[]string{"10s, 20s"}, 0, false},
		{[]string{"10s", "20s"}, 0, false},
		{[]string{"600", "600"}, 0, false},
	} {
		got, err := engine.ParseCancelAfter(tc.values)
		if tc.ok {
			assert.NoError(t, err, "%q", tc.values)
			assert.Equal(t, tc.want, got, "%q", tc.values)
			continue
		}
		e, ok := engine.As(err)
		if assert.True(t, ok, "%q: want a refusal, got %v (%s)", tc.values, err, got) {
			assert.Equal(t, engine.KindInvalid, e.Kind, "%q", tc.values)
			assert.Equal(t, engine.HeaderCancelAfter, e.Field, "%q", tc.values)
		}
	}
	_, err := engine.ParseCancelAfter([]string{"10s", "20s"})
	assert.EqualError(t, err, "Cancel-After: is sent 2 times; send it once.")
	_, err = engine.ParseCancelAfter([]string{strings.Repeat("9", 200)})
	e, _ := engine.As(err)
	require.NotNil(t, e)
	assert.Less(t, len(e.Message), 220, "the refusal quotes a long value whole: %s", e.Message)
}

// A session and a generation request with Cancel-After carry their deadline on every job,
// Cancel-After after acceptance; without it, none.
func TestRequestsCarryTheirStartDeadline(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 100)
	req := f.request("", shoot("ok", 2))
	req.CancelAfter = 90 * time.Second
	before := time.Now()
	s, err := f.eng.Sessions.CommitSession(t.Context(), req, nil)
	require.NoError(t, err)
	for _, sj := range s.Jobs {
		j, err := models.GetJob(f.db, sj.ID)
		require.NoError(t, err)
		require.NotNil(t, j.StartDeadline)
		assert.WithinDuration(t, before.Add(90*time.Second), *j.StartDeadline, 2*time.Second)
	}
	s, err = f.eng.Sessions.CommitSession(t.Context(), f.request("", shoot("ok", 1)), nil)
	require.NoError(t, err)
	j, err := models.GetJob(f.db, s.Jobs[0].ID)
	require.NoError(t, err)
	assert.Nil(t, j.StartDeadline)

	g := newGenFixture(t, 100)
	r := g.requester()
	r.CancelAfter = time.Hour
	p, err := g.engine.Generation.PlanIdeas(t.Context(), r, engine.IdeasInput{JobType: jobtype.SceneryIdea,
		Kind: engine.Sceneries, Preferences: "a beach", Count: 2})
	require.NoError(t, err)
	require.Len(t, p.Jobs, 2)
	for _, j := range p.Jobs {
		require.NotNil(t, j.StartDeadline)
		assert.WithinDuration(t, before.Add(time.Hour), *j.StartDeadline, 2*time.Second)
	}
}

// pastDeadline moves the start deadline of the jobs a second into the past.
func pastDeadline(t *testing.T, db *gorm.DB, ids ...string) {
	t.Helper()
	require.NoError(t, db.Model(&models.Job{}).Where("id IN ?", ids).Update("start_deadline", time.Now().UTC().Add(-time.Second)).Error)
}

// The deadline sweep's use case cancels the pending jobs past their deadline that have not begun,
// as a client's cancel does, on both databases: each ends cancelled for the deadline, its
// reservation released, its job.cancelled delivery recorded and started, and its order told to
// drop it; a job whose deadline is ahead, one without a deadline and one that began run on. It
// reads in batches: fewer read than asked means none is left.
func TestCancelPastDeadline(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		f := newSessionFixtureOn(t, db, 100)
		now := time.Now().UTC()
		require.NoError(t, db.Create(&models.WebhookEndpoint{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: &f.inst.ID,
			URL: "https://shop.example/hooks", Events: models.StringList(webhooks.DefaultPluginEvents), Status: models.EndpointEnabled,
			CreatedAt: now, UpdatedAt: now}).Error)
		up := newCancelTemporal(t, false)
		f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })
		req := f.request("", shoot("ok", 5))
		req.CancelAfter = time.Hour
		s, err := f.eng.Sessions.CommitSession(ctx, req, nil)
		require.NoError(t, err)
		plain, err := f.eng.Sessions.CommitSession(ctx, f.request("", shoot("ok", 1)), nil)
		require.NoError(t, err)
		jobs := s.Jobs
		// jobs[0..2] are past their deadline; jobs[3] began before it passed; jobs[4]'s is ahead.
		store := models.NewStore(db)
		require.NoError(t, store.BeginAttempt(ctx, jobs[3].ID, 1, 1))
		pastDeadline(t, db, jobs[0].ID, jobs[1].ID, jobs[2].ID, jobs[3].ID)

		n, read, err := f.eng.Jobs.CancelPastDeadline(ctx, 2)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		assert.Equal(t, 2, read)
		n, read, err = f.eng.Jobs.CancelPastDeadline(ctx, 2)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, read, "the last page is short")
		n, read, err = f.eng.Jobs.CancelPastDeadline(ctx, 2)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, read)

		var deliveries []string
		var cost int64
		for i, sj := range jobs {
			j, err := models.GetJob(db, sj.ID)
			require.NoError(t, err)
			if i > 2 {
				assert.NotEqual(t, status.JobCancelled, j.Status, "job %d", i)
				assert.Nil(t, j.CancelReason, "job %d", i)
				continue
			}
			assert.Equal(t, status.JobCancelled, j.Status, "job %d", i)
			require.NotNil(t, j.CancelReason, "job %d", i)
			assert.Equal(t, status.CancelDeadline, *j.CancelReason)
			cost += j.CreditCost
			var released int64
			require.NoError(t, db.Model(&models.LedgerEntry{}).Where("job_id = ? AND kind = ?", j.ID, models.LedgerRelease).Count(&released).Error)
			assert.Equal(t, int64(1), released, "job %d", i)
			d := deliveryOf(t, f, j.ID)
			require.NotNil(t, d, "job %d: no job.cancelled delivery", i)
			assert.Nil(t, d.StartDueAt, "job %d: its delivery's start is still owed", i)
			deliveries = append(deliveries, workflows.WebhookWorkflowID(d.ID))
		}
		j, err := models.GetJob(db, plain.Jobs[0].ID)
		require.NoError(t, err)
		assert.Equal(t, status.JobPending, j.Status)
		assert.ElementsMatch(t, deliveries, up.starts)
		order := workflows.OrderWorkflowID(s.OrderID)
		assert.Equal(t, []string{order, order, order}, up.signals)

		// The view shows why.
		v, err := f.eng.Jobs.FindJob(ctx, f.inst.ID, jobs[0].ID)
		require.NoError(t, err)
		assert.Equal(t, status.CancelDeadline, *v.CancelReason)
		o, err := models.NewStore(db).GetOrder(ctx, s.OrderID)
		require.NoError(t, err)
		assert.Equal(t, 3, o.JobsCancelled)
		assert.Equal(t, cost, o.CreditsReleased)
	})
}

// SweepDeadlines cancels what is due at once and again at every interval, until its context ends.
func TestSweepDeadlines(t *testing.T) {
	t.Parallel()
	f := newSessionFixture(t, 100)
	up := newCancelTemporal(t, false)
	f.withEngine(func(cfg *engine.Config) { cfg.Temporal = up })
	req := f.request("", shoot("ok", 2))
	req.CancelAfter = time.Hour
	s, err := f.eng.Sessions.CommitSession(t.Context(), req, nil)
	require.NoError(t, err)
	pastDeadline(t, f.db, s.Jobs[0].ID)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.eng.Jobs.SweepDeadlines(ctx, 20*time.Millisecond)
	}()
	cancelled := func(id string) bool {
		j, err := models.GetJob(f.db, id)
		require.NoError(t, err)
		return j.Status == status.JobCancelled
	}
	require.Eventually(t, func() bool { return cancelled(s.Jobs[0].ID) }, 5*time.Second, 10*time.Millisecond)
	assert.False(t, cancelled(s.Jobs[1].ID))
	pastDeadline(t, f.db, s.Jobs[1].ID)
	require.Eventually(t, func() bool { return cancelled(s.Jobs[1].ID) }, 5*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep did not stop with its context")
	}
}
