package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]engine.Mode{"": engine.ModeAll, "all": engine.ModeAll, "live": engine.ModeLive, "test": engine.ModeTest} {
		got, err := engine.ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Live", "sandbox", "true", " live"} {
		if _, err := engine.ParseMode(bad); !errors.Is(err, engine.ErrInvalidFilter) {
			t.Errorf("ParseMode(%q) = %v, want ErrInvalidFilter", bad, err)
		}
	}
}

// Test keys of `shotflow admin`: a plugin one of an installation's twin and an external one of an
// account's twin, with the scopes and expiry asked for; the account's key list shows its twin's
// keys as test ones, by mode; a revoked test key no longer authenticates.
func TestOperatorTestKeys(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		accounts := w.eng.Accounts

		expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		plugin, err := accounts.IssueTestPluginKey(ctx, w.box, w.inst.InstallationID, "ci", []string{"content.read"}, &expires)
		require.NoError(t, err)
		assert.Regexp(t, `^pk_test_[0-9a-f]{16}\.`, plugin.APIKey)
		assert.NotEqual(t, w.inst.InstallationID, plugin.InstallationID, "the twin's installation")
		assert.False(t, plugin.Livemode)
		caller, err := accounts.AuthenticatePluginKey(ctx, plugin.APIKey, time.Now())
		require.NoError(t, err)
		assert.True(t, caller.Key.Test)
		assert.Equal(t, []string{"content.read"}, caller.Key.Scopes)
		_, err = accounts.AuthenticatePluginKey(ctx, plugin.APIKey, expires)
		assert.Error(t, err, "expired")

		live, err := accounts.IssueAccountKey(ctx, engine.AccountKeyRequest{AccountID: w.account.AccountID, Name: "live", Scopes: models.ExternalScopes})
		require.NoError(t, err)
		external, err := accounts.IssueTestAccountKey(ctx, engine.AccountKeyRequest{AccountID: w.account.AccountID, Name: "test",
			Scopes: []string{"content.read"}})
		require.NoError(t, err)
		assert.Regexp(t, `^mk_test_[0-9a-f]{16}\.`, external.APIKey)
		key, err := accounts.AuthenticateAccountKey(ctx, external.APIKey, time.Now())
		require.NoError(t, err)
		assert.True(t, key.Test)

		ids := func(mode engine.Mode) (engine.AccountKeys, []string) {
			l, err := accounts.ListAccountKeys(ctx, w.account.AccountID, mode)
			require.NoError(t, err)
			out := []string{}
			for _, k := range l.Keys {
				out = append(out, k.KeyID)
				assert.Equal(t, k.KeyID != external.KeyID, k.Livemode, k.KeyID)
			}
			return l, out
		}
		all, got := ids(engine.ModeAll)
		assert.Equal(t, []string{external.KeyID, live.KeyID}, got, "newest first, both worlds")
		assert.Equal(t, external.AccountID, all.TestAccountID)
		_, got = ids("")
		assert.Equal(t, []string{external.KeyID, live.KeyID}, got, "the default is all")
		liveOnly, got := ids(engine.ModeLive)
		assert.Equal(t, []string{live.KeyID}, got)
		assert.Empty(t, liveOnly.TestAccountID)
		_, got = ids(engine.ModeTest)
		assert.Equal(t, []string{external.KeyID}, got)
		_, err = accounts.ListAccountKeys(ctx, w.account.AccountID, "sandbox")
		wantKind(t, err, engine.KindInvalid, "unknown mode")
		// An account without a twin lists its live keys alone in every mode.
		none, err := accounts.ListAccountKeys(ctx, w.other.AccountID, engine.ModeTest)
		require.NoError(t, err)
		assert.Empty(t, none.Keys)
		assert.Empty(t, none.TestAccountID)

		// Revocation works on test keys as on live ones: by ID (in any case, as support may paste
		// it) and by the full key.
		_, err = accounts.RevokeKey(ctx, " "+strings.ToUpper(external.KeyID))
		require.NoError(t, err)
		_, err = accounts.AuthenticateAccountKey(ctx, external.APIKey, time.Now())
		assert.Error(t, err, "a revoked test key")
		_, err = accounts.RevokeKey(ctx, plugin.APIKey)
		require.NoError(t, err)
		_, err = accounts.AuthenticatePluginKey(ctx, plugin.APIKey, time.Now())
		assert.Error(t, err, "a revoked plugin test key")

		// Test keys are made for live tenants alone.
		_, err = accounts.IssueTestAccountKey(ctx, engine.AccountKeyRequest{AccountID: external.AccountID, Name: "x", Scopes: models.ExternalScopes})
		wantKind(t, err, engine.KindNotFound, "a twin's twin")
		_, err = accounts.IssueTestPluginKey(ctx, w.box, plugin.InstallationID, "x", nil, nil)
		wantKind(t, err, engine.KindNotFound, "an installation twin's twin")
	})
}

// The support webhook lists of a live installation or account show its test twin's endpoints and
// deliveries beside its own as the mode says, each saying its world; the delivery log of both
// worlds pages through their union newest first.
func TestSupportWebhookListsByMode(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWebhookScopes(t, db, false)
		liveEP, err := w.eng.Webhooks.CreateEndpoint(ctx, w.inst, engine.EndpointInput{URL: str("https://93.184.216.34/live")})
		require.NoError(t, err)

		// Before a twin exists, test mode shows nothing.
		l, err := w.eng.Support.ListWebhookEndpoints(ctx, w.inst.InstallationID, "", engine.ModeTest)
		require.NoError(t, err)
		assert.Empty(t, l.Endpoints)
		assert.Nil(t, l.TestScope)

		key, err := w.eng.Accounts.IssueTestPluginKey(ctx, w.box, w.inst.InstallationID, "t", nil, nil)
		require.NoError(t, err)
		twin := engine.WebhookScope{AccountID: key.AccountID, InstallationID: key.InstallationID}
		testEP, err := w.eng.Webhooks.CreateEndpoint(ctx, twin, engine.EndpointInput{URL: str("https://93.184.216.34/test")})
		require.NoError(t, err)

		endpoints := func(installationID string, mode engine.Mode) (engine.SupportEndpointList, map[string]bool) {
			l, err := w.eng.Support.ListWebhookEndpoints(ctx, installationID, "", mode)
			require.NoError(t, err)
			out := map[string]bool{}
			for _, ep := range l.Endpoints {
				out[ep.ID] = ep.Livemode
			}
			return l, out
		}
		all, got := endpoints(w.inst.InstallationID, "")
		assert.Equal(t, map[string]bool{liveEP.ID: true, testEP.ID: false}, got)
		require.NotNil(t, all.TestScope)
		require.NotNil(t, all.TestScope.InstallationID)
		assert.Equal(t, twin.InstallationID, *all.TestScope.InstallationID)
		assert.Equal(t, twin.AccountID, all.TestScope.AccountID)
		liveOnly, got := endpoints(w.inst.InstallationID, engine.ModeLive)
		assert.Equal(t, map[string]bool{liveEP.ID: true}, got)
		assert.Nil(t, liveOnly.TestScope)
		_, got = endpoints(w.inst.InstallationID, engine.ModeTest)
		assert.Equal(t, map[string]bool{testEP.ID: false}, got)
		// The twin named by its own ID is test mode alone.
		_, got = endpoints(twin.InstallationID, engine.ModeAll)
		assert.Equal(t, map[string]bool{testEP.ID: false}, got)
		_, got = endpoints(twin.InstallationID, engine.ModeLive)
		assert.Empty(t, got)
		_, err = w.eng.Support.ListWebhookEndpoints(ctx, w.inst.InstallationID, "", "sandbox")
		e := wantKind(t, err, engine.KindInvalid, "unknown mode")
		assert.Equal(t, "mode", e.Field)

		// Deliveries alternate between the worlds, a minute apart, oldest first.
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		var newestFirst []string
		livemode := map[string]bool{}
		for i := range 5 {
			scope, ep := w.inst, liveEP.ID
			if i%2 == 1 {
				scope, ep = twin, testEP.ID
			}
			_, d := sentEvent(t, db, scope, ep, "job.failed", models.WebhookFailed, base.Add(time.Duration(i)*time.Minute), false)
			newestFirst = append([]string{d.ID}, newestFirst...)
			livemode[d.ID] = i%2 == 0
		}
		page := func(f engine.SupportDeliveryFilter) (engine.SupportDeliveryList, []string) {
			l, err := w.eng.Support.ListWebhookDeliveries(ctx, f)
			require.NoError(t, err)
			out := []string{}
			for _, d := range l.Deliveries {
				out = append(out, d.ID)
				assert.Equal(t, livemode[d.ID], d.Livemode, d.ID)
			}
			return l, out
		}
		_, got2 := page(engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID})
		assert.Equal(t, newestFirst, got2)
		var walked []string
		cursor := ""
		for range 5 {
			l, ids := page(engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Limit: 2, Cursor: cursor})
			walked = append(walked, ids...)
			if l.NextCursor == nil {
				break
			}
			cursor = *l.NextCursor
		}
		assert.Equal(t, newestFirst, walked, "pages of both worlds")
		_, got2 = page(engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Mode: engine.ModeLive})
		assert.Equal(t, []string{newestFirst[0], newestFirst[2], newestFirst[4]}, got2)
		_, got2 = page(engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Mode: engine.ModeTest})
		assert.Equal(t, []string{newestFirst[1], newestFirst[3]}, got2)
		// An endpoint of the twin is one of the live installation's worlds; the mode may exclude it.
		_, got2 = page(engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, EndpointID: testEP.ID})
		assert.Equal(t, []string{newestFirst[1], newestFirst[3]}, got2)
		_, got2 = page(engine.SupportDeliveryFilter{EndpointID: testEP.ID, Mode: engine.ModeLive})
		assert.Empty(t, got2)
		_, err = w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.sibling.InstallationID, EndpointID: testEP.ID})
		wantKind(t, err, engine.KindInvalid, "another installation's twin's endpoint")
		_, err = w.eng.Support.ListWebhookDeliveries(ctx, engine.SupportDeliveryFilter{InstallationID: w.inst.InstallationID, Mode: engine.ModeTest, Status: "nope"})
		e = wantKind(t, err, engine.KindInvalid, "bad status")
		assert.Equal(t, "status", e.Field)
	})
}

// The workflow of every order carries ShotflowLivemode (false for a test key's), and so does that
// of a job's re-run; the order's input carries it to its jobs' workflows.
func TestWorkflowStartsCarryLivemode(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		tc := &recordingTemporal{}
		s := newSupportEngine(db, tc)
		live, test := newSupportTenant(t, db, 10), newSupportTenant(t, db, 10)
		// A test twin's account, as test keys have (its quota counts the test orders).
		require.NoError(t, db.Model(&models.Account{}).Where("id = ?", test.accountID).Update("test_mode", true).Error)
		submit := func(tn supportTenant, testMode bool) (models.Order, []models.Job) {
			order := models.Order{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID, API: models.APIPlugin,
				JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), TestMode: testMode}
			jobs := []models.Job{{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID, JobType: jobtype.PhotoShoot,
				ProductRef: "p", AIModel: "sim/content-policy", AspectRatio: "1:1", CreditCost: 1, Status: status.JobPending,
				Voting: models.VotingPending, TestMode: testMode}}
			require.NoError(t, s.Orders.Submit(ctx, &order, jobs))
			s.Outbox.FlushStartMarks()
			return order, jobs
		}
		liveOrder, _ := submit(live, false)
		testOrder, testJobs := submit(test, true)
		for id, want := range map[string]bool{liveOrder.ID: true, testOrder.ID: false} {
			starts := tc.startsOf(workflows.OrderWorkflowID(id))
			require.Len(t, starts, 1)
			got, ok := starts[0].opts.TypedSearchAttributes.GetBool(workflows.SALivemode)
			assert.True(t, ok, "order %s has ShotflowLivemode", id)
			assert.Equal(t, want, got, "ShotflowLivemode of order %s", id)
			in := starts[0].args[0].(workflows.OrderInput)
			assert.Equal(t, !want, in.TestMode, "the order's input carries its mode to its jobs")
		}

		// A re-run of the test job starts its own workflow, test mode too.
		failRun(t, db, testJobs[0].ID, 1, errorcat.ContentPolicy)
		_, err := s.Support.RetryJob(ctx, engine.RetryRequest{JobID: testJobs[0].ID, Actor: "ops"})
		require.NoError(t, err)
		starts := tc.startsOf(workflows.JobWorkflowID(testJobs[0].ID, 2))
		require.Len(t, starts, 1)
		got, ok := starts[0].opts.TypedSearchAttributes.GetBool(workflows.SALivemode)
		assert.True(t, ok)
		assert.False(t, got, "a test job's re-run is test mode")
	})
}
