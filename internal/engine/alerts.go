package engine

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
)

// Alerts (docs/api-guide.md, "Alerts"): credits.low when the account's available balance first
// falls below the low_balance_threshold of the account (external API) or of an installation on it
// (plugin API), spend_limit.alert when a month's spend first reaches the alert percentage of a
// limit, and spend_limit.reached when a limit first refuses a request in a month. Each goes, as a
// webhook event, to the endpoints of its installation or account that subscribed to it. The
// reservation that crosses a threshold queues the alert in its own statement (models/alert_store.go);
// Flush turns queued alerts into events right after the order commits, and the outbox sweep
// turns any that a crash left.
type Alerts struct{ *core }

// MaxLowBalanceThreshold is the largest low_balance_threshold a client may set.
const MaxLowBalanceThreshold = 1_000_000_000

// AlertSettings are a tenant's alert settings: its credits.low threshold (nil: none).
type AlertSettings struct {
	LowBalanceThreshold *int64
}

// flushTimeout bounds the recording of alerts after a request's order committed or was refused.
const flushTimeout = 10 * time.Second

// flushBatch is how many queued alerts one transaction of flush takes.
const flushBatch = 100

// Settings returns scope's alert settings; KindNotFound when there is no such tenant.
func (e *Alerts) Settings(ctx context.Context, scope SpendScope) (AlertSettings, error) {
	t, err := e.store.LowBalanceThresholdOf(ctx, scope)
	if errors.Is(err, models.ErrNotFound) {
		return AlertSettings{}, refuse(KindNotFound, "", "", "No installation or account with this ID.")
	}
	return AlertSettings{LowBalanceThreshold: t}, err
}

// SetLowBalanceThreshold sets scope's credits.low threshold (1..MaxLowBalanceThreshold credits) or
// clears it (nil). A threshold above the balance now sends nothing until the balance has risen to
// it and falls below it again: credits.low tells a crossing.
func (e *Alerts) SetLowBalanceThreshold(ctx context.Context, scope SpendScope, threshold *int64) (AlertSettings, error) {
	if threshold != nil && (*threshold < 1 || *threshold > MaxLowBalanceThreshold) {
		return AlertSettings{}, refuse(KindInvalid, "", "low_balance_threshold", "must be null or an integer from 1 to %d.", MaxLowBalanceThreshold)
	}
	err := e.store.SetLowBalanceThreshold(ctx, scope, threshold)
	if errors.Is(err, models.ErrNotFound) {
		return AlertSettings{}, refuse(KindNotFound, "", "", "No installation or account with this ID.")
	}
	if err != nil {
		return AlertSettings{}, err
	}
	return AlertSettings{LowBalanceThreshold: threshold}, nil
}

// Flush records the events of the alerts queued for accountID and starts their deliveries. It
// runs after the order whose reservation queued them committed; a failure is logged, not
// returned (the order stands, and the outbox sweep records them later).
func (e *Alerts) Flush(ctx context.Context, accountID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if _, err := e.flush(ctx, accountID); err != nil {
		e.cfg.Log.Warn("alerts not recorded yet; the outbox sweep will record them",
			zap.String("account_id", accountID), zap.Error(err))
	}
}

// flush records the queued alerts of accountID (every account's when ""), a batch per
// transaction, starts their deliveries and returns how many it recorded.
func (e *Alerts) flush(ctx context.Context, accountID string) (int, error) {
	total := 0
	for {
		var owed []models.WebhookDelivery
		var recorded []webhooks.RecordedAlert
		n, err := e.store.TakePendingAlerts(ctx, accountID, flushBatch, func(tx *models.Store, alerts []models.PendingAlert) error {
			var err error
			owed, recorded, err = webhooks.RecordAlerts(ctx, tx, alerts)
			return err
		})
		if err != nil {
			return total, err
		}
		for _, r := range recorded {
			e.cfg.Metrics.AlertSent(r.Event, r.Test)
		}
		e.app.Outbox.StartOwedDeliveries(ctx, owed)
		total += n
		if n < flushBatch {
			return total, nil
		}
	}
}

// limitReached records spend_limit.reached for the limit that refused a request of need credits,
// when it is the limit's first refusal of the month that refused it (sl.Month(), the month the
// reservation would have counted in). A failure is logged: the request is refused either way, and
// the next refusal records it.
func (e *Alerts) limitReached(ctx context.Context, sl *models.SpendLimitError, need int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	scope := SpendScope{AccountID: sl.AccountID}
	var inst *string
	if sl.InstallationID != "" {
		scope = SpendScope{InstallationID: sl.InstallationID}
		inst = &sl.InstallationID
	}
	var owed []models.WebhookDelivery
	var recorded webhooks.RecordedAlert
	first, err := e.store.MarkSpendLimitReached(ctx, scope, sl.AccountID, sl.Month(), func(tx *models.Store) error {
		var err error
		owed, recorded, err = webhooks.RecordSpendLimitReached(ctx, tx, sl.AccountID, inst, webhooks.SpendAlert{
			Limit: sl.Limit, Percent: sl.AlertPercent, Used: sl.Used, ResetsAt: sl.ResetsAt, Requested: need,
		})
		return err
	})
	if err != nil {
		e.cfg.Log.Warn("spend_limit.reached not recorded", zap.String("account_id", sl.AccountID),
			zap.String("installation_id", sl.InstallationID), zap.Error(err))
		return
	}
	if first {
		e.cfg.Metrics.AlertSent(recorded.Event, recorded.Test)
		e.app.Outbox.StartOwedDeliveries(ctx, owed)
	}
}
