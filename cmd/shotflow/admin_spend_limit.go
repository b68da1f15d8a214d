package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/shotflow/shotflow/internal/engine"
)

// spendLimitOutput is what the spend-limit commands print: whose limit and the limit as it stands
// (monthly_credits null: none), as GET /spend-limit answers it.
type spendLimitOutput struct {
	InstallationID string    `json:"installation_id,omitempty"`
	AccountID      string    `json:"account_id,omitempty"`
	MonthlyCredits *int64    `json:"monthly_credits"`
	AlertAtPercent int       `json:"alert_at_percent"`
	Used           int64     `json:"used"`
	ResetsAt       time.Time `json:"resets_at"`
}

// spendScope reads --installation or --account (exactly one) and, for set, the limit flags.
func (e *adminEnv) spendScope(name string, args []string, set bool) (engine.SpendScope, int64, *int, error) {
	fs := newFlags("spend-limit " + name)
	installation := idFlag(fs, "installation", "installation ID (the plugin API's limit)")
	account := idFlag(fs, "account", "account ID (the external API's limit, which caps its installations too)")
	monthly := fs.Int64("monthly-credits", 0, "credits per UTC calendar month (set)")
	alert := fs.Int("alert-at-percent", 0, "alert threshold in percent (set; default 80)")
	if err := parseFlags(fs, args); err != nil {
		return engine.SpendScope{}, 0, nil, err
	}
	if (*installation == "") == (*account == "") {
		return engine.SpendScope{}, 0, nil, fmt.Errorf("%w: exactly one of --installation and --account is required", errUsage)
	}
	scope := engine.SpendScope{InstallationID: *installation, AccountID: *account}
	var alertAt *int
	seen := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { seen[f.Name] = true })
	if !set && (seen["monthly-credits"] || seen["alert-at-percent"]) {
		return engine.SpendScope{}, 0, nil, fmt.Errorf("%w: --monthly-credits and --alert-at-percent are for spend-limit set", errUsage)
	}
	if set {
		if !seen["monthly-credits"] {
			return engine.SpendScope{}, 0, nil, fmt.Errorf("%w: --monthly-credits is required", errUsage)
		}
		if seen["alert-at-percent"] {
			alertAt = alert
		}
	}
	return scope, *monthly, alertAt, nil
}

func spendOutput(scope engine.SpendScope, l engine.SpendLimit) spendLimitOutput {
	return spendLimitOutput{InstallationID: scope.InstallationID, AccountID: scope.AccountID, MonthlyCredits: l.MonthlyCredits,
		AlertAtPercent: l.AlertAtPercent, Used: l.Used, ResetsAt: l.ResetsAt.UTC()}
}

// spendLimitShow prints an installation's or account's spend limit and the month's use.
func (e *adminEnv) spendLimitShow(args []string) (any, error) {
	scope, _, _, err := e.spendScope("show", args, false)
	if err != nil {
		return nil, err
	}
	l, err := e.storeEngine().Accounts.SpendLimit(e.ctx, scope)
	if err != nil {
		return nil, err
	}
	return spendOutput(scope, l), nil
}

// spendLimitSet sets an installation's or account's spend limit.
func (e *adminEnv) spendLimitSet(args []string) (any, error) {
	scope, monthly, alert, err := e.spendScope("set", args, true)
	if err != nil {
		return nil, err
	}
	l, err := e.storeEngine().Accounts.SetSpendLimit(e.ctx, scope, monthly, alert)
	if err != nil {
		return nil, usageOf(err)
	}
	return spendOutput(scope, l), nil
}

// spendLimitClear removes an installation's or account's spend limit and prints it as it now is.
func (e *adminEnv) spendLimitClear(args []string) (any, error) {
	scope, _, _, err := e.spendScope("clear", args, false)
	if err != nil {
		return nil, err
	}
	accounts := e.storeEngine().Accounts
	if err := accounts.ClearSpendLimit(e.ctx, scope); err != nil {
		return nil, err
	}
	l, err := accounts.SpendLimit(e.ctx, scope)
	if err != nil {
		return nil, err
	}
	return spendOutput(scope, l), nil
}
