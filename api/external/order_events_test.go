package external_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// A generation request with Prefer: wait is answered once its order has ended, with the order's
// status; the order's stream shows each change of its job as GET /orders/{id} lists it, then
// order.completed; GET /orders/{id} with Prefer: wait answers an ended order at once; another
// account's stream is 404; a key with MaxStreamsPerKey streams open is 429.
func TestGenerationWaitAndOrderStream(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		srv := httptest.NewServer(e.router)
		t.Cleanup(srv.Close)
		store := models.NewStore(db)
		body, err := json.Marshal(e.validBodies(e.account)["/video-picker/register-videos"])
		require.NoError(t, err)

		type answer struct {
			resp *http.Response
			gen  external.GenerationResponse
		}
		answers := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+external.Base+"/video-picker/register-videos", bytes.NewReader(body))
			req.Header.Set("X-Api-Key", e.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(prefer.HeaderPrefer, "wait=20")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				answers <- answer{}
				return
			}
			defer resp.Body.Close()
			var g external.GenerationResponse
			if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
				t.Error(err)
			}
			answers <- answer{resp, g}
		}()
		var jobs []models.Job
		require.Eventually(t, func() bool {
			jobs = nil
			require.NoError(t, db.Where("job_type = ? AND status = ?", "video", status.JobPending).Find(&jobs).Error)
			return len(jobs) == 1 && e.handler.Engine.Feed.Waiting() == 1
		}, 10*time.Second, 10*time.Millisecond)
		job := jobs[0]
		stream := apitest.OpenSSE(t, srv.URL+external.Base+"/orders/"+job.OrderID+"/events", "X-Api-Key", e.key)
		require.Equal(t, http.StatusOK, stream.Response.StatusCode)

		ctx := t.Context()
		require.NoError(t, store.BeginAttempt(ctx, job.ID, 1, 1))
		_, _, err = store.EndJob(ctx, job.ID, 1, status.JobFailed, "CONTENT_POLICY", "", "refused")
		require.NoError(t, err)

		a := <-answers
		require.NotNil(t, a.resp)
		require.Equal(t, http.StatusOK, a.resp.StatusCode)
		require.Equal(t, "wait=20", a.resp.Header.Get(prefer.HeaderPreferenceApplied))
		require.Equal(t, job.OrderID, a.gen.OrderID)
		require.Equal(t, status.OrderFailed, a.gen.Status)

		var names []string
		for ev, ok := stream.Next(t, 10*time.Second); ok; ev, ok = stream.Next(t, 10*time.Second) {
			require.Equal(t, strconv.Itoa(len(names)+1), ev.ID)
			names = append(names, ev.Name)
			if ev.Name == eventstream.OrderCompletedEvent {
				var o external.OrderDetail
				require.NoError(t, json.Unmarshal([]byte(ev.Data), &o))
				require.Equal(t, status.OrderFailed, o.Status)
				continue
			}
			var j external.JobEvent
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &j))
			require.Equal(t, job.ID, j.Job.JobID)
			require.NotNil(t, j.Record)
			require.Equal(t, "video", j.Record.Kind)
			name, err := store.RecordNameOfJob(ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, name, j.Record.Name, "the record is named as the lists name it")
			// The data is the job as it is when the event is sent: the end may already show.
			if ev.Name == "job.failed" {
				require.Equal(t, models.RefStatusFailed, j.Record.Status)
			} else {
				require.Contains(t, []string{models.RefStatusInProgress, models.RefStatusFailed}, j.Record.Status)
			}
		}
		require.Equal(t, []string{"job.started", "job.failed", "order.completed"}, names)

		code, _, h := e.get("/orders/"+job.OrderID, "X-Api-Key", e.key, prefer.HeaderPrefer, "wait=60")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "wait=60", h.Get(prefer.HeaderPreferenceApplied))

		_, other := e.newAccount(external.ScopeRead)
		code, _, _ = e.get("/orders/"+job.OrderID+"/events", "X-Api-Key", other)
		require.Equal(t, http.StatusNotFound, code)
		code, _, _ = e.get("/orders/"+job.OrderID+"/events", "X-Api-Key", e.key, eventstream.HeaderLastEventID, "x")
		require.Equal(t, http.StatusBadRequest, code)
		done := apitest.OpenSSE(t, srv.URL+external.Base+"/orders/"+job.OrderID+"/events", "X-Api-Key", e.key, eventstream.HeaderLastEventID, "3")
		require.Equal(t, http.StatusNoContent, done.Response.StatusCode)

		_, keyID, _, _ := models.ParseKey(e.key)
		for range eventstream.MaxStreamsPerKey {
			_, ok, err := e.handler.Slots.Acquire(ctx, "stream:external:"+keyID, eventstream.MaxStreamsPerKey, time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		code, _, h = e.get("/orders/"+job.OrderID+"/events", "X-Api-Key", e.key)
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Equal(t, strconv.Itoa(eventstream.RetryAfterBusy), h.Get("Retry-After"))
	})
}
