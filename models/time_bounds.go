package models

import (
	"time"

	"gorm.io/gorm"
)

// halfOpenBound binds a time bound that takes its instant in from below or leaves it out from
// above (created_at >= t, created_at < t), as a client's created_after, created_before, from and
// to, and a webhook recover's since and until, are. PostgreSQL keeps times to the microsecond and pgx cuts a finer one down to it, which
// would move such a bound below the instant the client gave (a row created 1 ns before it would be
// listed as after it); the next microsecond up selects the same stored rows as the instant itself.
// SQLite compares the nanoseconds it was given, and gets t as it is.
func halfOpenBound(db *gorm.DB, t time.Time) time.Time {
	t = t.UTC()
	if db.Dialector.Name() == "postgres" && t.Nanosecond()%int(time.Microsecond) != 0 {
		return t.Truncate(time.Microsecond).Add(time.Microsecond)
	}
	return t
}

// createdBetween restricts q to rows created at or after after (inclusive) and before before
// (exclusive); a nil bound is no bound. Jobs and the webhook log are listed so.
func createdBetween(q *gorm.DB, after, before *time.Time) *gorm.DB {
	if after != nil {
		q = q.Where("created_at >= ?", halfOpenBound(q, *after))
	}
	if before != nil {
		q = q.Where("created_at < ?", halfOpenBound(q, *before))
	}
	return q
}
