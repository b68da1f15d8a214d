package contract_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Every body the plugin API's events carry matches its entry in the document's webhooks: the
// events of a job's run, an order's end, a disabled endpoint, and the test send of every type.
func TestEveryPluginEventBodyMatchesTheDocument(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	signer := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "https://api.example")
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {webhooks.UserAgent}, "Webhook-Id": {models.NewID()},
		"Webhook-Timestamp": {"1780000000"}, "Webhook-Signature": {"v1,abc="}, "X-Service-Signature": {"v1,abc="}}
	bodies := map[string][]byte{}
	var deadline time.Time
	for _, live := range []bool{true, false} {
		mode := ""
		if !live {
			mode = "test mode "
		}
		add := func(name string, body []byte, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bodies[name] = body
			checkLivemode(t, name, body, live)
		}
		inst := models.NewID()
		job := models.Job{ID: models.NewID(), OrderID: models.NewID(), InstallationID: &inst, JobType: "photo_shoot", ProductRef: "mug",
			AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 2, Run: 1, Status: status.JobInProgress, AttemptCount: 1,
			Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, StartedAt: &now, TestMode: !live}
		started, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobStarted,
			CreatedAt: now, Job: &job, Signer: signer, DownloadTTL: time.Hour})
		add(mode+"job.started", started, err)
		retrying := job
		retrying.Status = status.JobRetryPending
		body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobRetrying,
			CreatedAt: now, Job: &retrying, Signer: signer, DownloadTTL: time.Hour,
			Retry: &webhooks.Retry{Attempt: 1, ErrorCategory: "PROVIDER_CAPACITY", NextAttemptAt: now.Add(5 * time.Second)}})
		add(mode+"job.retrying", body, err)
		// A job cancelled at its Cancel-After deadline: its reason and deadline.
		cancelled := job
		reason := status.CancelDeadline
		deadline = now.Add(-time.Second)
		cancelled.Status, cancelled.StartedAt, cancelled.AttemptCount, cancelled.CompletedAt = status.JobCancelled, nil, 0, &now
		cancelled.StartDeadline, cancelled.CancelReason = &deadline, &reason
		body, err = webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobCancelled,
			CreatedAt: now, Job: &cancelled, Signer: signer, DownloadTTL: time.Hour})
		add(mode+"job.cancelled", body, err)
		done := now
		order := models.Order{ID: job.OrderID, Status: status.OrderCompleted, JobsTotal: 3, JobsCompleted: 2, JobsFailed: 1,
			CreditsConsumed: 4, CreditsReleased: 2, CompletedAt: &done, TestMode: !live}
		body, err = webhooks.BuildOrderPayload(models.NewID(), now, &order)
		add(mode+"order.completed", body, err)
		ep := models.WebhookEndpoint{ID: models.NewID(), InstallationID: &inst, URL: "https://shop.example/hooks",
			Events: models.StringList(webhooks.DefaultPluginEvents), Status: models.EndpointDisabled,
			DisabledReason: models.EndpointDisabledFailing, DisabledAt: &now, FailingSince: &now, CreatedAt: now, UpdatedAt: now}
		body, err = json.Marshal(map[string]any{"event": webhooks.EventEndpointDisabled, "delivery_id": models.NewID(),
			"delivery_created_at": now, "endpoint": webhooks.EndpointOf(&ep, live), "livemode": live})
		add(mode+"endpoint.disabled", body, err)
		for _, event := range webhooks.PluginEvents {
			body, err := webhooks.SamplePayload(event, models.NewID(), now, &ep, live)
			add(mode+"test send of "+event, body, err)
		}
	}
	for name, body := range bodies {
		if err := contract.ValidateWebhook(header, body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var fields map[string]any
	if err := json.Unmarshal(bodies["job.cancelled"], &fields); err != nil {
		t.Fatal(err)
	}
	if fields["cancel_reason"] != status.CancelDeadline || fields["cancel_after_at"] != deadline.Format(time.RFC3339Nano) {
		t.Errorf("job.cancelled = %s", bodies["job.cancelled"])
	}
	fields["cancel_reason"] = "bored"
	if b, _ := json.Marshal(fields); contract.ValidateWebhook(header, b) == nil {
		t.Error("job.cancelled with an undocumented cancel_reason passed")
	}
	// job.retrying without its retry, and order.completed with an undocumented field, do not pass.
	if err := json.Unmarshal(bodies["job.retrying"], &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "retry")
	if b, _ := json.Marshal(fields); contract.ValidateWebhook(header, b) == nil {
		t.Error("job.retrying without retry passed")
	}
	if err := json.Unmarshal(bodies["order.completed"], &fields); err != nil {
		t.Fatal(err)
	}
	fields["surprise"] = 1
	if b, _ := json.Marshal(fields); contract.ValidateWebhook(header, b) == nil {
		t.Error("order.completed with an undocumented field passed")
	}
}

// Every body the external API's events carry matches its entry in the external document's
// webhooks: a record's end (done and failed), an order's end, a disabled endpoint, and the test
// send of every type.
func TestEveryExternalEventBodyMatchesTheDocument(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	signer := urlsign.New([]byte("0123456789abcdef0123456789abcdef"), "https://api.example")
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {webhooks.UserAgent}, "Webhook-Id": {models.NewID()},
		"Webhook-Timestamp": {"1780000000"}, "Webhook-Signature": {"v1,abc="}, "X-Service-Signature": {"v1,abc="}}
	bodies := map[string][]byte{}
	for _, live := range []bool{true, false} {
		mode := ""
		if !live {
			mode = "test mode "
		}
		job := models.Job{ID: models.NewID(), OrderID: models.NewID(), JobType: "scenery_idea", ProductLabel: "Beach",
			AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobCompleted, CreatedAt: now, UpdatedAt: now, TestMode: !live}
		output := models.Asset{ID: models.NewID(), ContentType: "image/png"}
		done, err := webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(), Event: webhooks.EventRecordDone,
			CreatedAt: now, Job: &job, Outputs: []models.Asset{output}, Signer: signer, DownloadTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		bodies[mode+"record.done"] = done
		failed := job
		failed.Status = status.JobFailed
		if bodies[mode+"record.failed"], err = webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(),
			Event: webhooks.EventRecordFailed, CreatedAt: now, Job: &failed, Signer: signer}); err != nil {
			t.Fatal(err)
		}
		cancelled := job
		reason := status.CancelDeadline
		cancelled.Status, cancelled.CancelReason = status.JobCancelled, &reason
		if bodies[mode+"record.failed (cancelled)"], err = webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(),
			Event: webhooks.EventRecordFailed, CreatedAt: now, Job: &cancelled, Signer: signer}); err != nil {
			t.Fatal(err)
		}
		order := models.Order{ID: job.OrderID, Status: status.OrderFailed, JobsTotal: 1, JobsFailed: 1, CreditsReserved: 1, CreditsReleased: 1, CompletedAt: &now, TestMode: !live}
		if bodies[mode+"order.completed"], err = webhooks.BuildOrderPayload(models.NewID(), now, &order); err != nil {
			t.Fatal(err)
		}
		ep := models.WebhookEndpoint{ID: models.NewID(), URL: "https://team.example/hooks", Events: models.StringList(webhooks.DefaultExternalEvents),
			Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
		for _, event := range webhooks.ExternalEvents {
			body, err := webhooks.SamplePayload(event, models.NewID(), now, &ep, live)
			if err != nil {
				t.Fatal(err)
			}
			bodies[mode+"test send of "+event] = body
		}
		for name, body := range bodies {
			if strings.HasPrefix(name, mode) {
				checkLivemode(t, name, body, live)
			}
		}
	}
	for name, body := range bodies {
		if err := contract.External.ValidateWebhook(header, body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var fields map[string]any
	if err := json.Unmarshal(bodies["record.done"], &fields); err != nil {
		t.Fatal(err)
	}
	if rec := fields["record"].(map[string]any); rec["thumbnail"] == "" || rec["status"] != "DONE" || rec["kind"] != "scenery" || rec["cancelReason"] != nil {
		t.Errorf("record.done = %s", bodies["record.done"])
	}
	var cancelledFields map[string]any
	if err := json.Unmarshal(bodies["record.failed (cancelled)"], &cancelledFields); err != nil {
		t.Fatal(err)
	}
	if rec := cancelledFields["record"].(map[string]any); rec["status"] != "FAILED" || rec["cancelReason"] != status.CancelDeadline {
		t.Errorf("record.failed of a cancelled job = %s", bodies["record.failed (cancelled)"])
	}
	delete(fields, "order_id")
	if b, _ := json.Marshal(fields); contract.External.ValidateWebhook(header, b) == nil {
		t.Error("record.done without order_id passed")
	}
	// A plugin event is not an external webhook.
	if err := contract.External.ValidateWebhook(header, []byte(`{"event":"job.completed","delivery_id":"`+models.NewID()+`"}`)); err == nil {
		t.Error("job.completed passed as an external webhook")
	}
}

// checkLivemode fails the test unless body says livemode live at the top level and on the order,
// record or endpoint it carries.
func checkLivemode(t *testing.T, name string, body []byte, live bool) {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if fields["livemode"] != live {
		t.Errorf("%s: livemode %v, want %v: %s", name, fields["livemode"], live, body)
	}
	for _, nested := range []string{"order", "record", "endpoint"} {
		if obj, ok := fields[nested].(map[string]any); ok && obj["livemode"] != live {
			t.Errorf("%s: %s.livemode %v, want %v: %s", name, nested, obj["livemode"], live, body)
		}
	}
}
