package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// TestOrderContinuesAsNewPastALongJob (issue 23, item 9): an order whose first job waits for its
// input continues as new every two launches without waiting for it: every later job launches and
// completes while it still waits, each in a slot of its own next to it. Once the input arrives
// the waiting job completes, and the order completes after it with every job counted once.
func TestOrderContinuesAsNewPastALongJob(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OrderMaxConcurrentJobs = 2
		c.RenderLongEdge = 64
	}, Engine: func(c *engine.Config) { c.ContinueAsNewAfter = 2 }})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	_, uploadURL := inputBeingPrepared(t, env, api, "kettle")
	registerPackshot(t, env, api, "jug", packshotPNG(t))
	var session plugin.SessionResponse
	expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects": []map[string]any{
			{"product_ref": "kettle", "images_count": 1, "ai_model": "local/studio-v1"},
			{"product_ref": "jug", "images_count": 4, "ai_model": "local/studio-v1"},
		},
	}, &session), http.StatusCreated)
	waiting, later := session.Subjects[0].JobIDs[0], session.Subjects[1].JobIDs

	// The later jobs run past the runs' ends while the first job waits for its input.
	for id, j := range waitTerminal(t, api, later) {
		if j.Status != status.JobCompleted {
			t.Errorf("job %s: %s", id, j.Status)
		}
	}
	var job plugin.JobResponse
	expect(t, api.do(http.MethodGet, "/jobs/"+waiting, nil, &job), http.StatusOK)
	if job.Status != status.JobRetryPending {
		t.Fatalf("the waiting job is %s; it should still wait for its input", job.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orderWF := workflows.OrderWorkflowID(session.OrderID)
	desc, err := env.App.Temporal.DescribeWorkflowExecution(ctx, orderWF, "")
	if err != nil {
		t.Fatal(err)
	}
	if info := desc.GetWorkflowExecutionInfo(); info.GetCloseTime() != nil || info.GetFirstRunId() == info.GetExecution().GetRunId() {
		t.Fatalf("order workflow %v: it should run on, in a run after its first", info)
	}

	putUpload(t, uploadURL, "image/png", packshotPNG(t))
	var res workflows.OrderResult
	if err := env.App.Temporal.GetWorkflow(ctx, orderWF, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res != (workflows.OrderResult{Completed: 1 + len(later)}) {
		t.Fatalf("order result %+v, want %d completed", res, 1+len(later))
	}
	expect(t, api.do(http.MethodGet, "/jobs/"+waiting, nil, &job), http.StatusOK)
	if job.Status != status.JobCompleted {
		t.Fatalf("the order completed while its first job is %s", job.Status)
	}
	// (The waiting job's input wait writes events beyond the budget of a job that runs at once.)
	for _, id := range later {
		assertJobEventBudget(t, env.App.Temporal, workflows.JobWorkflowID(id, 1))
	}
	var order models.Order
	if err := env.DB.Take(&order, "id = ?", session.OrderID).Error; err != nil || order.Status != status.OrderCompleted || order.JobsCompleted != 1+len(later) {
		t.Fatalf("order %+v, %v", order, err)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	// The last run took the waiting job over and read its end with WatchJobs.
	recordHistory(t, env.App.Temporal, orderWF, "order_workflow_handed_over.json")
}
