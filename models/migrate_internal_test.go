package models

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// Every migration renders for both dialects into a file goose can read: no template left, an Up
// section, and no Down section.
func TestMigrationFilesRenderForEveryDialect(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"postgres", "sqlite"} {
		files, err := migrationFiles(migrationFS, dialect)
		if err != nil {
			t.Fatalf("%s: %v", dialect, err)
		}
		names, err := fs.Glob(files, "*.sql")
		if err != nil || len(names) != LatestVersion() {
			t.Fatalf("%s: %d files (%v), want %d", dialect, len(names), err, LatestVersion())
		}
		for _, name := range names {
			text, err := fs.ReadFile(files, name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(text), "-- +goose Up\n") || strings.Contains(string(text), "{{") {
				t.Errorf("%s %s does not start with -- +goose Up or still holds a template action", dialect, name)
			}
		}
	}
	if _, err := migrationFiles(migrationFS, "mysql"); err == nil {
		t.Error("migrationFiles rendered for an unknown dialect")
	}
}

// Migrations only go forward: a file with a Down section, however it is written, is refused.
func TestMigrationFilesRefuseDownSections(t *testing.T) {
	t.Parallel()
	for _, down := range []string{"-- +goose Down", "--+goose down", "-- +goose DOWN  "} {
		src := fstest.MapFS{"migrations/0001_x.sql": {Data: []byte("-- +goose Up\nCREATE TABLE x (id TEXT);\n" + down + "\nDROP TABLE x;\n")}}
		if _, err := migrationFiles(src, "sqlite"); err == nil || !strings.Contains(err.Error(), "only go forward") {
			t.Errorf("a migration with %q: err %v, want it refused", down, err)
		}
	}
	src := fstest.MapFS{"migrations/0001_x.sql": {Data: []byte("-- +goose Up\n-- Down the line, x holds ids.\nCREATE TABLE x (id TEXT);\n")}}
	if _, err := migrationFiles(src, "sqlite"); err != nil {
		t.Errorf("a comment that mentions Down: %v", err)
	}
}
