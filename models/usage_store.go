package models

import (
	"context"
	"fmt"
	"time"
)

// Usage groupings: what each row of UsageOf sums over.
const (
	UsageByDay     = "day"      // the UTC day of the ledger entry, YYYY-MM-DD
	UsageByAIModel = "ai_model" // the job's model
	UsageByJobType = "job_type" // the job's type
	UsageByKey     = "key"      // the API key that created the job's order ("" when none was recorded)
)

// UsageScope is whose usage UsageOf sums: an account's, or, with InstallationID, the ledger entries
// of that installation's orders only.
type UsageScope struct {
	AccountID      string
	InstallationID string
}

// UsageFigures are the sums of a set of ledger entries (docs/api-guide.md, "Usage"):
//
//   - CreditsReserved: the reserve entries' reserved amounts (the credits held at acceptance);
//   - CreditsConsumed: the consume entries' amounts (job runs that completed, charged);
//   - CreditsReleased: the release entries' amounts (job runs that failed, expired or were
//     cancelled, given back);
//   - JobsCompleted: the consume entries (one per completed job run);
//   - JobsFailed: the release entries of runs that ended failed or expired;
//   - JobsCancelled: the release entries of runs that were cancelled.
type UsageFigures struct {
	CreditsReserved int64
	CreditsConsumed int64
	CreditsReleased int64
	JobsCompleted   int64
	JobsFailed      int64
	JobsCancelled   int64
}

// Add adds o's figures to u's.
func (u *UsageFigures) Add(o UsageFigures) {
	u.CreditsReserved += o.CreditsReserved
	u.CreditsConsumed += o.CreditsConsumed
	u.CreditsReleased += o.CreditsReleased
	u.JobsCompleted += o.JobsCompleted
	u.JobsFailed += o.JobsFailed
	u.JobsCancelled += o.JobsCancelled
}

// UsageRow is the figures of one group.
type UsageRow struct {
	Key string `gorm:"column:group_key"`
	UsageFigures
}

// UsageOf sums the reserve, consume and release entries of the scope's ledger created in
// [from, to), one row per group of groupBy (a UsageBy… constant) with any entry, in key order.
// Grants and adjustments are not usage. Every entry counted falls in exactly one group, so the
// rows add up to the range's ledger sums. The scan is the range of the index credit_ledger_account
// (account_id, created_at); an installation's, a model's, a job type's or a key's entries join
// their order or job by primary key.
func (s *Store) UsageOf(ctx context.Context, scope UsageScope, from, to time.Time, groupBy string) ([]UsageRow, error) {
	db := s.conn(ctx)
	var key, joins string
	switch groupBy {
	case UsageByDay:
		if db.Dialector.Name() == "postgres" {
			key = "to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
		} else { // SQLite holds UTC times as text starting with the date
			key = "substr(l.created_at, 1, 10)"
		}
	case UsageByAIModel:
		key, joins = "COALESCE(j.ai_model, '')", " LEFT JOIN jobs j ON j.id = l.job_id"
	case UsageByJobType:
		key, joins = "COALESCE(j.job_type, '')", " LEFT JOIN jobs j ON j.id = l.job_id"
	case UsageByKey:
		key = "COALESCE(o.api_key_id, '')"
	default:
		return nil, fmt.Errorf("UsageOf: %q is no grouping", groupBy)
	}
	args := []any{scope.AccountID, halfOpenBound(db, from), halfOpenBound(db, to)}
	where := ""
	if scope.InstallationID != "" || groupBy == UsageByKey {
		joins = " JOIN orders o ON o.id = l.order_id" + joins
	}
	if scope.InstallationID != "" {
		where = " AND o.installation_id = ?"
		args = append(args, scope.InstallationID)
	}
	var rows []UsageRow
	err := db.Raw(`SELECT `+key+` AS group_key,
		COALESCE(SUM(CASE WHEN l.kind = 'reserve' THEN l.reserved_delta ELSE 0 END), 0) AS credits_reserved,
		COALESCE(SUM(CASE WHEN l.kind = 'consume' THEN -l.reserved_delta ELSE 0 END), 0) AS credits_consumed,
		COALESCE(SUM(CASE WHEN l.kind = 'release' THEN l.balance_delta ELSE 0 END), 0) AS credits_released,
		COUNT(CASE WHEN l.kind = 'consume' THEN 1 END) AS jobs_completed,
		COUNT(CASE WHEN l.kind = 'release' AND l.note <> 'cancelled' THEN 1 END) AS jobs_failed,
		COUNT(CASE WHEN l.kind = 'release' AND l.note = 'cancelled' THEN 1 END) AS jobs_cancelled
		FROM credit_ledger l`+joins+`
		WHERE l.account_id = ? AND l.created_at >= ? AND l.created_at < ?
			AND l.kind IN ('reserve', 'consume', 'release')`+where+`
		GROUP BY 1 ORDER BY 1`, args...).Scan(&rows).Error
	return rows, err
}
