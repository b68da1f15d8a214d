package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/instant"
)

// Usage groupings (group_by): the UTC day, the job's model, the job's type, and (an account's
// usage only) the API key that created the order.
const (
	UsageByDay     = models.UsageByDay
	UsageByAIModel = models.UsageByAIModel
	UsageByJobType = models.UsageByJobType
	UsageByKey     = models.UsageByKey
)

// MaxUsageRange is the longest range a usage report covers.
const MaxUsageRange = 400 * 24 * time.Hour

// UsageQuery is a usage request as its client wrote it: from and to are RFC 3339 times or UTC
// dates (YYYY-MM-DD, midnight UTC), "" for the default (the current UTC calendar month); GroupBy ""
// is by day.
type UsageQuery struct {
	From, To, GroupBy string
}

// UsageScope is whose usage: an account's or, with InstallationID, one installation's orders.
// ByKey allows the grouping by API key (an account's usage).
type UsageScope struct {
	AccountID      string
	InstallationID string
	ByKey          bool
}

// UsageFigures are the sums of a range's ledger entries (models.UsageFigures says what each is).
type UsageFigures struct {
	CreditsReserved int64 `json:"credits_reserved"`
	CreditsConsumed int64 `json:"credits_consumed"`
	CreditsReleased int64 `json:"credits_released"`
	JobsCompleted   int64 `json:"jobs_completed"`
	JobsFailed      int64 `json:"jobs_failed"`
	JobsCancelled   int64 `json:"jobs_cancelled"`
}

// UsageGroup is the figures of one group; Key is "" for the orders of a key grouping whose key
// was not recorded (orders of earlier versions).
type UsageGroup struct {
	Key string `json:"key"`
	UsageFigures
}

// UsageReport is a usage report: the range [From, To), the grouping, the totals and the groups
// with any entry, in key order. The groups add up to the totals.
type UsageReport struct {
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	GroupBy string       `json:"group_by"`
	Totals  UsageFigures `json:"totals"`
	Groups  []UsageGroup `json:"groups"`
}

// Usage reports what an account or installation spent, from the credit ledger.
type Usage struct{ *core }

// Report sums the scope's ledger over the query's range (docs/api-guide.md, "Usage"). KindInvalid
// naming the parameter when from or to is no time or date, from is not before to, they are more
// than MaxUsageRange apart, or group_by is no grouping of the scope.
func (e *Usage) Report(ctx context.Context, scope UsageScope, q UsageQuery) (UsageReport, error) {
	from, to, err := usageRange(q, e.now())
	if err != nil {
		return UsageReport{}, err
	}
	groupBy := q.GroupBy
	if groupBy == "" {
		groupBy = UsageByDay
	}
	groupings := []string{UsageByDay, UsageByAIModel, UsageByJobType}
	if scope.ByKey {
		groupings = append(groupings, UsageByKey)
	}
	if !slices.Contains(groupings, groupBy) {
		return UsageReport{}, refuse(KindInvalid, "", "group_by", "must be one of: %s.", strings.Join(groupings, ", "))
	}
	rows, err := e.store.UsageOf(ctx, models.UsageScope{AccountID: scope.AccountID, InstallationID: scope.InstallationID}, from, to, groupBy)
	if err != nil {
		return UsageReport{}, err
	}
	r := UsageReport{From: from, To: to, GroupBy: groupBy, Groups: make([]UsageGroup, len(rows))}
	var total models.UsageFigures
	for i, row := range rows {
		r.Groups[i] = UsageGroup{Key: row.Key, UsageFigures: UsageFigures(row.UsageFigures)}
		total.Add(row.UsageFigures)
	}
	r.Totals = UsageFigures(total)
	return r, nil
}

// usageRange reads the query's range at now: a missing from is the start of now's UTC month, a
// missing to the start of the next.
func usageRange(q UsageQuery, now time.Time) (time.Time, time.Time, error) {
	now = now.UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	var err error
	if q.From != "" {
		if from, err = usageTime("from", q.From); err != nil {
			return from, to, err
		}
	}
	if q.To != "" {
		if to, err = usageTime("to", q.To); err != nil {
			return from, to, err
		}
	}
	// A refusal names a parameter the client sent: when to took its default, from.
	if !from.Before(to) {
		if q.To == "" {
			return from, to, refuse(KindInvalid, "", "from", "must be before to, which defaults to the start of next month (%s); send to as well.", to.Format(time.RFC3339))
		}
		return from, to, refuse(KindInvalid, "", "to", "must be after from (%s%s).", from.Format(time.RFC3339), defaulted(q.From, "the start of this month"))
	}
	if to.Sub(from) > MaxUsageRange {
		if q.To == "" {
			return from, to, refuse(KindInvalid, "", "from", "is more than 400 days before to, which defaults to the start of next month (%s); send to as well.", to.Format(time.RFC3339))
		}
		return from, to, refuse(KindInvalid, "", "to", "is more than 400 days after from (%s%s).", from.Format(time.RFC3339), defaulted(q.From, "the start of this month"))
	}
	return from, to, nil
}

// defaulted says which default a parameter took when the client did not send it (raw is "").
func defaulted(raw, what string) string {
	if raw != "" {
		return ""
	}
	return ", its default: " + what
}

// usageTime reads an RFC 3339 time or a date (midnight UTC) of the parameter named field. A time
// whose UTC instant falls outside the years 0000–9999 is refused: the report answers its range in
// UTC, which RFC 3339 cannot write there (9999-12-31T23:59:59-23:59 is 10000-01-01 in UTC).
func usageTime(field, raw string) (time.Time, error) {
	switch t, err := instant.Parse(raw); {
	case err == nil:
		return t, nil
	case errors.Is(err, instant.ErrOutOfRange):
		return time.Time{}, refuse(KindInvalid, "", field, "%s.", instant.OutOfRangeText)
	}
	if t, err := time.Parse(time.DateOnly, raw); err == nil {
		return t, nil
	}
	return time.Time{}, refuse(KindInvalid, "", field, "must be an RFC 3339 time (2026-11-01T00:00:00Z) or a date (2026-11-01)%s.", instant.PlusHint(raw))
}

// UsageOf is support's usage report (`shotflow admin usage`): an installation's when
// installationID is set, else the account's (grouped by key too). KindNotFound when there is no
// such installation or account.
func (e *Support) UsageOf(ctx context.Context, installationID, accountID string, q UsageQuery) (UsageReport, error) {
	scope := UsageScope{AccountID: accountID, ByKey: true}
	if installationID != "" {
		inst, err := e.store.GetInstallation(ctx, installationID)
		if errors.Is(err, models.ErrNotFound) {
			return UsageReport{}, refuse(KindNotFound, "", "installation", "Installation %s not found.", installationID)
		}
		if err != nil {
			return UsageReport{}, err
		}
		scope = UsageScope{AccountID: inst.AccountID, InstallationID: inst.ID}
	} else {
		_, err := e.store.GetAccount(ctx, accountID)
		if errors.Is(err, models.ErrNotFound) {
			return UsageReport{}, refuse(KindNotFound, "", "account", "Account %s not found.", accountID)
		}
		if err != nil {
			return UsageReport{}, err
		}
	}
	return e.app.Usage.Report(ctx, scope, q)
}

// optional is s, nil when it is "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
