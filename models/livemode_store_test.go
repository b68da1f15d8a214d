package models_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// The mode of a scope is its account's: a live account is not in test mode; the account of an
// installation's test twin and an account's external twin are.
func TestAccountTestMode(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		box, err := secrets.NewBox(make([]byte, 32))
		require.NoError(t, err)
		acc, err := models.CreateAccount(db, "Acme", 50)
		require.NoError(t, err)
		live, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "Shop"}, "whsec_x")
		require.NoError(t, err)
		instTwin, err := s.TestTwinOfInstallation(ctx, box, live.Installation.ID, "whsec_y")
		require.NoError(t, err)
		accTwin, err := s.TestTwinOfAccount(ctx, acc.ID)
		require.NoError(t, err)

		for id, want := range map[string]bool{acc.ID: false, instTwin.AccountID: true, accTwin.ID: true} {
			got, err := s.AccountTestMode(ctx, id)
			require.NoError(t, err)
			require.Equal(t, want, got, "account %s", id)
		}
		_, err = s.AccountTestMode(ctx, models.NewID())
		require.True(t, errors.Is(err, models.ErrNotFound), "an unknown account: %v", err)
	})
}
