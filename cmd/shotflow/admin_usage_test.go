package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/models"
)

// TestAdminUsage: an installation's and an account's usage as GET /usage sums them, as JSON; a
// range or grouping the API refuses is refused here too, and so is an unknown tenant.
func TestAdminUsage(t *testing.T) {
	f := newSupportFixture(t)
	from := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	to := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	want := map[string]any{"credits_reserved": 2.0, "credits_consumed": 1.0, "credits_released": 1.0,
		"jobs_completed": 1.0, "jobs_failed": 1.0, "jobs_cancelled": 0.0}
	for _, scope := range [][]string{{"--installation", f.installationID}, {"--account", f.accountID}} {
		var out map[string]any
		adminJSON(t, &out, append([]string{"usage", "--from", from, "--to", to, "--group-by", "ai_model"}, scope...)...)
		if got := keysOf(t, out); !slices.Equal(got, sorted("from", "to", "group_by", "totals", "groups")) {
			t.Fatalf("%v: keys = %v", scope, got)
		}
		totals := out["totals"].(map[string]any)
		for k, v := range want {
			if totals[k] != v {
				t.Errorf("%v: totals[%s] = %v, want %v", scope, k, totals[k], v)
			}
		}
		groups := out["groups"].([]any)
		if len(groups) != 1 || groups[0].(map[string]any)["key"] != "sim/content-policy" {
			t.Errorf("%v: groups = %v", scope, groups)
		}
	}
	var byKey map[string]any
	adminJSON(t, &byKey, "usage", "--account", f.accountID, "--group-by", "key", "--from", from, "--to", to)
	if g := byKey["groups"].([]any); len(g) != 1 || g[0].(map[string]any)["key"] != "" {
		t.Errorf("by key: %v (the fixture's order has no key)", g)
	}

	for _, args := range [][]string{{"usage"}, {"usage", "--account", f.accountID, "--installation", f.installationID},
		{"usage", "--account"}} {
		if code, _, errOut := runCLI(t, append([]string{"admin"}, args...)...); code != 2 || strings.Contains(errOut, "a command is required") {
			t.Errorf("admin %v: exit %d, stderr %q; want 2 naming what the command lacks", args, code, errOut)
		}
	}
	// A value the command refuses is a usage mistake naming its flag (exit 2); a record that does
	// not exist is an error (exit 1).
	for args, want := range map[string]struct {
		code int
		text string
	}{
		"--installation " + f.installationID + " --group-by key":          {2, "--group-by: must be one of"},
		"--account " + f.accountID + " --from 2025-01-01 --to 2026-02-06": {2, "--to: is more than 400 days"},
		"--account " + f.accountID + " --from yesterday":                  {2, "--from: must be an RFC 3339 time"},
		"--account " + models.NewID():                                     {1, "not found"},
		"--installation " + models.NewID():                                {1, "not found"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"admin", "usage"}, strings.Fields(args)...)...)
		if code != want.code || stdout != "" || !strings.Contains(stderr, want.text) {
			t.Errorf("admin usage %s: exit %d, stdout %q, stderr %q; want %d and %q", args, code, stdout, stderr, want.code, want.text)
		}
	}
}
