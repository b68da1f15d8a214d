package main

import (
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/models"
)

// spend-limit set, show and clear act on an installation's or an account's limit through the
// engine's use cases; bad flags are usage errors (exit 2) and the engine's refusals exit 1.
func TestAdminSpendLimit(t *testing.T) {
	f := newAdminFixture(t)
	var acc map[string]any
	adminJSON(t, &acc, "account", "create", "--name", "Acme", "--credits", "50")
	accountID := acc["account_id"].(string)
	var inst map[string]any
	adminJSON(t, &inst, "installation", "create", "--account", accountID, "--name", "Shop")
	instID := inst["installation_id"].(string)
	var out map[string]any
	resets := models.SpendResetsAt(time.Now()).Format(time.RFC3339)

	out = nil
	adminJSON(t, &out, "spend-limit", "show", "--installation", instID)
	want := map[string]any{"installation_id": instID, "monthly_credits": nil, "alert_at_percent": float64(80), "used": float64(0), "resets_at": resets}
	if !mapsEqual(out, want) {
		t.Errorf("show without a limit = %v, want %v", out, want)
	}
	out = nil
	adminJSON(t, &out, "spend-limit", "set", "--installation", instID, "--monthly-credits", "500", "--alert-at-percent", "90")
	want = map[string]any{"installation_id": instID, "monthly_credits": float64(500), "alert_at_percent": float64(90), "used": float64(0), "resets_at": resets}
	if !mapsEqual(out, want) {
		t.Errorf("set = %v, want %v", out, want)
	}
	out = nil
	adminJSON(t, &out, "spend-limit", "set", "--account", accountID, "--monthly-credits", "1000")
	want = map[string]any{"account_id": accountID, "monthly_credits": float64(1000), "alert_at_percent": float64(80), "used": float64(0), "resets_at": resets}
	if !mapsEqual(out, want) {
		t.Errorf("set on the account = %v, want %v", out, want)
	}
	db := f.db(t)
	var limits []*int64
	if err := db.Raw("SELECT spend_limit_monthly FROM installations WHERE id = ?", instID).Scan(&limits).Error; err != nil || len(limits) != 1 ||
		limits[0] == nil || *limits[0] != 500 {
		t.Fatalf("installation's stored limit = %v, %v; want 500", limits, err)
	}
	out = nil
	adminJSON(t, &out, "spend-limit", "clear", "--installation", instID)
	if out["monthly_credits"] != nil || out["installation_id"] != instID {
		t.Errorf("clear = %v, want monthly_credits null", out)
	}
	out = nil
	adminJSON(t, &out, "spend-limit", "show", "--account", accountID)
	if out["monthly_credits"] != float64(1000) {
		t.Errorf("the account's limit after clearing the installation's = %v, want 1000", out)
	}

	unknown := "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"show"}, 2, "exactly one of --installation and --account"},
		{[]string{"show", "--installation", instID, "--account", accountID}, 2, "exactly one of --installation and --account"},
		{[]string{"set", "--installation", instID}, 2, "--monthly-credits is required"},
		{[]string{"clear", "--installation", instID, "--monthly-credits", "5"}, 2, "for spend-limit set"},
		{[]string{"set", "--installation", instID, "--monthly-credits", "0"}, 2, "--monthly-credits"},
		{[]string{"set", "--installation", instID, "--monthly-credits", "5", "--alert-at-percent", "101"}, 2, "--alert-at-percent"},
		{[]string{"show", "--installation", unknown}, 1, "No installation or account"},
		{[]string{"set", "--account", unknown, "--monthly-credits", "5"}, 1, "No installation or account"},
	} {
		code, _, stderr := runCLI(t, append([]string{"admin", "spend-limit"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.contains) {
			t.Errorf("spend-limit %v: exit %d, stderr %q; want %d containing %q", tc.args, code, stderr, tc.code, tc.contains)
		}
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
