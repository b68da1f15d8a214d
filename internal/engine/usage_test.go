package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/testdb"
)

// usageRefusal fails unless err refuses the parameter field.
func usageRefusal(t *testing.T, err error, field string) {
	t.Helper()
	var e *engine.Error
	if assert.True(t, errors.As(err, &e), "%v", err) {
		assert.Equal(t, engine.KindInvalid, e.Kind)
		assert.Equal(t, field, e.Field, e.Message)
	}
}

// The range: RFC 3339 times or dates, the current UTC month by default, from before to, at most
// 400 days apart; group_by one of the scope's groupings.
func TestUsageRange(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	now := time.Date(2026, 2, 14, 15, 4, 5, 0, time.FixedZone("x", 3600))
	e := engine.New(engine.Config{Store: models.NewStore(db), Log: zap.NewNop(), Now: func() time.Time { return now }})
	acc, err := models.CreateAccount(db, "acme", 10)
	require.NoError(t, err)
	ctx := context.Background()
	scope := engine.UsageScope{AccountID: acc.ID}

	r, err := e.Usage.Report(ctx, scope, engine.UsageQuery{})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), r.From)
	assert.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), r.To)
	assert.Equal(t, engine.UsageByDay, r.GroupBy)
	assert.NotNil(t, r.Groups)
	assert.Empty(t, r.Groups)

	r, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2025-01-01", To: "2026-02-05T00:00:00+02:00", GroupBy: engine.UsageByJobType})
	require.NoError(t, err)
	assert.Equal(t, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), r.From)
	assert.Equal(t, time.Date(2026, 2, 4, 22, 0, 0, 0, time.UTC), r.To)

	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2025-01-01", To: "2026-02-05"}) // exactly 400 days
	require.NoError(t, err)
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2025-01-01", To: "2026-02-06"}) // 401
	usageRefusal(t, err, "to")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2025-01-01T00:00:00Z", To: "2026-02-05T00:00:00.000001Z"})
	usageRefusal(t, err, "to")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2026-01-02", To: "2026-01-02"})
	usageRefusal(t, err, "to")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2026-01-03", To: "2026-01-02"})
	usageRefusal(t, err, "to")
	// A refusal names what the client sent: with to left to its default, from.
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2026-03-02"}) // after the default to
	usageRefusal(t, err, "from")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "2020-01-01"}) // 400 days before it
	usageRefusal(t, err, "from")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{To: "2026-01-01"}) // before the default from
	usageRefusal(t, err, "to")
	for _, bad := range []string{"yesterday", "2026-13-01", "2026-1-1", "2026-01-01T00:00:00", "1700000000", " 2026-01-01"} {
		_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: bad})
		usageRefusal(t, err, "from")
		_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{To: bad})
		usageRefusal(t, err, "to")
	}
	// An instant that UTC cannot write in RFC 3339 (the report answers its range in UTC).
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "9999-12-01", To: "9999-12-31T23:59:59-23:59"})
	usageRefusal(t, err, "to")
	_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "0000-01-01T00:00:00+00:01", To: "0000-02-01"})
	usageRefusal(t, err, "from")
	r, err = e.Usage.Report(ctx, scope, engine.UsageQuery{From: "9999-12-01", To: "9999-12-31T23:59:59Z"})
	require.NoError(t, err)
	assert.Equal(t, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), r.To)
	for _, bad := range []string{"week", "DAY", "provider"} {
		_, err = e.Usage.Report(ctx, scope, engine.UsageQuery{GroupBy: bad})
		usageRefusal(t, err, "group_by")
	}
	// By key: an account's usage only.
	_, err = e.Usage.Report(ctx, engine.UsageScope{AccountID: acc.ID, InstallationID: "i"}, engine.UsageQuery{GroupBy: engine.UsageByKey})
	usageRefusal(t, err, "group_by")
	_, err = e.Usage.Report(ctx, engine.UsageScope{AccountID: acc.ID, ByKey: true}, engine.UsageQuery{GroupBy: engine.UsageByKey})
	require.NoError(t, err)

	// Support's: an unknown installation or account is not found.
	for _, ids := range [][2]string{{"nope", ""}, {"", "nope"}} {
		_, err = e.Support.UsageOf(ctx, ids[0], ids[1], engine.UsageQuery{})
		var ee *engine.Error
		require.True(t, errors.As(err, &ee), "%v", err)
		assert.Equal(t, engine.KindNotFound, ee.Kind)
	}
}

// An order records the key of the request that created it, and the account's usage by key counts
// it there; the groups add up to the totals.
func TestUsageByKeyOfSubmittedRequests(t *testing.T) {
	t.Parallel()
	f := newGenFixture(t, 100)
	ctx := context.Background()
	for _, k := range []string{"key-a", "key-b", "key-b"} {
		r := f.requester()
		r.APIKeyID = k
		p, err := f.engine.Generation.PlanIdeas(ctx, r, engine.IdeasInput{JobType: jobtype.SceneryIdea,
			Kind: engine.Sceneries, Preferences: "dunes", Count: 2})
		require.NoError(t, err)
		_, err = f.engine.Generation.SubmitPlan(ctx, p)
		require.NoError(t, err)
	}
	r, err := f.engine.Support.UsageOf(ctx, "", f.account, engine.UsageQuery{GroupBy: engine.UsageByKey})
	require.NoError(t, err)
	require.Len(t, r.Groups, 2)
	assert.Equal(t, "key-a", r.Groups[0].Key)
	assert.EqualValues(t, 4, r.Groups[0].CreditsReserved)
	assert.Equal(t, "key-b", r.Groups[1].Key)
	assert.EqualValues(t, 8, r.Groups[1].CreditsReserved)
	assert.EqualValues(t, 12, r.Totals.CreditsReserved)
	assert.Zero(t, r.Totals.CreditsConsumed+r.Totals.JobsCompleted+r.Totals.JobsFailed+r.Totals.JobsCancelled)

	other := f.newAccount(100)
	r, err = f.engine.Support.UsageOf(ctx, "", other, engine.UsageQuery{GroupBy: engine.UsageByKey})
	require.NoError(t, err)
	assert.Empty(t, r.Groups, "another account's usage holds none of these")
}
