package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestWebhookBodyIsTheJobAsGetJobShowsIt: the webhook a merchant gets when a job completes has,
// at its top level, every field of GET /jobs/{id} for the same job with the same value (the
// download URLs aside, which are signed for another expiry but link the same files), and beside
// them only the event, the delivery ID (the webhook-id) and the delivery's creation time.
func TestWebhookBodyIsTheJobAsGetJobShowsIt(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 5)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	receiver, secret := useReceiver(t, env, tenant)
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	jobID := startSession(t, api, "vase", "local/studio-v1", 1).Subjects[0].JobIDs[0]
	if j := waitTerminal(t, api, []string{jobID})[jobID]; j.Status != status.JobCompleted {
		t.Fatalf("job %s = %s", jobID, j.Status)
	}

	deliveryID := models.WebhookDeliveryID(jobID, 1, webhooks.EventJobCompleted)
	h := receiver.waitHooks(t, deliveryID, 1, 60*time.Second)[0]
	verify(t, secret, h) // signature, headers and the document's webhook schema
	var body map[string]any
	if err := json.Unmarshal(h.body, &body); err != nil {
		t.Fatal(err)
	}
	var apiJob map[string]any
	expect(t, api.do(http.MethodGet, "/jobs/"+jobID, nil, &apiJob), http.StatusOK)

	d, err := deliveryOfEvent(t, env, deliveryID)
	if err != nil {
		t.Fatal(err)
	}
	notification := map[string]any{"event": webhooks.EventJobCompleted, "delivery_id": deliveryID,
		"delivery_created_at": d.CreatedAt.UTC().Format(time.RFC3339Nano)}
	for k, want := range notification {
		if body[k] != want {
			t.Errorf("%s = %v, want %v", k, body[k], want)
		}
		delete(body, k)
	}
	hookOutputs, apiOutputs := linkedFiles(t, body), linkedFiles(t, apiJob)
	if len(apiOutputs) != 1 || !reflect.DeepEqual(hookOutputs, apiOutputs) {
		t.Errorf("webhook outputs %v, GET /jobs/{id} outputs %v", hookOutputs, apiOutputs)
	}
	if !reflect.DeepEqual(body, apiJob) {
		t.Fatalf("webhook body without its notification fields\n%v\nGET /jobs/%s\n%v", body, jobID, apiJob)
	}
}

// linkedFiles removes a job's outputs from it and returns them with the path their URL links
// instead of the URL and its expiry, which differ between two answers for the same file.
func linkedFiles(t *testing.T, job map[string]any) []map[string]any {
	t.Helper()
	outputs, ok := job["outputs"].([]any)
	if !ok {
		t.Fatalf("outputs = %v", job["outputs"])
	}
	delete(job, "outputs")
	files := make([]map[string]any, 0, len(outputs))
	for _, o := range outputs {
		file := o.(map[string]any)
		u, err := url.Parse(file["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		file["path"] = u.Path
		delete(file, "url")
		delete(file, "expires_at")
		files = append(files, file)
	}
	return files
}
