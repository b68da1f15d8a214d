package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// livemodeOf is the ShotflowLivemode search attribute of the latest run of a workflow, and whether
// it is set.
func livemodeOf(t *testing.T, env *testenv.Env, workflowID string) (live, set bool) {
	t.Helper()
	d, err := env.App.Temporal.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		t.Fatalf("describe %s: %v", workflowID, err)
	}
	p, ok := d.WorkflowExecutionInfo.GetSearchAttributes().GetIndexedFields()[workflows.SALivemode.GetName()]
	if !ok {
		return false, false
	}
	if err := converter.GetDefaultDataConverter().FromPayload(p, &live); err != nil {
		t.Fatalf("ShotflowLivemode of %s: %v", workflowID, err)
	}
	return live, true
}

// Operators find a test twin's webhook deliveries in Temporal as they find its orders and jobs: the
// delivery workflows of a test key's endpoint carry ShotflowLivemode false, a live key's true, both
// when the delivery is started after its recording and when a replay starts it again.
func TestWebhookDeliveryWorkflowsCarryLivemode(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 5)
	testKey, err := env.App.Engine.Accounts.IssueTestPluginKey(context.Background(), env.App.Box, tenant.InstallationID, "e2e", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := newEventReceiver(t)
	for want, key := range map[bool]string{true: tenant.PluginKey, false: testKey.APIKey} {
		api := &client{t: t, base: env.BaseURL + plugin.Base, key: key}
		var ep webhooks.Endpoint
		expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": rc.URL + "/hooks"}, &ep), http.StatusCreated)
		var sent plugin.WebhookTestSent
		expect(t, api.do(http.MethodPost, "/webhook-endpoints/"+ep.ID+"/test", map[string]any{}, &sent), http.StatusAccepted)
		id := workflows.WebhookWorkflowID(sent.DeliveryID)
		if got, ok := livemodeOf(t, env, id); !ok || got != want {
			t.Errorf("livemode %v: the test send's delivery workflow has ShotflowLivemode = %v (set %v)", want, got, ok)
		}
		var d models.WebhookDelivery
		testenv.Eventually(t, 30*time.Second, "the test send delivered", func() bool {
			return env.DB.Take(&d, "id = ?", sent.DeliveryID).Error == nil && d.Status == models.WebhookDelivered
		})
		if err := env.App.Engine.Webhooks.StartWebhookReplay(context.Background(), &d); err != nil {
			t.Fatal(err)
		}
		if got, ok := livemodeOf(t, env, id); !ok || got != want {
			t.Errorf("livemode %v: the replay's delivery workflow has ShotflowLivemode = %v (set %v)", want, got, ok)
		}
	}
}

// Deleting an endpoint cancels the workflows of the deliveries the deletion ended: a delivery
// waiting minutes for its next attempt (its receiver answered 500 with a Retry-After) has its
// workflow closed at once, canceled, not failed; the delivery stays failed with the deletion's
// reason, and the receiver gets no further request.
func TestDeletingAnEndpointClosesItsWaitingDeliveryWorkflows(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 5)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	rc := newHookReceiver(t)
	rc.failFirst(scripted{status: http.StatusInternalServerError, retryAfter: "600"})
	var ep webhooks.Endpoint
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": rc.URL + "/hooks"}, &ep), http.StatusCreated)
	var sent plugin.WebhookTestSent
	expect(t, api.do(http.MethodPost, "/webhook-endpoints/"+ep.ID+"/test", map[string]any{}, &sent), http.StatusAccepted)
	rc.waitHooks(t, sent.EventID, 1, 30*time.Second)
	var d models.WebhookDelivery
	testenv.Eventually(t, 30*time.Second, "the failed first attempt recorded", func() bool {
		return env.DB.Take(&d, "id = ?", sent.DeliveryID).Error == nil && d.Status == models.WebhookDelivering && d.NextAttemptAt != nil
	})
	if wait := time.Until(*d.NextAttemptAt); wait < 5*time.Minute {
		t.Fatalf("the next attempt is due in %v, want the receiver's Retry-After of 10 minutes", wait)
	}
	id := workflows.WebhookWorkflowID(sent.DeliveryID)
	ctx := context.Background()
	if desc, err := env.App.Temporal.DescribeWorkflowExecution(ctx, id, ""); err != nil ||
		desc.WorkflowExecutionInfo.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the delivery's workflow before the deletion: %v, %v", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}

	expect(t, api.do(http.MethodDelete, "/webhook-endpoints/"+ep.ID, nil, nil), http.StatusNoContent)
	var status enumspb.WorkflowExecutionStatus
	testenv.Eventually(t, 10*time.Second, "the delivery's workflow to close", func() bool {
		desc, err := env.App.Temporal.DescribeWorkflowExecution(ctx, id, "")
		status = desc.GetWorkflowExecutionInfo().GetStatus()
		return err == nil && status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED && status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("the delivery's workflow closed %v, want canceled or completed", status)
	}
	var after models.WebhookDelivery
	if err := env.DB.Take(&after, "id = ?", sent.DeliveryID).Error; err != nil {
		t.Fatal(err)
	}
	if after.Status != models.WebhookFailed || after.LastError != models.EndpointDeletedError || after.NextAttemptAt != nil || after.Attempts != 1 {
		t.Fatalf("delivery after the deletion: status %s (%q), next attempt %v, %d attempts; want failed, %q, none, 1",
			after.Status, after.LastError, after.NextAttemptAt, after.Attempts, models.EndpointDeletedError)
	}
	if n := len(rc.got(sent.EventID)); n != 1 {
		t.Fatalf("the receiver got %d requests, want the first attempt's only", n)
	}
}
