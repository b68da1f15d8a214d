package plugin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
)

// testKey issues a test key (pk_test_…) of the env's installation, with every plugin scope.
func (e *env) testKey() string {
	e.t.Helper()
	k, err := e.handler.Engine.Accounts.IssueTestPluginKey(context.Background(), e.box, e.inst.ID, "test", nil, nil)
	require.NoError(e.t, err)
	return k.APIKey
}

// test_outcome on a subject: a live key's session with it is 400 naming it, with nothing created;
// a test key's is checked strictly (unknown members, categories and bounds, naming the member)
// and otherwise accepted (here it reaches the packshot check: the test catalog is empty).
func TestCreateSessionTestOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withOutcome := func(outcome any) map[string]any {
		s := subject("p1")
		s["test_outcome"] = outcome
		return session(subject("p0"), s)
	}
	msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, withOutcome(map[string]any{"fail_with": "CONTENT_POLICY"})),
		http.StatusBadRequest, plugin.CodeInvalidInput)
	assert.Contains(t, msg, "subjects[1].test_outcome")
	assert.Contains(t, msg, "test key")
	e.noOrders()

	test := e.testKey()
	for _, c := range []struct {
		outcome any
		want    []string
	}{
		{map[string]any{"fail_with": "CONTENT_POLICY", "retries": 1}, []string{"retries"}},
		{map[string]any{"fail_with": "NOT_A_CATEGORY"}, []string{"subjects[1].test_outcome.fail_with", "NOT_A_CATEGORY", "PROVIDER_CAPACITY"}},
		{map[string]any{"fail_with": ""}, []string{"subjects[1].test_outcome.fail_with"}},
		{map[string]any{"retryable_failures": 11}, []string{"subjects[1].test_outcome.retryable_failures", "between 0 and 10"}},
		{map[string]any{"retryable_failures": -1}, []string{"subjects[1].test_outcome.retryable_failures"}},
		{map[string]any{"retryable_failures": 1.5}, []string{"retryable_failures"}},
		{map[string]any{"delay_ms": 120001}, []string{"subjects[1].test_outcome.delay_ms", "120000"}},
		{map[string]any{"delay_ms": "5"}, []string{"delay_ms"}},
		{"CONTENT_POLICY", []string{"test_outcome"}},
	} {
		msg := e.requireError(e.do(http.MethodPost, p("/jobs"), test, withOutcome(c.outcome)), http.StatusBadRequest, plugin.CodeInvalidInput)
		for _, w := range c.want {
			assert.Contains(t, msg, w, "%v", c.outcome)
		}
	}
	for _, outcome := range []any{map[string]any{}, map[string]any{"fail_with": "PROVIDER_CAPACITY", "retryable_failures": 10, "delay_ms": 120000}} {
		e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), test, withOutcome(outcome)), http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	}
	e.noOrders()
}
