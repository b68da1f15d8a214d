package engine_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
)

// Both APIs read the webhook lists' queries with these: what they take, and a refusal naming the
// parameter for what they do not.
func TestWebhookListQueries(t *testing.T) {
	f, err := engine.DeliveryListQuery(url.Values{"endpoint_id": {"e"}, "status": {"held"}, "limit": {"7"}, "cursor": {"c"},
		"created_after": {"2026-11-01T00:00:00Z"}})
	require.NoError(t, err)
	after := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, engine.DeliveryFilter{EndpointID: "e", Status: "held", Limit: 7, Cursor: "c", CreatedAfter: &after}, f)
	ev, err := engine.EventListQuery(url.Values{"type": {"job.started"}})
	require.NoError(t, err)
	assert.Equal(t, engine.EventFilter{Type: "job.started"}, ev)
	limit, cursor, err := engine.EndpointListQuery(url.Values{})
	require.NoError(t, err)
	assert.Zero(t, limit, "the default")
	assert.Empty(t, cursor)

	for name, q := range map[string]url.Values{
		"limit":          {"limit": {"0"}},
		"cursor":         {"cursor": {""}},
		"status":         {"status": {"held", "failed"}},
		"created_before": {"created_before": {"yesterday"}},
		"event":          {"event": {""}},
	} {
		_, err := engine.DeliveryListQuery(q)
		e, ok := engine.As(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, engine.KindInvalid, e.Kind, name)
		assert.Equal(t, name, e.Field)
	}
	// The endpoint list has no filters: they are not read, so not refused either.
	_, _, err = engine.EndpointListQuery(url.Values{"status": {""}})
	assert.NoError(t, err)
}
