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
		acc, _, instTwin, accTwin := liveAndTwins(t, db)

		for id, want := range map[string]bool{acc.ID: false, instTwin.AccountID: true, accTwin.ID: true} {
			got, err := s.AccountTestMode(ctx, id)
			require.NoError(t, err)
			require.Equal(t, want, got, "account %s", id)
		}
		_, err := s.AccountTestMode(ctx, models.NewID())
		require.True(t, errors.Is(err, models.ErrNotFound), "an unknown account: %v", err)
	})
}

// A delivery carries its scope's mode (test_mode), from which its workflow's ShotflowLivemode is
// set: RecordEvents marks the deliveries of an installation's test twin and of an account's
// external twin, not a live installation's or account's; an event recorded again answers its owed
// deliveries read back, marked the same.
func TestRecordedDeliveriesCarryTheirScopesMode(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		s := models.NewStore(db)
		acc, live, instTwin, accTwin := liveAndTwins(t, db)

		scopes := []struct {
			name           string
			accountID      string
			installationID *string
			test           bool
		}{
			{"live installation", acc.ID, &live.ID, false},
			{"installation's twin", instTwin.AccountID, &instTwin.ID, true},
			{"live account", acc.ID, nil, false},
			{"account's twin", accTwin.ID, nil, true},
		}
		for _, sc := range scopes {
			ep := &models.WebhookEndpoint{AccountID: sc.accountID, InstallationID: sc.installationID,
				URL: "https://hooks.example/" + models.NewID(), Events: models.StringList{"webhook.test"}}
			require.NoError(t, s.CreateWebhookEndpoint(ctx, ep))
			ev := &models.WebhookEvent{ID: models.NewID(), AccountID: sc.accountID, InstallationID: sc.installationID,
				Type: "webhook.test", Payload: models.JSON(`{}`)}
			for _, again := range []bool{false, true} {
				owed, err := s.RecordEvent(ctx, ev, models.EventDeliveries{})
				require.NoError(t, err)
				require.Len(t, owed, 1, "%s (recorded again: %v)", sc.name, again)
				require.Equal(t, sc.test, owed[0].TestMode, "%s: the owed delivery's mode (recorded again: %v)", sc.name, again)
			}
			stored, err := models.GetWebhookDelivery(db, models.EventDeliveryID(ev.ID, ep.ID))
			require.NoError(t, err)
			require.Equal(t, sc.test, stored.TestMode, "%s: the stored delivery's mode", sc.name)
		}
	})
}

// A delivery set up with CreateWebhookDelivery (tests, tools) carries its account's mode as
// RecordEvents' do, whatever the row it was given said: a test twin's is stored test_mode, a live
// account's is not.
func TestCreatedDeliveryCarriesItsAccountsMode(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, live, instTwin, accTwin := liveAndTwins(t, db)

		for _, sc := range []struct {
			name           string
			accountID      string
			installationID *string
			given, test    bool
		}{
			{"installation's twin", instTwin.AccountID, &instTwin.ID, false, true},
			{"account's twin", accTwin.ID, nil, false, true},
			{"live installation", acc.ID, &live.ID, true, false},
			{"live account", acc.ID, nil, true, false},
		} {
			d := &models.WebhookDelivery{ID: models.NewID(), AccountID: sc.accountID, InstallationID: sc.installationID,
				Run: 1, Event: "webhook.test", CallbackURL: "https://hooks.example/x", TestMode: sc.given}
			created, err := models.CreateWebhookDelivery(db, d)
			require.NoError(t, err)
			require.True(t, created, sc.name)
			require.Equal(t, sc.test, d.TestMode, "%s: the row as created", sc.name)
			stored, err := models.GetWebhookDelivery(db, d.ID)
			require.NoError(t, err)
			require.Equal(t, sc.test, stored.TestMode, "%s: the stored delivery's mode", sc.name)
		}
	})
}

// liveAndTwins makes a live account with an installation, the installation's test twin and the
// account's: the four scopes whose modes the tests of this file tell apart.
func liveAndTwins(t *testing.T, db *gorm.DB) (acc *models.Account, live *models.Installation, instTwin *models.Installation, accTwin *models.Account) {
	t.Helper()
	s := models.NewStore(db)
	box, err := secrets.NewBox(make([]byte, 32))
	require.NoError(t, err)
	acc, err = models.CreateAccount(db, "Acme", 50)
	require.NoError(t, err)
	made, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "Shop"}, "whsec_x")
	require.NoError(t, err)
	instTwin, err = s.TestTwinOfInstallation(t.Context(), box, made.Installation.ID, "whsec_y")
	require.NoError(t, err)
	accTwin, err = s.TestTwinOfAccount(t.Context(), acc.ID)
	require.NoError(t, err)
	return acc, &made.Installation, instTwin, accTwin
}
