package models_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// eventTypes lists the order's events as "type job-index" strings (job index -1: the order).
func eventTypes(t *testing.T, s *models.Store, order *models.Order, jobs []models.Job) []string {
	t.Helper()
	o, err := s.GetOrder(t.Context(), order.ID)
	require.NoError(t, err)
	events, err := s.OrderEventsAfter(t.Context(), order.ID, 0, o.EventSeq, 1000)
	require.NoError(t, err)
	index := map[string]int{}
	for i, j := range jobs {
		index[j.ID] = i
	}
	var out []string
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "the order's events are numbered 1, 2, ... without a gap")
		who := -1
		if e.JobID != nil {
			who = index[*e.JobID]
		}
		out = append(out, e.Type+" "+string(rune('0'+who+1)))
	}
	require.Equal(t, int64(len(events)), o.EventSeq)
	return out
}

// Every change of a job's status, attempt or run is one event of its order, and the order's end
// one more, last; the triggers write them whatever statement makes the change.
func TestOrderEventsFollowEveryChangeOfItsJobs(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, err := models.CreateAccount(db, "acme", 10)
		require.NoError(t, err)
		order, jobs, err := newOrder(t, db, acc.ID, 3, 1)
		require.NoError(t, err)
		require.Empty(t, eventTypes(t, s, order, jobs), "an accepted order has no event yet")

		require.NoError(t, s.BeginAttempt(ctx, jobs[0].ID, 1, 1))
		require.NoError(t, s.BeginAttempt(ctx, jobs[0].ID, 1, 1)) // the same attempt again: no change
		require.NoError(t, s.MarkRetryPending(ctx, jobs[0].ID, 1, "TRANSIENT_INFRA", "", ""))
		require.NoError(t, s.BeginAttempt(ctx, jobs[0].ID, 1, 2))
		_, ok, err := s.CompleteJob(ctx, jobs[0].ID, 1, nil)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, err = s.CancelJobNotBegun(ctx, jobs[1].ID, 1, status.CancelRequested)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, s.BeginAttempt(ctx, jobs[2].ID, 1, 1))
		// A job that is already terminal is not changed again, so records nothing.
		_, ok, err = s.EndJob(ctx, jobs[0].ID, 1, status.JobFailed, "", "", "")
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.EndJob(ctx, jobs[2].ID, 1, status.JobFailed, "CONTENT_POLICY", "", "refused")
		require.NoError(t, err)
		require.True(t, ok)

		require.Equal(t, []string{
			"job.started 1", "job.retrying 1", "job.started 1", "job.completed 1",
			"job.cancelled 2", "job.started 3", "job.failed 3", "order.completed 0",
		}, eventTypes(t, s, order, jobs))
		o, err := s.GetOrder(ctx, order.ID)
		require.NoError(t, err)
		require.Equal(t, status.OrderCompleted, o.Status)

		// The page reads from a number on, up to the order's number, at most limit.
		page, err := s.OrderEventsAfter(ctx, order.ID, 3, o.EventSeq, 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, int64(4), page[0].Seq)
		require.Equal(t, int64(5), page[1].Seq)
		seqs, err := s.OrderEventSeqs(ctx, []string{order.ID, "00000000-0000-4000-8000-000000000000"})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{order.ID: 8}, seqs)
	})
}

// Jobs of one order changing at once from many connections: their events are numbered 1..n
// without a gap or a repeat, and every number names a committed change.
func TestOrderEventsOfConcurrentChangesAreNumberedWithoutGaps(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		const n = 30
		acc, err := models.CreateAccount(db, "acme", n)
		require.NoError(t, err)
		order, jobs, err := newOrder(t, db, acc.ID, n, 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Go(func() {
				if err := s.BeginAttempt(ctx, j.ID, 1, 1); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := s.CompleteJob(ctx, j.ID, 1, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		types := eventTypes(t, s, order, jobs)
		require.Len(t, types, 2*n+1)
		require.Equal(t, "order.completed 0", types[2*n], "the order's end is its last event")
		perJob := map[string][]string{}
		for _, e := range types[:2*n] {
			kind, who := e[:len(e)-2], e[len(e)-1:]
			perJob[who] = append(perJob[who], kind)
		}
		for who, kinds := range perJob {
			require.Equal(t, []string{"job.started", "job.completed"}, kinds, "job %s", who)
		}
	})
}
