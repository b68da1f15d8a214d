package e2e_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
)

// verifyExternal checks a webhook of an account's endpoint with the official Standard Webhooks
// library under every secret given and against the external document, and returns its body.
func verifyExternal(t *testing.T, h hook, secrets ...string) map[string]any {
	t.Helper()
	for _, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(h.body, h.header); err != nil {
			t.Fatalf("the official library does not verify the webhook with %.10s…: %v", secret, err)
		}
	}
	if err := contract.External.ValidateWebhook(h.header, h.body); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(h.body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// A team account runs its own webhooks through the external API: an endpoint with its own secret
// (shown once) receives record.done for each record of a generation request, as the record lists
// show it, and order.completed; a rotated secret keeps the previous one signing; the events are the
// account's alone — the plugin installation of the same account and another account see none.
func TestExternalWebhooksReachTheAccountsEndpoint(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 20)
	ext := externalClient(t, env, tenant)
	rc := newEventReceiver(t)

	var created struct {
		webhooks.Endpoint
		Secret string `json:"secret"`
	}
	expect(t, ext.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": rc.URL + "/team"}, &created), http.StatusCreated)
	if !strings.HasPrefix(created.Secret, "whsec_") || !slices.Equal(created.Events, webhooks.DefaultExternalEvents) {
		t.Fatalf("created endpoint = %+v", created)
	}

	// The first request may come before the local generator has polled (503, nothing created).
	var gen external.GenerationResponse
	testenv.Eventually(t, 30*time.Second, "the local generator", func() bool {
		return ext.do(http.MethodPost, "/sceneries/register-ideas", map[string]any{"preferences": "warm oak table, morning light",
			"count": 2}, &gen).StatusCode == http.StatusOK
	})
	waitOrder(t, env, ext, gen.OrderID)
	done := rc.wait(t, "record.done", 2)
	listedSceneries := listed(t, ext, "/sceneries", "sceneries")
	for _, h := range done {
		body := verifyExternal(t, h, created.Secret)
		rec := body["record"].(map[string]any)
		item, ok := listedSceneries[rec["id"].(string)]
		if body["order_id"] != gen.OrderID || !ok || !slices.Contains(gen.CreatedRecordIDs, rec["id"].(string)) ||
			rec["kind"] != "scenery" || rec["status"] != "DONE" || rec["status"] != item["status"] || rec["name"] != item["name"] ||
			rec["thumbnail"] == "" {
			t.Fatalf("record.done = %s; listed %v", h.body, item)
		}
	}
	ended := verifyExternal(t, rc.wait(t, "order.completed", 1)[0], created.Secret)
	if order := ended["order"].(map[string]any); order["id"] != gen.OrderID || order["status"] != "completed" ||
		order["jobs"].(map[string]any)["completed"] != 2.0 {
		t.Fatalf("order.completed = %v", ended)
	}

	// A rotated secret: the test send is signed by both, the new one first.
	var rotated struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	expect(t, ext.do(http.MethodPost, "/webhook-endpoints/"+created.ID+"/rotate-secret", nil, &rotated), http.StatusOK)
	if rotated.ID != created.ID || rotated.Secret == created.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated = %+v", rotated)
	}
	expect(t, ext.do(http.MethodPost, "/webhook-endpoints/"+created.ID+"/test", map[string]any{"event": "record.failed"}, nil), http.StatusAccepted)
	sample := verifyExternal(t, rc.wait(t, "record.failed", 1)[0], rotated.Secret, created.Secret)
	if sample["test"] != true {
		t.Fatalf("test send = %v", sample)
	}

	// The account's events are its own: its plugin installation and another account see none.
	var events struct {
		Events []webhooks.Event `json:"events"`
	}
	expect(t, ext.do(http.MethodGet, "/events?type=record.done", nil, &events), http.StatusOK)
	if len(events.Events) != 2 {
		t.Fatalf("%d record.done events, want 2", len(events.Events))
	}
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	var pluginEvents plugin.EventsPage
	expect(t, api.do(http.MethodGet, "/events", nil, &pluginEvents), http.StatusOK)
	if len(pluginEvents.Events) != 0 {
		t.Fatalf("the installation lists %d of the account's events", len(pluginEvents.Events))
	}
	expect(t, api.do(http.MethodGet, "/events/"+events.Events[0].ID, nil, nil), http.StatusNotFound)
	them := externalClient(t, env, env.NewTenant(t, 5))
	expect(t, them.do(http.MethodGet, "/webhook-endpoints/"+created.ID, nil, nil), http.StatusNotFound)
	expect(t, them.do(http.MethodGet, "/events/"+events.Events[0].ID, nil, nil), http.StatusNotFound)
	expect(t, them.do(http.MethodPost, "/webhook-endpoints/"+created.ID+"/rotate-secret", nil, nil), http.StatusNotFound)
}
