package main

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// TestAdminRefusesPrivateCallbackURLs: `installation create --callback-url` refuses loopback,
// private and link-local targets unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is true.
func TestAdminRefusesPrivateCallbackURLs(t *testing.T) {
	newAdminFixture(t)
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	private := []string{
		"http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/hook",
		"https://10.0.0.7/hook", "https://192.168.1.20/hook", "http://169.254.169.254/latest/meta-data/",
	}
	for _, u := range private {
		code, out, errOut := runCLI(t, "admin", "installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", u)
		if code != 2 || out != "" || !strings.Contains(errOut, "--callback-url") || !strings.Contains(errOut, "not allowed") {
			t.Errorf("callback %s: exit %d, stdout %q, stderr %q; want a usage error", u, code, out, errOut)
		}
	}

	t.Setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true")
	for _, u := range private[:3] {
		var inst engine.InstallationCreated
		adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Dev shop", "--callback-url", u)
		if inst.CallbackURL != u {
			t.Errorf("callback_url = %q, want %q", inst.CallbackURL, u)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(inst.WebhookSecret, "whsec_"))
		if !strings.HasPrefix(inst.WebhookSecret, "whsec_") || err != nil || len(key) != 24 {
			t.Errorf("webhook_secret %q is not a Standard Webhooks secret", inst.WebhookSecret)
		}
	}
}

// webhookLogFixture is an account with an installation made with --callback-url (so with one
// endpoint), an endpoint of the account's own, and a delivery log: two deliveries to the
// installation's endpoint (the newer failed after two attempts) and one to the account's.
type webhookLogFixture struct {
	*adminFixture
	accountID, installationID string
	endpointID, ownEndpointID string
	delivered, failed, own    string
}

func newWebhookLogFixture(t *testing.T) *webhookLogFixture {
	t.Helper()
	f := &webhookLogFixture{adminFixture: newAdminFixture(t)}
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	var inst engine.InstallationCreated
	adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", "https://shop.example/hook")
	f.accountID, f.installationID = acc.AccountID, inst.InstallationID
	db := f.db(t)
	var ep models.WebhookEndpoint
	if err := db.Take(&ep, "installation_id = ?", inst.InstallationID).Error; err != nil {
		t.Fatalf("the installation made with --callback-url has no endpoint: %v", err)
	}
	f.endpointID = ep.ID
	now := time.Now().UTC()
	own := models.WebhookEndpoint{ID: models.NewID(), AccountID: acc.AccountID, URL: "https://crm.example/in",
		Events: models.StringList{"record.done"}, Status: models.EndpointEnabled, SecretEnc: "sealed", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&own).Error; err != nil {
		t.Fatal(err)
	}
	f.ownEndpointID = own.ID
	log := func(ep *models.WebhookEndpoint, typ, status string, at time.Time, attempts int) string {
		ev := models.WebhookEvent{ID: models.NewID(), AccountID: acc.AccountID, InstallationID: ep.InstallationID, Type: typ,
			Payload: models.JSON(`{"event":"` + typ + `"}`), CreatedAt: at}
		d := models.WebhookDelivery{ID: models.EventDeliveryID(ev.ID, ep.ID), EventID: ev.ID, EndpointID: &ep.ID, AccountID: acc.AccountID,
			InstallationID: ep.InstallationID, Run: 1, Event: typ, CallbackURL: ep.URL, Status: status, Attempts: attempts, CreatedAt: at, UpdatedAt: at}
		if err := db.Create(&ev).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&d).Error; err != nil {
			t.Fatal(err)
		}
		for i := range attempts {
			code := 502
			if err := db.Create(&models.WebhookAttempt{ID: models.NewID(), DeliveryID: d.ID, Attempt: i + 1, StartedAt: at.Add(time.Duration(i) * time.Minute),
				StatusCode: &code, LatencyMS: 30, Error: "HTTP 502", CreatedAt: at}).Error; err != nil {
				t.Fatal(err)
			}
		}
		return d.ID
	}
	f.delivered = log(&ep, "job.completed", models.WebhookDelivered, now.Add(-2*time.Hour), 1)
	f.failed = log(&ep, "job.failed", models.WebhookFailed, now.Add(-time.Hour), 2)
	f.own = log(&own, "record.done", models.WebhookFailed, now.Add(-time.Hour), 1)
	return f
}

// deliveryPage is what `admin webhooks deliveries` prints.
type deliveryPage struct {
	AccountID      string              `json:"account_id"`
	InstallationID *string             `json:"installation_id"`
	Deliveries     []webhooks.Delivery `json:"webhook_deliveries"`
	NextCursor     *string             `json:"next_cursor"`
}

func deliveryIDs(p deliveryPage) []string {
	out := []string{}
	for _, d := range p.Deliveries {
		out = append(out, d.ID)
	}
	return out
}

func TestAdminWebhooksEndpoints(t *testing.T) {
	f := newWebhookLogFixture(t)
	var out struct {
		AccountID      string              `json:"account_id"`
		InstallationID *string             `json:"installation_id"`
		Endpoints      []webhooks.Endpoint `json:"webhook_endpoints"`
	}
	adminJSON(t, &out, "webhooks", "endpoints", "--installation", f.installationID)
	if out.AccountID != f.accountID || out.InstallationID == nil || *out.InstallationID != f.installationID || len(out.Endpoints) != 1 {
		t.Fatalf("webhooks endpoints --installation = %+v", out)
	}
	ep := out.Endpoints[0]
	if ep.ID != f.endpointID || ep.URL != "https://shop.example/hook" || ep.Status != models.EndpointEnabled || ep.DisabledReason != nil ||
		ep.FailingSince != nil || !slices.Equal(ep.Events, []string{"job.completed", "job.failed", "job.cancelled"}) {
		t.Errorf("the --callback-url endpoint = %+v", ep)
	}

	// A disabled endpoint shows why and since when.
	since := time.Now().UTC().Add(-120 * time.Hour).Truncate(time.Second)
	if err := f.db(t).Model(&models.WebhookEndpoint{}).Where("id = ?", f.endpointID).Updates(map[string]any{"status": models.EndpointDisabled,
		"disabled_reason": models.EndpointDisabledFailing, "disabled_at": time.Now().UTC(), "failing_since": since}).Error; err != nil {
		t.Fatal(err)
	}
	code, raw, errOut := runCLI(t, "admin", "webhooks", "endpoints", "--installation", f.installationID)
	if code != 0 {
		t.Fatalf("webhooks endpoints: exit %d, %s", code, errOut)
	}
	for _, want := range []string{`"status": "disabled"`, `"disabled_reason": "failing"`, `"failing_since": "` + since.Format(time.RFC3339)} {
		if !strings.Contains(raw, want) {
			t.Errorf("webhooks endpoints of a disabled endpoint printed %s, without %s", raw, want)
		}
	}

	adminJSON(t, &out, "webhooks", "endpoints", "--account", f.accountID)
	if out.InstallationID != nil || len(out.Endpoints) != 1 || out.Endpoints[0].ID != f.ownEndpointID {
		t.Errorf("webhooks endpoints --account = %+v, want the account's own endpoint only", out)
	}

	unknown := models.NewID()
	for _, c := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"webhooks", "endpoints"}, 2, "--installation or --account"},
		{[]string{"webhooks", "endpoints", "--installation", f.installationID, "--account", f.accountID}, 2, "--installation or --account"},
		{[]string{"webhooks", "endpoints", "--installation", f.installationID, "extra"}, 2, "takes no arguments"},
		{[]string{"webhooks", "endpoints", "--installation", unknown}, 1, "installation " + unknown + " does not exist"},
		{[]string{"webhooks", "endpoints", "--account", unknown}, 1, "account " + unknown + " does not exist"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin"}, c.args...)...)
		if code != c.code || stdout != "" || !strings.Contains(stderr, c.contains) {
			t.Errorf("admin %v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, stdout, stderr, c.code, c.contains)
		}
	}
}

func TestAdminWebhooksDeliveries(t *testing.T) {
	f := newWebhookLogFixture(t)
	var page deliveryPage
	adminJSON(t, &page, "webhooks", "deliveries", "--installation", f.installationID)
	if got := deliveryIDs(page); !slices.Equal(got, []string{f.failed, f.delivered}) || page.NextCursor != nil {
		t.Fatalf("webhooks deliveries --installation = %v (next %v), want the failed then the delivered one", got, page.NextCursor)
	}
	failed := page.Deliveries[0]
	if failed.Status != models.WebhookFailed || failed.Event != "job.failed" || failed.EndpointID == nil || *failed.EndpointID != f.endpointID ||
		len(failed.Attempts) != 2 || failed.AttemptCount != 2 || *failed.Attempts[0].StatusCode != 502 || *failed.Attempts[1].Error != "HTTP 502" {
		t.Errorf("failed delivery = %+v", failed)
	}

	// The endpoint alone names its scope; filters narrow it.
	adminJSON(t, &page, "webhooks", "deliveries", "--endpoint", f.endpointID, "--status", "failed", "--event", "job.failed")
	if got := deliveryIDs(page); !slices.Equal(got, []string{f.failed}) || page.InstallationID == nil || *page.InstallationID != f.installationID {
		t.Errorf("webhooks deliveries --endpoint --status failed = %v (%v)", got, page.InstallationID)
	}
	adminJSON(t, &page, "webhooks", "deliveries", "--account", f.accountID)
	if got := deliveryIDs(page); !slices.Equal(got, []string{f.own}) || page.InstallationID != nil {
		t.Errorf("webhooks deliveries --account = %v, want the account's own delivery", got)
	}

	// Pages.
	adminJSON(t, &page, "webhooks", "deliveries", "--installation", f.installationID, "--limit", "1")
	if got := deliveryIDs(page); !slices.Equal(got, []string{f.failed}) || page.NextCursor == nil {
		t.Fatalf("first page = %v, next %v", got, page.NextCursor)
	}
	adminJSON(t, &page, "webhooks", "deliveries", "--installation", f.installationID, "--limit", "1", "--cursor", *page.NextCursor)
	if got := deliveryIDs(page); !slices.Equal(got, []string{f.delivered}) || page.NextCursor != nil {
		t.Errorf("second page = %v, next %v", got, page.NextCursor)
	}

	for _, c := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"webhooks", "deliveries"}, 2, "--installation, --account or --endpoint"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--account", f.accountID}, 2, "not both"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--status", "lost"}, 2, "--status"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--event", "record.done"}, 2, "--event"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--limit", "0"}, 2, "--limit"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--limit", "201"}, 2, "--limit"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "--cursor", "nope"}, 2, "--cursor"},
		{[]string{"webhooks", "deliveries", "--account", f.accountID, "--endpoint", f.endpointID}, 2, "--endpoint"},
		{[]string{"webhooks", "deliveries", "--endpoint", models.NewID()}, 1, "does not exist"},
		{[]string{"webhooks", "deliveries", "--installation", f.installationID, "extra"}, 2, "takes no arguments"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin"}, c.args...)...)
		if code != c.code || stdout != "" || !strings.Contains(stderr, c.contains) {
			t.Errorf("admin %v: exit %d, stdout %q, stderr %q; want %d and %q", c.args, code, stdout, stderr, c.code, c.contains)
		}
	}
}

// TestAdminWebhooksRecoverNeedsTemporal: usage mistakes exit 2 before anything is touched, and
// with Temporal unreachable a recover fails naming it and queues nothing. (The use case against a
// recording Temporal client is covered in internal/engine, support_webhooks_test.go.)
func TestAdminWebhooksRecoverNeedsTemporal(t *testing.T) {
	f := newWebhookLogFixture(t)
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	since := time.Now().UTC().Add(-3 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		args     []string
		contains string
	}{
		{[]string{"webhooks", "recover", "--since", since}, "--endpoint and --since"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID}, "--endpoint and --since"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID, "--since", "yesterday"}, "--since"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID, "--since", since, "--until", "later"}, "--until"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID, "--since", time.Now().Add(-15 * 24 * time.Hour).Format(time.RFC3339)}, "14 days"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID, "--since", since, "--until", since}, "--until must be later"},
		{[]string{"webhooks", "recover", "--endpoint", f.endpointID, "--since", since, "extra"}, "takes no arguments"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin"}, c.args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.contains) || strings.Contains(stderr, "TEMPORAL_ADDRESS") {
			t.Errorf("admin %v: exit %d, stdout %q, stderr %q; want a usage error naming %q", c.args, code, stdout, stderr, c.contains)
		}
	}

	code, stdout, stderr := runCLI(t, "admin", "webhooks", "recover", "--endpoint", f.endpointID, "--since", since)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "TEMPORAL_ADDRESS") {
		t.Fatalf("recover without Temporal: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	var d models.WebhookDelivery
	if err := f.db(t).Take(&d, "id = ?", f.failed).Error; err != nil {
		t.Fatal(err)
	}
	if d.Status != models.WebhookFailed || d.StartDueAt != nil {
		t.Errorf("a recover that could not reach Temporal changed the delivery: status %s, start_due_at %v", d.Status, d.StartDueAt)
	}

	code, stdout, _ = runCLI(t, "admin", "help")
	for _, c := range []string{"webhooks endpoints", "webhooks deliveries", "webhooks recover"} {
		if code != 0 || !strings.Contains(stdout, "shotflow admin "+c) {
			t.Errorf("admin help does not show %q", c)
		}
	}
}
