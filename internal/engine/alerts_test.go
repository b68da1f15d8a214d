package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// An alert a reservation queued and no API recorded (it died after its commit) is recorded by the
// outbox sweep: one credits.low event with its delivery to the subscribed endpoint, started, and
// the queue emptied; a second sweep records nothing more.
func TestTheSweepRecordsAlertsACrashLeftQueued(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	tc := &recordingTemporal{}
	e := newSupportEngine(db, tc)
	tn := newSupportTenant(t, db, 100)
	now := time.Now().UTC()
	require.NoError(t, db.Create(&models.WebhookEndpoint{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID,
		URL: "https://shop.example/alerts", Events: models.StringList{models.AlertCreditsLow}, Status: models.EndpointEnabled,
		CreatedAt: now, UpdatedAt: now}).Error)
	threshold, balance := int64(50), int64(45)
	require.NoError(t, db.Create(&models.PendingAlert{AccountID: tn.accountID, InstallationID: &tn.installationID,
		Event: models.AlertCreditsLow, Threshold: &threshold, Balance: &balance, Month: models.SpendMonth(now), CreatedAt: now}).Error)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); e.Outbox.Sweep(ctx, 20*time.Millisecond, time.Hour) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool {
		var n int64
		db.Model(&models.PendingAlert{}).Count(&n)
		return n == 0
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a few more sweeps
	var events []models.WebhookEvent
	require.NoError(t, db.Where("account_id = ? AND type = ?", tn.accountID, models.AlertCreditsLow).Find(&events).Error)
	require.Len(t, events, 1)
	var body struct {
		Credits json.RawMessage `json:"credits"`
	}
	require.NoError(t, json.Unmarshal(events[0].Payload, &body))
	assert.JSONEq(t, `{"available":45,"threshold":50}`, string(body.Credits))
	var deliveries []models.WebhookDelivery
	require.NoError(t, db.Where("event_id = ?", events[0].ID).Find(&deliveries).Error)
	require.Len(t, deliveries, 1, "one delivery: to the endpoint subscribed to credits.low, not the callback endpoint")
	require.Eventually(t, func() bool { return len(tc.startsOf(workflows.WebhookWorkflowID(deliveries[0].ID))) == 1 }, 5*time.Second, 20*time.Millisecond)
}

// The threshold is 1..1e9 or null, per tenant; another tenant's is untouched.
func TestLowBalanceThresholdSettings(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	e := newSupportEngine(db, &recordingTemporal{})
	tn := newSupportTenant(t, db, 100)
	other := newSupportTenant(t, db, 100)
	scope := engine.SpendScope{InstallationID: tn.installationID}
	for _, bad := range []int64{0, -1, engine.MaxLowBalanceThreshold + 1} {
		_, err := e.Alerts.SetLowBalanceThreshold(t.Context(), scope, &bad)
		var refusal *engine.Error
		require.ErrorAs(t, err, &refusal)
		assert.Equal(t, engine.KindInvalid, refusal.Kind)
		assert.Equal(t, "low_balance_threshold", refusal.Field)
	}
	v := int64(30)
	_, err := e.Alerts.SetLowBalanceThreshold(t.Context(), scope, &v)
	require.NoError(t, err)
	s, err := e.Alerts.Settings(t.Context(), scope)
	require.NoError(t, err)
	assert.Equal(t, &v, s.LowBalanceThreshold)
	s, err = e.Alerts.Settings(t.Context(), engine.SpendScope{InstallationID: other.installationID})
	require.NoError(t, err)
	assert.Nil(t, s.LowBalanceThreshold)
	var acc models.Account
	require.NoError(t, db.Take(&acc, "id = ?", tn.accountID).Error)
	assert.Equal(t, &v, acc.LowBalanceWatch, "the account watches its installation's threshold")
	_, err = e.Alerts.SetLowBalanceThreshold(t.Context(), scope, nil)
	require.NoError(t, err)
	require.NoError(t, db.Take(&acc, "id = ?", tn.accountID).Error)
	assert.Nil(t, acc.LowBalanceWatch)
	_, err = e.Alerts.Settings(t.Context(), engine.SpendScope{InstallationID: models.NewID()})
	var refusal *engine.Error
	require.ErrorAs(t, err, &refusal)
	assert.Equal(t, engine.KindNotFound, refusal.Kind)
}
