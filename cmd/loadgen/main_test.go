package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/shotflow/shotflow/workflows"
)

// The sessions' client keeps a connection per concurrent request: a second round of 8 requests at
// once opens no new connection (the default transport keeps two, so six would be new again).
func TestKeepAliveClientReusesAConnectionPerConcurrentRequest(t *testing.T) {
	t.Parallel()
	const concurrency = 8
	var opened atomic.Int32
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived.Done()
		<-release // hold every request until all are in flight, so each needs its own connection
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := keepAliveClient(concurrency)
	round := func() {
		arrived.Add(concurrency)
		var done sync.WaitGroup
		for range concurrency {
			done.Go(func() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		arrived.Wait()
		release <- struct{}{} // one at a time: the rest stay in flight
		for range concurrency - 1 {
			release <- struct{}{}
		}
		done.Wait()
		time.Sleep(100 * time.Millisecond) // the transport puts the connections back after the bodies close
	}
	round()
	first := opened.Load()
	round()
	if first != concurrency || opened.Load() != first {
		t.Fatalf("connections opened: %d in the first round, %d in the second; want %d and 0", first, opened.Load()-first, concurrency)
	}
}

// waitPrepared waits for the upload's PrepareInputWorkflow, by its ID; one the API has not started
// yet is looked for again, and a preparation that failed is an error.
func TestWaitPreparedWaitsForTheUploadsPreparation(t *testing.T) {
	workflowPoll = time.Millisecond
	c := &mocks.Client{}
	done := &mocks.WorkflowRun{}
	done.On("Get", mock.Anything, nil).Return(nil)
	notYet := &mocks.WorkflowRun{}
	notYet.On("Get", mock.Anything, nil).Return(serviceerror.NewNotFound("workflow not found"))
	id := workflows.PrepareInputWorkflowID("asset-1")
	c.On("GetWorkflow", mock.Anything, id, "").Return(notYet).Twice()
	c.On("GetWorkflow", mock.Anything, id, "").Return(done).Once()
	require.NoError(t, waitPrepared(context.Background(), c, "asset-1"))
	c.AssertExpectations(t)

	failed := &mocks.WorkflowRun{}
	failed.On("Get", mock.Anything, nil).Return(errors.New("workflow failed"))
	c = &mocks.Client{}
	c.On("GetWorkflow", mock.Anything, workflows.PrepareInputWorkflowID("asset-2"), "").Return(failed).Once()
	require.ErrorContains(t, waitPrepared(context.Background(), c, "asset-2"), "workflow failed")
}
