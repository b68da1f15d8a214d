package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/models"
)

// Spend limits (docs/api-guide.md, "Spend limits (both APIs)"): a monthly cap of credits on
// an installation (the plugin API) or an account (the external API, and every installation on
// it), enforced in the reservation's own statement (models/spend_limit_store.go).

// MaxSpendLimit is the largest monthly spend limit a client may set.
const MaxSpendLimit = 1_000_000_000

// DefaultSpendAlertPercent is the alert threshold of a limit set without one.
const DefaultSpendAlertPercent = 80

// SpendScope names whose spend limit: an installation's or an account's (exactly one).
type SpendScope = models.SpendScope

// SpendLimit is a spend limit as it stands: MonthlyCredits nil when there is none; Used is what
// the current UTC month has reserved less what it released; ResetsAt is the next month's start.
type SpendLimit struct {
	MonthlyCredits *int64
	AlertAtPercent int
	Used           int64
	ResetsAt       time.Time
}

func spendLimitOf(st models.SpendStatus) SpendLimit {
	return SpendLimit{MonthlyCredits: st.MonthlyCredits, AlertAtPercent: st.AlertPercent, Used: st.Used, ResetsAt: st.ResetsAt}
}

// SpendLimit returns scope's spend limit now; KindNotFound when there is no such tenant.
func (e *Accounts) SpendLimit(ctx context.Context, scope SpendScope) (SpendLimit, error) {
	st, err := e.store.SpendLimitOf(ctx, scope, e.now())
	return spendLimitAnswer(st, err)
}

// SetSpendLimit sets scope's monthly limit (1..MaxSpendLimit credits) and alert threshold
// (1..100 percent; nil: DefaultSpendAlertPercent). The month's spend is kept: a limit below it
// refuses every request until the month ends. The field names are the plugin API's; a façade
// with other names renames them in the refusal.
func (e *Accounts) SetSpendLimit(ctx context.Context, scope SpendScope, monthly int64, alertAtPercent *int) (SpendLimit, error) {
	if monthly < 1 || monthly > MaxSpendLimit {
		return SpendLimit{}, refuse(KindInvalid, "", "monthly_credits", "must be an integer from 1 to %d.", MaxSpendLimit)
	}
	alert := DefaultSpendAlertPercent
	if alertAtPercent != nil {
		alert = *alertAtPercent
	}
	if alert < 1 || alert > 100 {
		return SpendLimit{}, refuse(KindInvalid, "", "alert_at_percent", "must be an integer from 1 to 100.")
	}
	st, err := e.store.SetSpendLimit(ctx, scope, &monthly, alert, e.now())
	return spendLimitAnswer(st, err)
}

// ClearSpendLimit removes scope's limit (its month's spend is still counted).
func (e *Accounts) ClearSpendLimit(ctx context.Context, scope SpendScope) error {
	_, err := e.store.SetSpendLimit(ctx, scope, nil, DefaultSpendAlertPercent, e.now())
	_, err = spendLimitAnswer(models.SpendStatus{}, err)
	return err
}

func spendLimitAnswer(st models.SpendStatus, err error) (SpendLimit, error) {
	if errors.Is(err, models.ErrNotFound) {
		return SpendLimit{}, refuse(KindNotFound, "", "", "No installation or account with this ID.")
	}
	if err != nil {
		return SpendLimit{}, err
	}
	return spendLimitOf(st), nil
}
