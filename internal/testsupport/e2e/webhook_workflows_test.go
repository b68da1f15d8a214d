package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

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
