// Package instant reads the date-times clients send as bounds of a listing or a report (RFC 3339),
// within the years both databases compare as instants.
//
// RFC 3339 writes years 0000–9999 with an offset, so a valid time can fall outside them in UTC
// (9999-12-31T23:00:00-01:00 is 10000-01-01T00:00:00Z). SQLite compares stored times as text,
// where "10000-…" sorts before "2026-…": such a bound would select the opposite rows there from
// PostgreSQL. Every bound is therefore refused outside the years 0000–9999 in UTC.
package instant

import (
	"errors"
	"regexp"
	"strings"
	"time"
)

// ErrSyntax: not an RFC 3339 date-time.
var ErrSyntax = errors.New("not an RFC 3339 date-time")

// ErrOutOfRange: an RFC 3339 date-time whose UTC instant falls outside the years 0000–9999.
var ErrOutOfRange = errors.New("outside the years 0000 to 9999 in UTC")

// OutOfRangeText is what a refusal of ErrOutOfRange tells the client about the parameter.
const OutOfRangeText = "must fall within the years 0000 to 9999 in UTC"

// rfc3339 is the shape Parse takes: RFC 3339's date-time with at most nine fractional digits after
// a point, and an offset whose hour is 00–23; "T" and "Z" may be lower case (RFC 3339, 5.6), which
// time.Parse refuses. time.Parse alone also takes a comma for the point, a tenth digit (which it
// drops, so the bound would not be the instant sent) and a +24:00 offset.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// Parse reads an RFC 3339 date-time (fractions of a second up to nanoseconds) and answers it in
// UTC: ErrSyntax when it is not one, ErrOutOfRange when its UTC year is outside 0000–9999.
func Parse(raw string) (time.Time, error) {
	if !rfc3339.MatchString(raw) {
		return time.Time{}, ErrSyntax
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(raw))
	if err != nil {
		return time.Time{}, ErrSyntax
	}
	t = t.UTC()
	if !InRange(t) {
		return time.Time{}, ErrOutOfRange
	}
	return t, nil
}

// PlusHint is what a refusal of raw as ErrSyntax adds when raw is a date-time whose offset's "+"
// was read as a space: a "+" left unencoded in a query string is one (application/x-www-form-
// urlencoded), so 2026-06-01T12:00:00+02:00 arrives as "2026-06-01T12:00:00 02:00". "" otherwise.
func PlusHint(raw string) string {
	i := strings.LastIndexByte(raw, ' ')
	if i < 0 || !rfc3339.MatchString(raw[:i]+"+"+raw[i+1:]) {
		return ""
	}
	return " (its + was read as a space: percent-encode it as %2B in a query string)"
}

// InRange tells whether t's UTC year is within 0000–9999, the years both databases compare as
// instants.
func InRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}
