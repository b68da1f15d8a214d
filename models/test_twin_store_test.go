package models_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A live installation's test twin is an installation of its own on an account of its own with the
// day's test credits, made once; a live account's twin is an account. Test keys carry their own
// prefix, authenticate only with it, and belong to the twin.
func TestTestTwinsAndTheirKeys(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		box, err := secrets.NewBox(make([]byte, 32))
		require.NoError(t, err)
		acc, err := models.CreateAccount(db, "Acme", 50)
		require.NoError(t, err)
		live, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "Shop", RateLimitPerMin: 7}, "whsec_x")
		require.NoError(t, err)

		twin, err := s.TestTwinOfInstallation(ctx, box, live.Installation.ID, "whsec_y")
		require.NoError(t, err)
		require.True(t, twin.TestMode)
		require.NotEqual(t, live.Installation.ID, twin.ID)
		require.NotEqual(t, acc.ID, twin.AccountID)
		require.Equal(t, 7, twin.RateLimitPerMin)
		again, err := s.TestTwinOfInstallation(ctx, box, live.Installation.ID, "whsec_z")
		require.NoError(t, err)
		require.Equal(t, twin.ID, again.ID, "one twin per installation")
		twinAcc, err := models.GetAccount(db, twin.AccountID)
		require.NoError(t, err)
		require.True(t, twinAcc.TestMode)
		require.Equal(t, int64(models.TestDailyCredits), twinAcc.CreditBalance)
		require.Equal(t, models.TestDay(time.Now()), twinAcc.TestDay)
		assertLedgerMatches(t, db, twinAcc.ID)
		liveAcc := assertLedgerMatches(t, db, acc.ID)
		require.Equal(t, int64(50), liveAcc.CreditBalance, "the live balance is not touched")

		// A twin has no twin, and an unknown installation none.
		_, err = s.TestTwinOfInstallation(ctx, box, twin.ID, "whsec_y")
		require.ErrorIs(t, err, models.ErrNotFound)
		_, err = s.TestTwinOfInstallation(ctx, box, models.NewID(), "whsec_y")
		require.ErrorIs(t, err, models.ErrNotFound)

		accTwin, err := s.TestTwinOfAccount(ctx, acc.ID)
		require.NoError(t, err)
		require.True(t, accTwin.TestMode)
		require.NotEqual(t, twin.AccountID, accTwin.ID, "the external twin is not the installation twin's account")
		accAgain, err := s.TestTwinOfAccount(ctx, acc.ID)
		require.NoError(t, err)
		require.Equal(t, accTwin.ID, accAgain.ID)

		k, err := s.IssueTestKey(ctx, models.KeyKindPlugin, twin.AccountID, &twin.ID, "test", models.PluginScopes, nil)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(k.Secret, models.PluginTestKeyPrefix), k.Secret)
		key, inst, err := s.AuthenticateKeyWithInstallation(ctx, models.KeyKindPlugin, k.Secret, time.Now())
		require.NoError(t, err)
		require.True(t, key.TestMode)
		require.Equal(t, twin.ID, inst.ID)
		// The same key ID and secret under the live prefix is no key.
		_, err = s.AuthenticateKey(ctx, models.KeyKindPlugin, models.PluginKeyPrefix+strings.TrimPrefix(k.Secret, models.PluginTestKeyPrefix), time.Now())
		require.ErrorIs(t, err, models.ErrInvalidKey)
		// And a live key's under the test prefix neither.
		_, err = s.AuthenticateKey(ctx, models.KeyKindPlugin, models.PluginTestKeyPrefix+strings.TrimPrefix(live.APIKey.Secret, models.PluginKeyPrefix), time.Now())
		require.ErrorIs(t, err, models.ErrInvalidKey)

		ek, err := s.IssueTestKey(ctx, models.KeyKindExternal, accTwin.ID, nil, "test", models.ExternalScopes, nil)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(ek.Secret, models.ExternalTestKeyPrefix), ek.Secret)
		got, err := s.AuthenticateKey(ctx, models.KeyKindExternal, ek.Secret, time.Now())
		require.NoError(t, err)
		require.Equal(t, accTwin.ID, got.AccountID)
	})
}
