package models_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A database that the race of POST /packshots already hit (several live packshots with one
// external_ref) upgrades through 0013: no packshot is deleted or changes but the reference, the
// newest of each set keeps it (the one GET /packshots/{ref} answered), the older ones lose it,
// and from then on the reference is unique.
func TestMigrationResolvesDuplicatePackshotRefs(t *testing.T) {
	t.Parallel()
	unmigratedDialects(t, func(t *testing.T, db *gorm.DB) {
		legacyMigrate(t, db, 12)

		t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		testdb.MustExec(t, db, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES ('acc', 'Old', ?, ?)", t0, t0)
		for _, inst := range []string{"inst-a", "inst-b"} {
			testdb.MustExec(t, db, `INSERT INTO installations (id, account_id, name, webhook_secret_enc, created_at, updated_at)
					VALUES (?, 'acc', 'shop', 'x', ?, ?)`, inst, t0, t0)
			testdb.MustExec(t, db, `INSERT INTO products (id, account_id, installation_id, external_ref, created_at, updated_at)
					VALUES (?, 'acc', ?, 'P', ?, ?)`, "prod-"+inst, inst, t0, t0)
		}
		type row struct {
			id, inst, ref string
			at            time.Duration
			deleted       bool
		}
		rows := []row{
			{"dup-1", "inst-a", "dup", 0, false},
			{"dup-3", "inst-a", "dup", 2 * time.Minute, false}, // the newest live: keeps dup
			{"dup-2", "inst-a", "dup", time.Minute, false},
			{"dup-del", "inst-a", "dup", 3 * time.Minute, true}, // deleted: not live, left alone
			{"tie-a", "inst-a", "tie", time.Minute, false},
			{"tie-b", "inst-a", "tie", time.Minute, false}, // same time: the greater ID keeps tie
			{"none-1", "inst-a", "", 0, false},
			{"none-2", "inst-a", "", 0, false},
			{"solo", "inst-a", "solo", 0, false},
			{"dup-b", "inst-b", "dup", 0, false}, // another installation's dup
		}
		for _, r := range rows {
			at := t0.Add(r.at)
			var deletedAt *time.Time
			if r.deleted {
				deletedAt = &at
			}
			testdb.MustExec(t, db, `INSERT INTO assets (id, account_id, installation_id, kind, status, content_type, blob_key, created_at, updated_at)
					VALUES (?, 'acc', ?, 'upload', 'ready', 'image/png', ?, ?, ?)`, "asset-"+r.id, r.inst, "uploads/"+r.id, at, at)
			testdb.MustExec(t, db, `INSERT INTO packshots (id, account_id, installation_id, product_id, asset_id, external_ref, voting, created_at, deleted_at)
					VALUES (?, 'acc', ?, ?, ?, ?, 'accepted', ?, ?)`, r.id, r.inst, "prod-"+r.inst, "asset-"+r.id, r.ref, at, deletedAt)
		}

		if _, err := models.Migrate(t.Context(), db); err != nil {
			t.Fatalf("migrate a database with duplicate packshot references: %v", err)
		}

		want := map[string]string{"dup-1": "", "dup-2": "", "dup-3": "dup", "dup-del": "dup", "tie-a": "", "tie-b": "tie",
			"none-1": "", "none-2": "", "solo": "solo", "dup-b": "dup"}
		var after []models.Packshot
		if err := db.Find(&after).Error; err != nil {
			t.Fatal(err)
		}
		if len(after) != len(rows) {
			t.Fatalf("%d packshots after the migration, want %d", len(after), len(rows))
		}
		for _, p := range after {
			if p.ExternalRef != want[p.ID] {
				t.Errorf("packshot %s: external_ref %q, want %q", p.ID, p.ExternalRef, want[p.ID])
			}
			if deleted := p.DeletedAt != nil; deleted != (p.ID == "dup-del") {
				t.Errorf("packshot %s: deleted %v after the migration", p.ID, deleted)
			}
			if p.Voting != models.VotingAccepted {
				t.Errorf("packshot %s: voting %q after the migration", p.ID, p.Voting)
			}
		}

		// From now on a second live dup is refused.
		at := t0.Add(time.Hour)
		testdb.MustExec(t, db, `INSERT INTO assets (id, account_id, installation_id, kind, status, content_type, blob_key, created_at, updated_at)
				VALUES ('asset-new', 'acc', 'inst-a', 'upload', 'ready', 'image/png', 'uploads/new', ?, ?)`, at, at)
		err := db.Exec(`INSERT INTO packshots (id, account_id, installation_id, product_id, asset_id, external_ref, voting, created_at)
				VALUES ('dup-new', 'acc', 'inst-a', 'prod-inst-a', 'asset-new', 'dup', 'accepted', ?)`, at).Error
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("a second live dup after the migration: %v, want %v", err, fmt.Sprint(gorm.ErrDuplicatedKey))
		}
	})
}
