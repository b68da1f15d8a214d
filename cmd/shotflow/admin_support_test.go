package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// supportFixture is an account with an installation and one order of two jobs: the first failed
// with CONTENT_POLICY, the second completed.
type supportFixture struct {
	*adminFixture
	accountID, installationID, orderID string
	failed, completed                  string
}

func newSupportFixture(t *testing.T) *supportFixture {
	t.Helper()
	f := &supportFixture{adminFixture: newAdminFixture(t)}
	t.Setenv("TEMPORAL_UI_URL", "http://ui.example:8233")
	t.Setenv("TEMPORAL_NAMESPACE", "shop-prod")
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme", "--credits", "10")
	var inst engine.InstallationCreated
	adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Shop")
	f.accountID, f.installationID = acc.AccountID, inst.InstallationID

	db := f.db(t)
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: acc.AccountID, InstallationID: &inst.InstallationID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 2,
		CreditsReserved: 2, CreatedAt: now, UpdatedAt: now}
	jobs := make([]models.Job, 2)
	for i := range jobs {
		jobs[i] = models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.AccountID, InstallationID: &inst.InstallationID,
			JobType: jobtype.PhotoShoot, Position: i, ProductRef: []string{"mug-01", "vase-02"}[i], AIModel: "sim/content-policy",
			AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&order).Error; err != nil {
			return err
		}
		if err := tx.Create(&jobs).Error; err != nil {
			return err
		}
		_, err := models.ReserveForJobs(tx, acc.AccountID, order.ID, jobs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.orderID, f.failed, f.completed = order.ID, jobs[0].ID, jobs[1].ID
	for _, j := range jobs {
		if err := models.BeginAttempt(db, j.ID, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	c := errorcat.ContentPolicy
	if _, err := models.EndJob(db, f.failed, 1, status.JobFailed, string(c), c.Hint(), "sim: prompt rejected by policy filter"); err != nil {
		t.Fatal(err)
	}
	if _, err := models.CompleteJob(db, f.completed, 1, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not a JSON object", v)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

func TestAdminJobsList(t *testing.T) {
	f := newSupportFixture(t)
	var out map[string]any
	adminJSON(t, &out, "jobs", "list", "--status", "failed", "--category", "CONTENT_POLICY")
	if got := keysOf(t, out); !slices.Equal(got, sorted("jobs", "count", "limit")) || out["count"] != 1.0 || out["limit"] != 100.0 {
		t.Fatalf("jobs list = %v", out)
	}
	item := out["jobs"].([]any)[0].(map[string]any)
	want := sorted("job_id", "order_id", "account_id", "installation_id", "status", "run", "attempt_count", "error_category",
		"error_hint", "product_ref", "ai_model", "updated_at", "workflow_id", "temporal_ui_url", "livemode")
	if got := keysOf(t, item); !slices.Equal(got, want) {
		t.Fatalf("item keys = %v\nwant %v", got, want)
	}
	if item["job_id"] != f.failed || item["order_id"] != f.orderID || item["account_id"] != f.accountID ||
		item["installation_id"] != f.installationID || item["status"] != "failed" || item["run"] != 1.0 ||
		item["attempt_count"] != 1.0 || item["error_category"] != "CONTENT_POLICY" || item["error_hint"] != errorcat.ContentPolicy.Hint() ||
		item["product_ref"] != "mug-01" || item["workflow_id"] != "job/"+f.failed ||
		item["temporal_ui_url"] != "http://ui.example:8233/namespaces/shop-prod/workflows/job%2F"+f.failed || item["livemode"] != true {
		t.Fatalf("item = %v", item)
	}
	if _, err := time.Parse(time.RFC3339, item["updated_at"].(string)); err != nil {
		t.Fatalf("updated_at: %v", err)
	}

	// The other filters, a lower-case category, and flags in any order.
	var list struct {
		Jobs  []map[string]any `json:"jobs"`
		Count int              `json:"count"`
	}
	adminJSON(t, &list, "jobs", "list", "--installation", f.installationID, "--category", "content_policy", "--status", "failed",
		"--since", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "--limit", "5")
	if list.Count != 1 || list.Jobs[0]["job_id"] != f.failed {
		t.Fatalf("filtered list = %+v", list)
	}
	code, stdout, _ := runCLI(t, "admin", "jobs", "list", "--status", "failed", "--since", time.Now().Add(time.Hour).Format(time.RFC3339))
	if code != 0 || !strings.Contains(stdout, `"jobs": []`) || !strings.Contains(stdout, `"count": 0`) {
		t.Fatalf("empty list: exit %d, %s", code, stdout)
	}
	adminJSON(t, &list, "jobs", "list", "--status", "completed")
	if list.Count != 1 || list.Jobs[0]["job_id"] != f.completed || list.Jobs[0]["error_category"] != nil {
		t.Fatalf("completed list = %+v", list)
	}

	// An installation that does not exist is a record that does not exist: exit 1, not an empty
	// list that reads as "none of its jobs failed".
	missingID := models.NewID()
	code, stdout, stderr := runCLI(t, "admin", "jobs", "list", "--status", "failed", "--installation", missingID)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "installation "+missingID+" does not exist") {
		t.Fatalf("jobs list of an unknown installation: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	for _, args := range [][]string{
		{},
		{"--status", "broken"},
		{"--status", "failed", "--category", "NOT_A_CATEGORY"},
		{"--status", "failed", "--since", "yesterday"},
		{"--status", "failed", "--limit", "0"},
		{"--status", "failed", "--limit", "5000"},
		{"--status", "failed", "extra"},
		{"--status", "failed", "--unknown-flag"},
		{"--status", "failed", "--mode", "sandbox"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin", "jobs", "list"}, args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "shotflow admin:") {
			t.Errorf("jobs list %v: exit %d, stdout %q, stderr %q; want a usage error", args, code, stdout, stderr)
		}
	}
}

func TestAdminOrdersShow(t *testing.T) {
	f := newSupportFixture(t)
	var out map[string]any
	adminJSON(t, &out, "orders", "show", f.orderID)
	if got := keysOf(t, out); !slices.Equal(got, sorted("order", "jobs", "ledger", "webhook_deliveries", "job_retries")) {
		t.Fatalf("keys = %v", got)
	}
	order := out["order"].(map[string]any)
	if order["order_id"] != f.orderID || order["status"] != "completed" || order["jobs_completed"] != 1.0 || order["jobs_failed"] != 1.0 ||
		order["workflow_id"] != "order/"+f.orderID ||
		order["temporal_ui_url"] != "http://ui.example:8233/namespaces/shop-prod/workflows/order%2F"+f.orderID ||
		order["livemode"] != true {
		t.Fatalf("order = %v", order)
	}
	credits := order["credits"].(map[string]any)
	if credits["reserved"] != 2.0 || credits["consumed"] != 1.0 || credits["released"] != 1.0 || credits["held"] != 0.0 {
		t.Fatalf("credits = %v", credits)
	}
	jobs := out["jobs"].([]any)
	if len(jobs) != 2 {
		t.Fatalf("jobs = %v", jobs)
	}
	failed := jobs[0].(map[string]any)
	for _, k := range []string{"run", "status", "attempt_count", "error_category", "error_hint", "error_detail", "started_at",
		"completed_at", "workflow_id", "temporal_ui_url"} {
		if _, ok := failed[k]; !ok {
			t.Errorf("job has no %s: %v", k, failed)
		}
	}
	if failed["job_id"] != f.failed || failed["error_detail"] != "sim: prompt rejected by policy filter" || failed["status"] != "failed" ||
		failed["temporal_ui_url"] != "http://ui.example:8233/namespaces/shop-prod/workflows/job%2F"+f.failed || failed["started_at"] == nil {
		t.Fatalf("failed job = %v", failed)
	}
	var kinds []string
	for _, e := range out["ledger"].([]any) {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"consume", "release", "reserve", "reserve"}) {
		t.Fatalf("ledger kinds = %v", kinds)
	}
	if d, r := out["webhook_deliveries"].([]any), out["job_retries"].([]any); len(d) != 0 || len(r) != 0 {
		t.Fatalf("deliveries %v, retries %v; want empty lists", d, r)
	}

	code, stdout, stderr := runCLI(t, "admin", "orders", "show", models.NewID())
	if code != 1 || stdout != "" || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("unknown order: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, args := range [][]string{{"orders", "show"}, {"orders", "show", "a", "b"}, {"orders", "show", "--x", f.orderID}} {
		if code, _, _ := runCLI(t, append([]string{"admin"}, args...)...); code != 2 {
			t.Errorf("admin %v: exit %d, want 2", args, code)
		}
	}
}

// TestAdminRetryAndReplayNeedTemporal: usage mistakes exit 2 before anything is touched, and
// with Temporal unreachable a retry fails clearly and changes nothing. (The commands against a
// real Temporal server are covered by internal/testsupport/e2e/support_test.go.)
func TestAdminRetryAndReplayNeedTemporal(t *testing.T) {
	f := newSupportFixture(t)
	for _, args := range [][]string{
		{"jobs", "retry"}, {"jobs", "retry", "a", "b"}, {"jobs", "retry", f.failed, "--actor", ""}, {"jobs", "retry", "--nope", f.failed},
		{"webhooks", "replay"}, {"webhooks", "replay", "a", "b"},
		{"jobs", "stragglers", "--after", "not-a-cursor"}, {"jobs", "stragglers", "--after", "2026-01-02T03:04:05Z"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin"}, args...)...)
		if code != 2 || stdout != "" || stderr == "" {
			t.Errorf("admin %v: exit %d, stdout %q, stderr %q; want a usage error", args, code, stdout, stderr)
		}
	}

	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	before := snapshotJSON(t, f)
	code, stdout, stderr := runCLI(t, "admin", "jobs", "retry", f.failed, "--reason", "policy fixed")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "TEMPORAL_ADDRESS") {
		t.Fatalf("retry without Temporal: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if after := snapshotJSON(t, f); after != before {
		t.Fatalf("a retry that could not reach Temporal changed the database:\n%s\n%s", before, after)
	}
	// A delivery that can be replayed needs Temporal; one that cannot is told before it is dialled:
	// an unknown one does not exist (exit 1), and one recorded before endpoints for an installation
	// without a callback URL has no endpoint, so nothing can ever receive it (exit 1, as a delivery
	// whose endpoint is disabled or deleted).
	db := f.db(t)
	now := time.Now().UTC()
	ep := models.WebhookEndpoint{ID: models.NewID(), AccountID: f.accountID, InstallationID: &f.installationID, URL: "https://shop.example/hook",
		Events: models.StringList{"job.failed"}, Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&ep).Error; err != nil {
		t.Fatal(err)
	}
	delivery := func(run int, endpointID *string) string {
		d := models.WebhookDelivery{ID: models.WebhookDeliveryID(f.failed, run, "job.failed"), AccountID: f.accountID,
			InstallationID: &f.installationID, OrderID: &f.orderID, JobID: &f.failed, Run: run, Event: "job.failed",
			Payload: models.JSON(`{}`), CallbackURL: "https://shop.example/hook", Status: models.WebhookFailed, EndpointID: endpointID}
		if _, err := models.CreateWebhookDelivery(db, &d); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	toEndpoint, legacy := delivery(1, &ep.ID), delivery(2, nil)
	if code, _, stderr := runCLI(t, "admin", "webhooks", "replay", toEndpoint); code != 1 || !strings.Contains(stderr, "TEMPORAL_ADDRESS") {
		t.Fatalf("replay without Temporal: exit %d, %s", code, stderr)
	}
	unknown := models.NewID()
	if code, _, stderr := runCLI(t, "admin", "webhooks", "replay", unknown); code != 1 || !strings.Contains(stderr, unknown+" does not exist") {
		t.Fatalf("replay of an unknown delivery: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "admin", "webhooks", "replay", legacy)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "no endpoint") || strings.Contains(stderr, "TEMPORAL_ADDRESS") {
		t.Fatalf("replay of a delivery without endpoint: exit %d, stdout %q, stderr %q; want exit 1 saying it has no endpoint", code, stdout, stderr)
	}

	code, stdout, _ = runCLI(t, "admin", "help")
	for _, c := range []string{"jobs list", "jobs retry", "webhooks replay", "orders show"} {
		if code != 0 || !strings.Contains(stdout, "shotflow admin "+c) {
			t.Errorf("admin help does not show %q", c)
		}
	}
}

func snapshotJSON(t *testing.T, f *supportFixture) string {
	t.Helper()
	db := f.db(t)
	var (
		jobs    []models.Job
		orders  []models.Order
		ledger  []models.LedgerEntry
		retries []models.JobRetry
		acc     models.Account
	)
	db.Order("id").Find(&jobs)
	db.Order("id").Find(&orders)
	db.Order("id").Find(&ledger)
	db.Order("id").Find(&retries)
	db.Take(&acc, "id = ?", f.accountID)
	b, err := json.Marshal([]any{jobs, orders, ledger, retries, acc})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
