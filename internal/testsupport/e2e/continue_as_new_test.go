package e2e_test

import (
	"context"
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

// TestLargeOrderContinuesAsNew runs an order whose workflow continues as new every two launches
// (as a large order does every workflows.DefaultContinueAsNewAfter): its jobs all complete once,
// the order completes, and the runs carry the order across: each hands the jobs still running to
// the next (OrderInput.Watching), and every job stays within the history budget.
func TestLargeOrderContinuesAsNew(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OrderMaxConcurrentJobs = 2
		c.RenderLongEdge = 64
	}, Engine: func(c *engine.Config) { c.ContinueAsNewAfter = 2 }})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "jug", packshotPNG(t))
	session := startSession(t, api, "jug", "local/studio-v1", 5)
	ids := session.Subjects[0].JobIDs
	for id, j := range waitTerminal(t, api, ids) {
		if j.Status != status.JobCompleted || j.AttemptCount != 1 {
			t.Errorf("job %s: %s after %d attempts", id, j.Status, j.AttemptCount)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	orderWF := workflows.OrderWorkflowID(session.OrderID)
	var res workflows.OrderResult
	if err := env.App.Temporal.GetWorkflow(ctx, orderWF, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(ids) {
		t.Fatalf("order result %+v, want %d completed", res, len(ids))
	}
	// The order completed only after every job it launched: their workflows are closed.
	for _, id := range ids {
		assertJobEventBudget(t, env.App.Temporal, workflows.JobWorkflowID(id, 1))
	}
	desc, err := env.App.Temporal.DescribeWorkflowExecution(ctx, orderWF, "")
	if err != nil {
		t.Fatal(err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetFirstRunId() == "" || info.GetFirstRunId() == info.GetExecution().GetRunId() {
		t.Fatalf("the order ran in one run (%s); it should have continued as new", info.GetExecution().GetRunId())
	}
	var order models.Order
	if err := env.DB.Take(&order, "id = ?", session.OrderID).Error; err != nil || order.Status != status.OrderCompleted || order.JobsCompleted != len(ids) {
		t.Fatalf("order %+v, %v", order, err)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	recordRunHistory(t, env.App.Temporal, orderWF, info.GetFirstRunId(), "order_workflow_continued.json")
}
