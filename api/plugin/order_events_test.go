package plugin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// twoJobSession creates a session of two jobs that no worker runs: the test moves them with the
// store, as the activities would.
func (e *env) twoJobSession(headers ...string) (plugin.SessionResponse, []string) {
	e.t.Helper()
	if e.count(&models.Product{}, "installation_id = ? AND external_ref = ?", e.inst.ID, "mug") == 0 {
		e.approved("mug")
	}
	rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []any{map[string]any{"product_ref": "mug", "images_count": 2, "ai_model": "local/studio-v1"}},
	}, headers...)
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	var s plugin.SessionResponse
	require.NoError(e.t, json.Unmarshal(rec.Body.Bytes(), &s))
	return s, s.Subjects[0].JobIDs
}

// serve serves the env's router over a real connection (streams and held requests need one).
func (e *env) serve() string {
	srv := httptest.NewServer(e.router)
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// A stream follows every change of the order's jobs, each event with the job as GET /jobs/{id}
// shows it, then order.completed with the order, and closes. A client that reconnects with
// Last-Event-ID gets the events after it exactly once; one that has them all is answered 204.
func TestOrderEventsStreamEveryChangeThenTheOrdersEnd(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]envOption{"sqlite": nil, "postgres": {onPostgres()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, opts...).committing()
			store := models.NewStore(e.db)
			base := e.serve()
			s, jobs := e.twoJobSession()
			url := base + p("/orders/"+s.OrderID+"/events")
			stream := apitest.OpenSSE(t, url, "X-Api-Key", e.key)
			require.Equal(t, http.StatusOK, stream.Response.StatusCode)
			require.Equal(t, "no-cache", stream.Response.Header.Get("Cache-Control"))

			ctx := t.Context()
			require.NoError(t, store.BeginAttempt(ctx, jobs[0], 1, 1))
			require.NoError(t, store.MarkRetryPending(ctx, jobs[0], 1, "TRANSIENT_INFRA", "", ""))
			require.NoError(t, store.BeginAttempt(ctx, jobs[0], 1, 2))
			_, _, err := store.CompleteJob(ctx, jobs[0], 1, nil)
			require.NoError(t, err)
			_, _, err = store.CancelJobNotBegun(ctx, jobs[1], 1, status.CancelRequested)
			require.NoError(t, err)

			want := []struct {
				name, job, status string
				attempt           int
			}{
				{"job.started", jobs[0], status.JobInProgress, 1},
				{"job.retrying", jobs[0], status.JobRetryPending, 1},
				{"job.started", jobs[0], status.JobInProgress, 2},
				{"job.completed", jobs[0], status.JobCompleted, 2},
				{"job.cancelled", jobs[1], status.JobCancelled, 0},
			}
			var got []apitest.SSEEvent
			for {
				ev, ok := stream.Next(t, 10*time.Second)
				if !ok {
					break
				}
				require.Empty(t, ev.Comment, "no keep-alive within 15 s")
				got = append(got, ev)
			}
			require.Len(t, got, len(want)+1, "%+v", got)
			for i, w := range want {
				ev := got[i]
				require.Equal(t, strconv.Itoa(i+1), ev.ID)
				require.Equal(t, w.name, ev.Name)
				var job plugin.JobResponse
				require.NoError(t, json.Unmarshal([]byte(ev.Data), &job), ev.Data)
				require.Equal(t, w.job, job.ID)
			}
			last := got[len(want)]
			require.Equal(t, "6", last.ID)
			require.Equal(t, eventstream.OrderCompletedEvent, last.Name)
			var order plugin.OrderResponse
			require.NoError(t, json.Unmarshal([]byte(last.Data), &order))
			require.Equal(t, s.OrderID, order.ID)
			require.Equal(t, status.OrderCompleted, order.Status)

			// Resumed after event 3: 4, 5 and 6 once, then the end.
			again := apitest.OpenSSE(t, url, "X-Api-Key", e.key, eventstream.HeaderLastEventID, "3")
			require.Equal(t, http.StatusOK, again.Response.StatusCode)
			var ids []string
			for ev, ok := again.Next(t, 5*time.Second); ok; ev, ok = again.Next(t, 5*time.Second) {
				ids = append(ids, ev.ID)
			}
			require.Equal(t, []string{"4", "5", "6"}, ids)
			// Every event had: nothing more to send, and an EventSource stops reconnecting.
			done := apitest.OpenSSE(t, url, "X-Api-Key", e.key, eventstream.HeaderLastEventID, "6")
			require.Equal(t, http.StatusNoContent, done.Response.StatusCode)

			// Past ORDER_EVENTS_RETENTION the sweep deletes the ended order's log (here its rows
			// after the first two): a stream from the start sends what is left, then the end
			// numbered as before, and stops; one resumed past what is left sends the end alone.
			require.NoError(t, e.db.Where("order_id = ? AND seq > 2", s.OrderID).Delete(&models.OrderEvent{}).Error)
			for lastID, wantIDs := range map[string][]string{"": {"1", "2", "6"}, "3": {"6"}} {
				headers := []string{"X-Api-Key", e.key}
				if lastID != "" {
					headers = append(headers, eventstream.HeaderLastEventID, lastID)
				}
				purged := apitest.OpenSSE(t, url, headers...)
				require.Equal(t, http.StatusOK, purged.Response.StatusCode)
				var got []string
				for ev, ok := purged.Next(t, 5*time.Second); ok; ev, ok = purged.Next(t, 5*time.Second) {
					require.Empty(t, ev.Comment, "the stream of a purged log waited")
					got = append(got, ev.ID)
					if ev.ID == "6" {
						require.Equal(t, eventstream.OrderCompletedEvent, ev.Name)
						require.NoError(t, json.Unmarshal([]byte(ev.Data), &order))
						require.Equal(t, status.OrderCompleted, order.Status)
					}
				}
				require.Equal(t, wantIDs, got, "Last-Event-ID %q", lastID)
			}
		})
	}
}

// A stream's refusals come before it starts, in the error envelope: a Last-Event-ID that is no
// event id is 400 naming the header, another installation's order 404, and a key that already
// has MaxStreamsPerKey streams open 429 with Retry-After.
func TestOrderEventsRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	s, _ := e.twoJobSession()
	path := p("/orders/" + s.OrderID + "/events")

	msg := e.requireError(e.do(http.MethodGet, path, e.key, nil, eventstream.HeaderLastEventID, "abc"), http.StatusBadRequest, plugin.CodeInvalidInput)
	require.Contains(t, msg, "Last-Event-ID")
	e.requireError(e.do(http.MethodGet, path, e.key, nil, eventstream.HeaderLastEventID, "-1"), http.StatusBadRequest, plugin.CodeInvalidInput)
	_, otherKey := e.otherInstallation()
	e.requireError(e.do(http.MethodGet, path, otherKey, nil), http.StatusNotFound, plugin.CodeNotFound)

	var slots []interface{ Release() error }
	for range eventstream.MaxStreamsPerKey {
		slot, ok, err := e.handler.Slots.Acquire(t.Context(), "stream:plugin:"+e.keyID, eventstream.MaxStreamsPerKey, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		slots = append(slots, slot)
	}
	rec := e.do(http.MethodGet, path, e.key, nil)
	e.requireError(rec, http.StatusTooManyRequests, plugin.CodeRateLimited)
	require.Equal(t, strconv.Itoa(eventstream.RetryAfterBusy), rec.Header().Get("Retry-After"))
	require.NoError(t, slots[0].Release())
	stream := apitest.OpenSSE(t, e.serve()+path, "X-Api-Key", e.key)
	require.Equal(t, http.StatusOK, stream.Response.StatusCode, "a freed slot admits the next stream")
	stream.Close()
}

// A silent stream sends a comment every KeepAlive, and after MaxDuration `retry:` and closes; the
// client resumes with Last-Event-ID and misses nothing. Not parallel: it shortens the package's
// timings.
func TestOrderEventsKeepAliveAndReconnect(t *testing.T) {
	keepAlive, maxDuration := eventstream.KeepAlive, eventstream.MaxDuration
	eventstream.KeepAlive, eventstream.MaxDuration = 100*time.Millisecond, 450*time.Millisecond
	t.Cleanup(func() { eventstream.KeepAlive, eventstream.MaxDuration = keepAlive, maxDuration })
	e := newEnv(t).committing()
	s, jobs := e.twoJobSession()
	url := e.serve() + p("/orders/"+s.OrderID+"/events")
	stream := apitest.OpenSSE(t, url, "X-Api-Key", e.key)
	var comments, retries int
	for ev, ok := stream.Next(t, 5*time.Second); ok; ev, ok = stream.Next(t, 5*time.Second) {
		switch {
		case ev.Comment != "":
			comments++
		case ev.Retry != "":
			retries++
			require.Equal(t, strconv.FormatInt(eventstream.Reconnect.Milliseconds(), 10), ev.Retry)
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	require.GreaterOrEqual(t, comments, 2)
	require.Equal(t, 1, retries, "the server asks the client to reconnect, then closes")

	require.NoError(t, models.NewStore(e.db).BeginAttempt(t.Context(), jobs[0], 1, 1))
	again := apitest.OpenSSE(t, url, "X-Api-Key", e.key, eventstream.HeaderLastEventID, "0")
	ev, ok := again.Next(t, 5*time.Second)
	require.True(t, ok)
	require.Equal(t, "1", ev.ID)
	require.Equal(t, "job.started", ev.Name)
}

// Prefer: wait holds a request until what it concerns has ended, then answers it as it would
// without the header, with Preference-Applied; a wait over 60 s is held 60 s; an invalid one is
// ignored; a request that has nothing to wait for answers at once.
func TestPreferWaitHoldsUntilTheJobsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	store := models.NewStore(e.db)
	base := e.serve()
	get := func(path string, headers ...string) (*http.Response, map[string]any, time.Duration) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+p(path), nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", e.key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp, body, time.Since(start)
	}
	s, jobs := e.twoJobSession()

	// Nothing happens: the wait runs out and the job is answered as it is.
	resp, body, took := get("/jobs/"+jobs[0], prefer.HeaderPrefer, "wait=1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "wait=1", resp.Header.Get(prefer.HeaderPreferenceApplied))
	require.Equal(t, status.JobPending, body["status"])
	require.GreaterOrEqual(t, took, time.Second)

	// The jobs end while the requests are held: they answer at once, with the end.
	type answer struct {
		resp *http.Response
		body map[string]any
		took time.Duration
	}
	answers := make(chan answer, 2)
	for _, path := range []string{"/jobs/" + jobs[1], "/orders/" + s.OrderID} {
		go func() {
			resp, body, took := get(path, prefer.HeaderPrefer, "respond-async, wait=30")
			answers <- answer{resp, body, took}
		}()
	}
	require.Eventually(t, func() bool { return e.handler.Engine.Feed.Waiting() == 2 }, 5*time.Second, 10*time.Millisecond)
	ctx := t.Context()
	require.NoError(t, store.BeginAttempt(ctx, jobs[0], 1, 1))
	_, _, err := store.CompleteJob(ctx, jobs[0], 1, nil)
	require.NoError(t, err)
	_, _, err = store.CancelJobNotBegun(ctx, jobs[1], 1, status.CancelRequested)
	require.NoError(t, err)
	for range 2 {
		a := <-answers
		require.Equal(t, http.StatusOK, a.resp.StatusCode)
		require.Equal(t, "wait=30", a.resp.Header.Get(prefer.HeaderPreferenceApplied))
		require.Less(t, a.took, 10*time.Second)
		if a.body["id"] == jobs[1] {
			require.Equal(t, status.JobCancelled, a.body["status"])
		} else {
			require.Equal(t, status.OrderCompleted, a.body["status"])
		}
	}

	// Ended already: answered at once; a wait over 60 s says 60; an invalid one is ignored.
	resp, _, took = get("/orders/"+s.OrderID, prefer.HeaderPrefer, "wait=600")
	require.Equal(t, "wait=60", resp.Header.Get(prefer.HeaderPreferenceApplied))
	require.Less(t, took, 5*time.Second)
	for _, bad := range []string{"wait=abc", "wait=0", "wait=-3", "wait", "wait=1.5"} {
		resp, _, took = get("/jobs/"+jobs[0], prefer.HeaderPrefer, bad)
		require.Equal(t, http.StatusOK, resp.StatusCode, bad)
		require.Empty(t, resp.Header.Get(prefer.HeaderPreferenceApplied), bad)
		require.Less(t, took, 5*time.Second, bad)
	}
	// Another installation's job is 404, waiting or not.
	_, otherKey := e.otherInstallation()
	e.requireError(e.do(http.MethodGet, p("/jobs/"+jobs[0]), otherKey, nil, prefer.HeaderPrefer, "wait=5"), http.StatusNotFound, plugin.CodeNotFound)
}

// POST /jobs with Prefer: wait is answered 201 once its order has ended, with the order's status;
// a key that already holds MaxHeldPerKey waiting requests is refused 429 and nothing is created.
func TestPreferWaitOnASession(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	store := models.NewStore(e.db)
	type created struct {
		s    plugin.SessionResponse
		jobs []string
	}
	done := make(chan created, 1)
	go func() {
		s, jobs := e.twoJobSession(prefer.HeaderPrefer, "wait=20")
		done <- created{s, jobs}
	}()
	var jobs []models.Job
	require.Eventually(t, func() bool {
		jobs = nil
		require.NoError(t, e.db.Order("position").Find(&jobs).Error)
		return len(jobs) == 2 && e.handler.Engine.Feed.Waiting() == 1
	}, 5*time.Second, 10*time.Millisecond)
	for _, j := range jobs {
		_, _, err := store.CancelJobNotBegun(t.Context(), j.ID, 1, status.CancelRequested)
		require.NoError(t, err)
	}
	c := <-done
	require.Equal(t, status.OrderCancelled, c.s.Status)

	var slots []interface{ Release() error }
	for range prefer.MaxHeldPerKey {
		slot, ok, err := e.handler.Slots.Acquire(t.Context(), "wait:plugin:"+e.keyID, prefer.MaxHeldPerKey, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
		slots = append(slots, slot)
	}
	before := e.count(&models.Order{}, "1 = 1")
	rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []any{map[string]any{"product_ref": "mug", "images_count": 1, "ai_model": "local/studio-v1"}},
	}, prefer.HeaderPrefer, "wait=5")
	e.requireError(rec, http.StatusTooManyRequests, plugin.CodeRateLimited)
	require.Equal(t, before, e.count(&models.Order{}, "1 = 1"), "a refused wait creates nothing")
	for _, s := range slots {
		require.NoError(t, s.Release())
	}
}

// Held requests hold no database connection while they wait: with more of them than the pool
// has connections, other requests are still served, and every held one is answered when the
// order ends.
func TestHeldRequestsHoldNoDatabaseConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres()).committing()
	sqlDB, err := e.db.DB()
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(2)
	store := models.NewStore(e.db)
	base := e.serve()
	s, jobs := e.twoJobSession()
	const held = 12
	var wg sync.WaitGroup
	statuses := make(chan string, held)
	for range held {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, base+p("/orders/"+s.OrderID), nil)
			req.Header.Set("X-Api-Key", e.key)
			req.Header.Set(prefer.HeaderPrefer, "wait=30")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var o plugin.OrderResponse
			if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
				t.Error(err)
			}
			statuses <- fmt.Sprint(resp.StatusCode, " ", o.Status)
		})
	}
	require.Eventually(t, func() bool { return e.handler.Engine.Feed.Waiting() == held }, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	rec := e.do(http.MethodGet, p("/me"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Less(t, time.Since(start), 5*time.Second, "a request is served while %d others wait on a pool of 2", held)
	for _, j := range jobs {
		_, _, err := store.CancelJobNotBegun(t.Context(), j, 1, status.CancelRequested)
		require.NoError(t, err)
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		require.Equal(t, "200 "+status.OrderCancelled, st)
	}
}

// A stopping process answers its held requests at once and tells its streams to reconnect.
func TestStoppingFeedEndsWaitsAndStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	base := e.serve()
	s, jobs := e.twoJobSession()
	stream := apitest.OpenSSE(t, base+p("/orders/"+s.OrderID+"/events"), "X-Api-Key", e.key)
	require.Equal(t, http.StatusOK, stream.Response.StatusCode)
	answered := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, base+p("/jobs/"+jobs[0]), nil)
		req.Header.Set("X-Api-Key", e.key)
		req.Header.Set(prefer.HeaderPrefer, "wait=60")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		answered <- time.Since(start)
	}()
	require.Eventually(t, func() bool { return e.handler.Engine.Feed.Waiting() == 2 }, 5*time.Second, 10*time.Millisecond)
	e.handler.Engine.Feed.Stop()
	require.Less(t, <-answered, 30*time.Second)
	ev, ok := stream.Next(t, 5*time.Second)
	require.True(t, ok)
	require.NotEmpty(t, ev.Retry, "the stream asks its client to reconnect")
	_, ok = stream.Next(t, 5*time.Second)
	require.False(t, ok, "and closes")
}

// A clone honours Prefer: wait like POST /jobs: held until its order ends or the wait runs out,
// then 201 with the order's status of then and Preference-Applied.
func TestPreferWaitOnAClone(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	s, _ := e.twoJobSession()
	start := time.Now()
	rec := e.do(http.MethodPost, p("/orders/"+s.OrderID+"/clone"), e.key, map[string]any{},
		keyHeader, "clone-wait", prefer.HeaderPrefer, "wait=1")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Equal(t, "wait=1", rec.Header().Get(prefer.HeaderPreferenceApplied))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "held for the wait: no worker ends its jobs")
	var clone plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &clone))
	require.Equal(t, status.OrderInProgress, clone.Status)
	require.NotEqual(t, s.OrderID, clone.OrderID)
}
