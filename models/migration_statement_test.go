package models_test

import (
	"os"
	"strings"
	"testing"
)

// migrationStatement returns the statement of the migration file (under migrations/) that starts
// a line with start, up to its semicolon: a backfill a test runs over rows written as they were
// before the migration, as it ran at the upgrade.
func migrationStatement(t *testing.T, file, start string) string {
	t.Helper()
	text, err := os.ReadFile("migrations/" + file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "\n"+start)
	rest, _, ok2 := strings.Cut(rest, ";")
	if !ok || !ok2 {
		t.Fatalf("%s has no statement starting %q", file, start)
	}
	return start + rest
}
