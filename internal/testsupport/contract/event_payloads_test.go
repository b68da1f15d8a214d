package contract_test

import (
	"encoding/json"
	"net/http"
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
	inst := models.NewID()
	job := models.Job{ID: models.NewID(), OrderID: models.NewID(), InstallationID: &inst, JobType: "photo_shoot", ProductRef: "mug",
		AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 2, Run: 1, Status: status.JobInProgress, AttemptCount: 1,
		Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	bodies := map[string][]byte{}
	add := func(name string, body []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bodies[name] = body
	}
	started, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobStarted,
		CreatedAt: now, Job: &job, Signer: signer, DownloadTTL: time.Hour})
	add("job.started", started, err)
	retrying := job
	retrying.Status = status.JobRetryPending
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobRetrying,
		CreatedAt: now, Job: &retrying, Signer: signer, DownloadTTL: time.Hour,
		Retry: &webhooks.Retry{Attempt: 1, ErrorCategory: "PROVIDER_CAPACITY", NextAttemptAt: now.Add(5 * time.Second)}})
	add("job.retrying", body, err)
	// A job cancelled at its Cancel-After deadline: its reason and deadline.
	cancelled := job
	deadline, reason := now.Add(-time.Second), status.CancelDeadline
	cancelled.Status, cancelled.StartedAt, cancelled.AttemptCount, cancelled.CompletedAt = status.JobCancelled, nil, 0, &now
	cancelled.StartDeadline, cancelled.CancelReason = &deadline, &reason
	body, err = webhooks.BuildJobPayload(webhooks.JobPayload{DeliveryID: models.NewID(), Event: webhooks.EventJobCancelled,
		CreatedAt: now, Job: &cancelled, Signer: signer, DownloadTTL: time.Hour})
	add("job.cancelled", body, err)
	done := now
	order := models.Order{ID: job.OrderID, Status: status.OrderCompleted, JobsTotal: 3, JobsCompleted: 2, JobsFailed: 1,
		CreditsConsumed: 4, CreditsReleased: 2, CompletedAt: &done}
	body, err = webhooks.BuildOrderPayload(models.NewID(), now, &order)
	add("order.completed", body, err)
	ep := models.WebhookEndpoint{ID: models.NewID(), InstallationID: &inst, URL: "https://shop.example/hooks",
		Events: models.StringList(webhooks.DefaultPluginEvents), Status: models.EndpointDisabled,
		DisabledReason: models.EndpointDisabledFailing, DisabledAt: &now, FailingSince: &now, CreatedAt: now, UpdatedAt: now}
	body, err = json.Marshal(map[string]any{"event": webhooks.EventEndpointDisabled, "delivery_id": models.NewID(),
		"delivery_created_at": now, "endpoint": webhooks.EndpointOf(&ep)})
	add("endpoint.disabled", body, err)
	for _, event := range webhooks.PluginEvents {
		body, err := webhooks.SamplePayload(event, models.NewID(), now, &ep)
		add("test send of "+event, body, err)
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
	job := models.Job{ID: models.NewID(), OrderID: models.NewID(), JobType: "scenery_idea", ProductLabel: "Beach",
		AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobCompleted, CreatedAt: now, UpdatedAt: now}
	output := models.Asset{ID: models.NewID(), ContentType: "image/png"}
	bodies := map[string][]byte{}
	done, err := webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(), Event: webhooks.EventRecordDone,
		CreatedAt: now, Job: &job, Outputs: []models.Asset{output}, Signer: signer, DownloadTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	bodies["record.done"] = done
	failed := job
	failed.Status = status.JobFailed
	if bodies["record.failed"], err = webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(),
		Event: webhooks.EventRecordFailed, CreatedAt: now, Job: &failed, Signer: signer}); err != nil {
		t.Fatal(err)
	}
	cancelled := job
	reason := status.CancelDeadline
	cancelled.Status, cancelled.CancelReason = status.JobCancelled, &reason
	if bodies["record.failed (cancelled)"], err = webhooks.BuildRecordPayload(webhooks.RecordPayload{DeliveryID: models.NewID(),
		Event: webhooks.EventRecordFailed, CreatedAt: now, Job: &cancelled, Signer: signer}); err != nil {
		t.Fatal(err)
	}
	order := models.Order{ID: job.OrderID, Status: status.OrderFailed, JobsTotal: 1, JobsFailed: 1, CreditsReserved: 1, CreditsReleased: 1, CompletedAt: &now}
	if bodies["order.completed"], err = webhooks.BuildOrderPayload(models.NewID(), now, &order); err != nil {
		t.Fatal(err)
	}
	ep := models.WebhookEndpoint{ID: models.NewID(), URL: "https://team.example/hooks", Events: models.StringList(webhooks.DefaultExternalEvents),
		Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	for _, event := range webhooks.ExternalEvents {
		body, err := webhooks.SamplePayload(event, models.NewID(), now, &ep)
		if err != nil {
			t.Fatal(err)
		}
		bodies["test send of "+event] = body
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
