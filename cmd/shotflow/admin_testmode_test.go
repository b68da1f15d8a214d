package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// Operators make test keys: with a new installation (--test-key), for an existing one
// (installation test-key) and for an account (keys issue --test); they authenticate as test keys
// of the tenant's test twin, keys list tells them from live ones by mode, and keys revoke revokes
// them like live keys.
func TestAdminTestKeys(t *testing.T) {
	f := newAdminFixture(t)
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme", "--credits", "10")

	var inst struct {
		engine.InstallationCreated
		TestKey *engine.TestKeyIssued `json:"test_key"`
	}
	adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Shop", "--scopes", "plugin.jobs:read,plugin.jobs:write", "--test-key")
	if !strings.HasPrefix(inst.APIKey, models.PluginKeyPrefix) || inst.TestKey == nil || !strings.HasPrefix(inst.TestKey.APIKey, models.PluginTestKeyPrefix) {
		t.Fatalf("installation create --test-key = %+v", inst)
	}
	if inst.TestKey.InstallationID == inst.InstallationID || inst.TestKey.AccountID == acc.AccountID || inst.TestKey.Livemode ||
		!slices.Equal(inst.TestKey.Scopes, []string{"plugin.jobs:read", "plugin.jobs:write"}) {
		t.Fatalf("test key of the new installation = %+v", inst.TestKey)
	}
	var plain map[string]any
	adminJSON(t, &plain, "installation", "create", "--account", acc.AccountID, "--name", "Other shop")
	if _, ok := plain["test_key"]; ok {
		t.Fatalf("installation create without --test-key printed a test key: %v", plain)
	}

	db := f.db(t)
	eng := engine.New(engine.Config{Store: models.NewStore(db)})
	caller, err := eng.Accounts.AuthenticatePluginKey(t.Context(), inst.TestKey.APIKey, time.Now())
	if err != nil || !caller.Key.Test || caller.Installation.ID != inst.TestKey.InstallationID {
		t.Fatalf("the test key authenticates as %+v, %v", caller, err)
	}

	// A second test key of the same installation: the same twin, with the asked scopes and expiry.
	var second engine.TestKeyIssued
	adminJSON(t, &second, "installation", "test-key", "--installation", inst.InstallationID, "--name", "ci", "--scopes", "plugin.jobs:read", "--expires", "1h")
	if second.InstallationID != inst.TestKey.InstallationID || second.KeyID == inst.TestKey.KeyID ||
		!slices.Equal(second.Scopes, []string{"plugin.jobs:read"}) || second.ExpiresAt == nil || time.Until(*second.ExpiresAt) > time.Hour {
		t.Fatalf("installation test-key = %+v", second)
	}
	var otherKey engine.TestKeyIssued
	adminJSON(t, &otherKey, "installation", "test-key", "--installation", plain["installation_id"].(string))
	if otherKey.InstallationID == inst.TestKey.InstallationID || !slices.Equal(otherKey.Scopes, models.PluginScopes) {
		t.Fatalf("test key of the other installation = %+v", otherKey)
	}
	// A twin has no twin.
	code, _, stderr := runCLI(t, "admin", "installation", "test-key", "--installation", second.InstallationID)
	if code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("test-key of a twin: exit %d, %s", code, stderr)
	}

	// External test keys, and the key list by mode.
	var ext engine.TestKeyIssued
	adminJSON(t, &ext, "keys", "issue", "--account", acc.AccountID, "--test", "--scopes", "content.read", "--expires", "720h")
	if !strings.HasPrefix(ext.APIKey, models.ExternalTestKeyPrefix) || ext.AccountID == acc.AccountID || ext.Livemode {
		t.Fatalf("keys issue --test = %+v", ext)
	}
	if k, err := eng.Accounts.AuthenticateAccountKey(t.Context(), ext.APIKey, time.Now()); err != nil || !k.Test || k.AccountID != ext.AccountID {
		t.Fatalf("the external test key authenticates as %+v, %v", k, err)
	}
	listed := func(args ...string) (engine.AccountKeys, map[string]bool) {
		var l engine.AccountKeys
		adminJSON(t, &l, append([]string{"keys", "list", "--account", acc.AccountID}, args...)...)
		out := map[string]bool{}
		for _, k := range l.Keys {
			out[k.KeyID] = k.Livemode
		}
		return l, out
	}
	all, got := listed()
	if len(got) != 2 || got[acc.ExternalKeyID] != true || got[ext.KeyID] != false || all.TestAccountID != ext.AccountID {
		t.Fatalf("keys list = %+v", all)
	}
	if _, got := listed("--mode", "live"); len(got) != 1 || !got[acc.ExternalKeyID] {
		t.Fatalf("keys list --mode live = %v", got)
	}
	if _, got := listed("--mode", "test"); len(got) != 1 || got[ext.KeyID] {
		t.Fatalf("keys list --mode test = %v", got)
	}

	// Revocation of test keys, by ID and by the full key.
	for _, k := range []string{ext.KeyID, inst.TestKey.APIKey} {
		var rev engine.KeyRevoked
		adminJSON(t, &rev, "keys", "revoke", k)
		if !rev.Revoked {
			t.Fatalf("revoke %s = %+v", k, rev)
		}
	}
	if _, err := eng.Accounts.AuthenticateAccountKey(t.Context(), ext.APIKey, time.Now()); err == nil {
		t.Fatal("a revoked external test key still authenticates")
	}
	if _, err := eng.Accounts.AuthenticatePluginKey(t.Context(), inst.TestKey.APIKey, time.Now()); err == nil {
		t.Fatal("a revoked plugin test key still authenticates")
	}
	if _, err := eng.Accounts.AuthenticatePluginKey(t.Context(), second.APIKey, time.Now()); err != nil {
		t.Fatalf("the twin's other test key: %v", err)
	}
}

// jobs list and jobs stragglers filter by mode: the fixture's failed job made a test key's is
// listed in test mode alone, with livemode false.
func TestAdminJobsListByMode(t *testing.T) {
	f := newSupportFixture(t)
	db := f.db(t)
	if err := db.Exec("UPDATE jobs SET test_mode = ? WHERE id = ?", true, f.failed).Error; err != nil {
		t.Fatal(err)
	}
	var list struct {
		Jobs []engine.SupportJobItem `json:"jobs"`
	}
	for mode, want := range map[string][]string{"": {f.failed}, "all": {f.failed}, "test": {f.failed}, "live": nil} {
		args := []string{"jobs", "list", "--status", "failed"}
		if mode != "" {
			args = append(args, "--mode", mode)
		}
		adminJSON(t, &list, args...)
		var got []string
		for _, j := range list.Jobs {
			got = append(got, j.JobID)
			if j.Livemode {
				t.Errorf("mode %q: the test job says livemode", mode)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("jobs list --mode %q = %v, want %v", mode, got, want)
		}
	}
	adminJSON(t, &list, "jobs", "list", "--status", "completed", "--mode", "live")
	if len(list.Jobs) != 1 || list.Jobs[0].JobID != f.completed || !list.Jobs[0].Livemode {
		t.Fatalf("live completed jobs = %+v", list.Jobs)
	}
	code, stdout, stderr := runCLI(t, "admin", "jobs", "stragglers", "--mode", "sandbox")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--mode") {
		t.Fatalf("stragglers --mode sandbox: exit %d, %q, %q", code, stdout, stderr)
	}
}

// webhooks endpoints and deliveries of a live installation show its test twin's beside its own,
// by mode, each saying its world.
func TestAdminWebhooksByMode(t *testing.T) {
	f := newWebhookLogFixture(t)
	var key engine.TestKeyIssued
	adminJSON(t, &key, "installation", "test-key", "--installation", f.installationID)
	db := f.db(t)
	now := time.Now().UTC()
	ep := models.WebhookEndpoint{ID: models.NewID(), AccountID: key.AccountID, InstallationID: &key.InstallationID, URL: "https://shop.example/test-hook",
		Events: models.StringList{"job.failed"}, Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}
	ev := models.WebhookEvent{ID: models.NewID(), AccountID: key.AccountID, InstallationID: &key.InstallationID, Type: "job.failed",
		Payload: models.JSON(`{"event":"job.failed"}`), CreatedAt: now}
	d := models.WebhookDelivery{ID: models.EventDeliveryID(ev.ID, ep.ID), EventID: ev.ID, EndpointID: &ep.ID, AccountID: key.AccountID,
		InstallationID: &key.InstallationID, Run: 1, Event: "job.failed", CallbackURL: ep.URL, Status: models.WebhookFailed, CreatedAt: now, UpdatedAt: now}
	for _, row := range []any{&ep, &ev} {
		if err := db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := models.CreateWebhookDelivery(db, &d); err != nil { // in its account's mode, as RecordEvents stores it
		t.Fatal(err)
	}

	endpoints := func(mode string) map[string]bool {
		var out engine.SupportEndpointList
		adminJSON(t, &out, "webhooks", "endpoints", "--installation", f.installationID, "--mode", mode)
		got := map[string]bool{}
		for _, e := range out.Endpoints {
			got[e.ID] = e.Livemode
		}
		return got
	}
	if got := endpoints("all"); len(got) != 2 || !got[f.endpointID] || got[ep.ID] {
		t.Errorf("endpoints --mode all = %v", got)
	}
	if got := endpoints("live"); len(got) != 1 || !got[f.endpointID] {
		t.Errorf("endpoints --mode live = %v", got)
	}
	if got := endpoints("test"); len(got) != 1 || got[ep.ID] {
		t.Errorf("endpoints --mode test = %v", got)
	}

	deliveries := func(args ...string) ([]string, engine.SupportDeliveryList) {
		var out engine.SupportDeliveryList
		adminJSON(t, &out, append([]string{"webhooks", "deliveries", "--installation", f.installationID}, args...)...)
		var ids []string
		for _, x := range out.Deliveries {
			ids = append(ids, x.ID)
			if x.Livemode != (x.ID != d.ID) {
				t.Errorf("delivery %s: livemode %v", x.ID, x.Livemode)
			}
		}
		return ids, out
	}
	if got, out := deliveries(); !slices.Equal(got, []string{d.ID, f.failed, f.delivered}) || out.TestScope == nil || *out.TestScope.InstallationID != key.InstallationID {
		t.Errorf("deliveries (all) = %v, test scope %+v", got, out.TestScope)
	}
	if got, _ := deliveries("--mode", "live"); !slices.Equal(got, []string{f.failed, f.delivered}) {
		t.Errorf("deliveries --mode live = %v", got)
	}
	if got, _ := deliveries("--mode", "test"); !slices.Equal(got, []string{d.ID}) {
		t.Errorf("deliveries --mode test = %v", got)
	}
	if got, out := deliveries("--limit", "2"); !slices.Equal(got, []string{d.ID, f.failed}) || out.NextCursor == nil {
		t.Errorf("first page of both = %v", got)
	} else if got, out := deliveries("--limit", "2", "--cursor", *out.NextCursor); !slices.Equal(got, []string{f.delivered}) || out.NextCursor != nil {
		t.Errorf("second page of both = %v", got)
	}
	for _, args := range [][]string{
		{"webhooks", "endpoints", "--installation", f.installationID, "--mode", "both"},
		{"webhooks", "deliveries", "--installation", f.installationID, "--mode", "both"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin"}, args...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "--mode") {
			t.Errorf("admin %v: exit %d, %q, %q", args, code, stdout, stderr)
		}
	}
}

// `jobs list --installation ID` of a live installation lists its test key's jobs too (they are its
// test twin's), by --mode, as `webhooks endpoints` and `webhooks deliveries` do: an operator
// asked about a client's failing test jobs finds them; --mode live leaves them out.
func TestAdminJobsListOfALiveInstallationShowsItsTestJobs(t *testing.T) {
	f := newSupportFixture(t)
	var key engine.TestKeyIssued
	adminJSON(t, &key, "installation", "test-key", "--installation", f.installationID)
	// A failed job of a session the test key made: an order and a job of the twin.
	db := f.db(t)
	now := time.Now().UTC()
	order := models.Order{ID: models.NewID(), AccountID: key.AccountID, InstallationID: &key.InstallationID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), Status: status.OrderFailed, JobsTotal: 1, JobsFailed: 1,
		CreatedAt: now, UpdatedAt: now, TestMode: true}
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: key.AccountID, InstallationID: &key.InstallationID,
		JobType: jobtype.PhotoShoot, ProductRef: "mug-01", AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
		Status: status.JobFailed, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now, TestMode: true}
	if err := db.Create(&order).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&job).Error; err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"test", "all"} {
		var list struct {
			Jobs []engine.SupportJobItem `json:"jobs"`
		}
		adminJSON(t, &list, "jobs", "list", "--status", "failed", "--installation", f.installationID, "--mode", mode)
		var got []string
		for _, j := range list.Jobs {
			got = append(got, j.JobID)
		}
		if !slices.Contains(got, job.ID) {
			t.Errorf("jobs list --status failed --installation <live> --mode %s = %v; the failed job of its test key (%s, on twin %s) is not listed",
				mode, got, job.ID, key.InstallationID)
		}
	}
	var live struct {
		Jobs []engine.SupportJobItem `json:"jobs"`
	}
	adminJSON(t, &live, "jobs", "list", "--status", "failed", "--installation", f.installationID, "--mode", "live")
	for _, j := range live.Jobs {
		if j.JobID == job.ID {
			t.Errorf("jobs list --mode live lists the test job %s", job.ID)
		}
	}
}
