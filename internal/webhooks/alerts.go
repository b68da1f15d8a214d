package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/shotflow/shotflow/models"
)

// Alert events (docs/webhooks.md, "Alerts"): sent to the endpoints of the installation (plugin
// API) or the account (external API) whose threshold or limit it is, that subscribed to them.
const (
	// EventCreditsLow: the account's available balance first fell below the threshold set with
	// PUT /alerts.
	EventCreditsLow = models.AlertCreditsLow
	// EventSpendLimitAlert: the month's spend first reached the alert percentage of the monthly
	// spend limit.
	EventSpendLimitAlert = models.AlertSpendLimit
	// EventSpendLimitReached: the monthly spend limit first refused a request this month.
	EventSpendLimitReached = models.AlertSpendLimitReached
)

// AlertEvents are the alert event types, of both APIs.
var AlertEvents = []string{EventCreditsLow, EventSpendLimitAlert, EventSpendLimitReached}

// Credits is the balance in a credits.low body: the available balance after the reservation that
// crossed the threshold, and the threshold.
type Credits struct {
	Available int64 `json:"available"`
	Threshold int64 `json:"threshold"`
}

// PluginSpendLimit is the limit in a plugin API's spend_limit.* body, as GET /spend-limit shows it.
type PluginSpendLimit struct {
	MonthlyCredits int64     `json:"monthly_credits"`
	AlertAtPercent int       `json:"alert_at_percent"`
	Used           int64     `json:"used"`
	ResetsAt       time.Time `json:"resets_at"`
}

// ExternalSpendLimit is the limit in an external API's spend_limit.* body, as its GET
// /spend-limit shows it.
type ExternalSpendLimit struct {
	MonthlyCredits int64     `json:"monthlyCredits"`
	AlertAtPercent int       `json:"alertAtPercent"`
	Used           int64     `json:"used"`
	ResetsAt       time.Time `json:"resetsAt"`
}

// SpendAlert is what a spend_limit.alert or spend_limit.reached body tells: the limit, its alert
// percentage, the month's spend and when it resets, and, for spend_limit.reached, the credits
// the refused request needed.
type SpendAlert struct {
	Limit     int64
	Percent   int
	Used      int64
	ResetsAt  time.Time
	Requested int64
}

// buildAlertPayload renders the body of an alert event for an installation's endpoints (plugin) or
// an account's own (external). credits is set for credits.low, spend for the spend_limit events.
func buildAlertPayload(event, id string, at time.Time, plugin, live, test bool, credits *Credits, spend *SpendAlert) ([]byte, error) {
	h := header{event, id, at.UTC()}
	mode := livemode{live}
	switch event {
	case EventCreditsLow:
		return encode(struct {
			header
			Test    bool    `json:"test,omitempty"`
			Credits Credits `json:"credits"`
			livemode
		}{h, test, *credits, mode})
	case EventSpendLimitAlert, EventSpendLimitReached:
		var requested *int64 // spend_limit.reached's alone
		if event == EventSpendLimitReached {
			requested = &spend.Requested
		}
		resets := spend.ResetsAt.UTC()
		if plugin {
			return encode(struct {
				header
				Test       bool             `json:"test,omitempty"`
				SpendLimit PluginSpendLimit `json:"spend_limit"`
				Requested  *int64           `json:"credits_requested,omitempty"`
				livemode
			}{h, test, PluginSpendLimit{spend.Limit, spend.Percent, spend.Used, resets}, requested, mode})
		}
		return encode(struct {
			header
			Test       bool               `json:"test,omitempty"`
			SpendLimit ExternalSpendLimit `json:"spendLimit"`
			Requested  *int64             `json:"creditsRequested,omitempty"`
			livemode
		}{h, test, ExternalSpendLimit{spend.Limit, spend.Percent, spend.Used, resets}, requested, mode})
	}
	return nil, fmt.Errorf("webhooks: %q is not an alert event", event)
}

// monthResetsAt is when the spend of month (YYYY-MM) starts again from zero: the next month's start.
func monthResetsAt(month string) time.Time {
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return time.Time{}
	}
	return models.SpendResetsAt(t)
}

// RecordAlerts records the events of alerts that reservations queued, in st (the transaction that
// takes them), each with a delivery per subscribed endpoint of its scope, and returns the
// deliveries owed a start and the events recorded (their types) with their mode.
func RecordAlerts(ctx context.Context, st *models.Store, alerts []models.PendingAlert) ([]models.WebhookDelivery, []RecordedAlert, error) {
	var owed []models.WebhookDelivery
	var recorded []RecordedAlert
	modes := map[string]bool{}
	for _, a := range alerts {
		test, ok := modes[a.AccountID]
		if !ok {
			var err error
			if test, err = st.AccountTestMode(ctx, a.AccountID); err != nil {
				return nil, nil, fmt.Errorf("mode of account %s: %w", a.AccountID, err)
			}
			modes[a.AccountID] = test
		}
		id := models.NewID()
		at := now()
		var credits *Credits
		var spend *SpendAlert
		switch a.Event {
		case EventCreditsLow:
			credits = &Credits{Available: deref(a.Balance), Threshold: deref(a.Threshold)}
		case EventSpendLimitAlert:
			pct := 0
			if a.AlertPercent != nil {
				pct = *a.AlertPercent
			}
			spend = &SpendAlert{Limit: deref(a.SpendLimit), Percent: pct, Used: deref(a.SpendUsed), ResetsAt: monthResetsAt(a.Month)}
		default:
			return nil, nil, fmt.Errorf("webhooks: pending alert %d has event %q", a.ID, a.Event)
		}
		payload, err := buildAlertPayload(a.Event, id, at, a.InstallationID != nil, !test, false, credits, spend)
		if err != nil {
			return nil, nil, err
		}
		d, err := st.RecordEvent(ctx, &models.WebhookEvent{ID: id, AccountID: a.AccountID, InstallationID: a.InstallationID,
			Type: a.Event, Payload: models.JSON(payload), CreatedAt: at}, models.EventDeliveries{})
		if err != nil {
			return nil, nil, err
		}
		owed = append(owed, d...)
		recorded = append(recorded, RecordedAlert{Event: a.Event, Test: test})
	}
	return owed, recorded, nil
}

// RecordedAlert is an alert event RecordAlerts or RecordSpendLimitReached recorded.
type RecordedAlert struct {
	Event string
	Test  bool // of a test twin
}

// RecordSpendLimitReached records spend_limit.reached for the limit of an installation (plugin
// API; installationID not nil) or of an account (its own, external API) that refused a request
// of spend.Requested credits.
func RecordSpendLimitReached(ctx context.Context, st *models.Store, accountID string, installationID *string, spend SpendAlert) ([]models.WebhookDelivery, RecordedAlert, error) {
	test, err := st.AccountTestMode(ctx, accountID)
	if err != nil {
		return nil, RecordedAlert{}, fmt.Errorf("mode of account %s: %w", accountID, err)
	}
	id := models.NewID()
	at := now()
	payload, err := buildAlertPayload(EventSpendLimitReached, id, at, installationID != nil, !test, false, nil, &spend)
	if err != nil {
		return nil, RecordedAlert{}, err
	}
	owed, err := st.RecordEvent(ctx, &models.WebhookEvent{ID: id, AccountID: accountID, InstallationID: installationID,
		Type: EventSpendLimitReached, Payload: models.JSON(payload), CreatedAt: at}, models.EventDeliveries{})
	return owed, RecordedAlert{Event: EventSpendLimitReached, Test: test}, err
}

// sampleAlertPayload is the body of a test send of an alert event.
func sampleAlertPayload(event, id string, at time.Time, plugin, live bool) ([]byte, error) {
	resets := models.SpendResetsAt(at)
	spend := &SpendAlert{Limit: 1000, Percent: 80, Used: 800, ResetsAt: resets}
	if event == EventSpendLimitReached {
		spend.Used, spend.Requested = 995, 10
	}
	return buildAlertPayload(event, id, at, plugin, live, true, &Credits{Available: 45, Threshold: 50}, spend)
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}
