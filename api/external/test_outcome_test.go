package external_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// test_outcome at the top level of every generation request: a live key's request with it is 400
// naming it, with nothing created, whatever the route; a test key's is checked strictly (naming
// the member) and kept on the jobs of an accepted one.
func TestGenerationTestOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testdb.Open(t, testdb.SQLiteURL(t)), 0)
	outcome := map[string]any{"fail_with": "CONTENT_POLICY"}
	photo := models.NewID()
	for path, body := range map[string]map[string]any{
		"/models/register-ideas":         {"preferences": "x", "test_outcome": outcome},
		"/sceneries/register-ideas":      {"preferences": "x", "test_outcome": outcome},
		"/packshots/register-ideas":      {"config": map[string]any{"product": map[string]any{"id": photo}}, "test_outcome": outcome},
		"/image-picker/register-ideas":   {"config": map[string]any{"product": map[string]any{"id": photo}}, "test_outcome": outcome},
		"/video-picker/register-videos":  {"imageId": photo, "test_outcome": outcome},
		"/reel/register-reel":            {"imagesIds": []string{photo}, "test_outcome": outcome},
		"/models/register-ideas?empty=1": {"preferences": "x", "test_outcome": map[string]any{}},
	} {
		code, out := e.post(e.key, strings.TrimSuffix(path, "?empty=1"), body)
		if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.HasPrefix(msg, "test_outcome: ") || !strings.Contains(msg, "test key") {
			t.Errorf("%s with a live key: %d %q", path, code, msg)
		}
	}
	e.nothingCreated(e.account, 100)

	k, err := e.handler.Engine.Accounts.IssueTestAccountKey(context.Background(), engine.AccountKeyRequest{
		AccountID: e.account, Name: "test", Scopes: []string{external.ScopeRegister, external.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		outcome any
		want    string
	}{
		{map[string]any{"fail_with": "CONTENT_POLICY", "retries": 1}, "retries"},
		{map[string]any{"fail_with": "NOT_ONE"}, "test_outcome.fail_with: "},
		{map[string]any{"retryable_failures": 11}, "test_outcome.retryable_failures: "},
		{map[string]any{"delay_ms": -1}, "test_outcome.delay_ms: "},
		{map[string]any{"delay_ms": 0.5}, "delay_ms"},
		{[]any{}, "test_outcome"},
	} {
		code, out := e.post(k.APIKey, "/sceneries/register-ideas", map[string]any{"preferences": "x", "test_outcome": tc.outcome})
		if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%v with a test key: %d %q, want 400 naming %s", tc.outcome, code, msg, tc.want)
		}
	}
	e.nothingCreated(k.AccountID, models.TestDailyCredits)

	o, jobs, _ := e.accepted(2)(e.post(k.APIKey, "/sceneries/register-ideas", map[string]any{"preferences": "x", "count": 2,
		"test_outcome": map[string]any{"fail_with": "PROVIDER_CAPACITY", "retryable_failures": 1, "delay_ms": 10}}))
	if !o.TestMode || o.AccountID != k.AccountID {
		t.Fatalf("order %+v", o)
	}
	for _, j := range jobs {
		if !j.TestMode || j.TestOutcome == nil || *j.TestOutcome != `{"fail_with":"PROVIDER_CAPACITY","retryable_failures":1,"delay_ms":10}` {
			t.Fatalf("job's test_outcome %v", j.TestOutcome)
		}
	}
}
