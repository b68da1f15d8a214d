package models_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// votedPackshot stores a packshot of the main installation's product p with the voting, voted
// minutes after the fixture's base time; deleted stores it deleted.
func (f *catalogFixture) votedPackshot(p models.Product, voting string, minutes int, deleted bool) models.Packshot {
	f.t.Helper()
	at := f.base.Add(time.Duration(minutes) * time.Minute)
	ps := f.packshot(f.inst, p.ID, "", at)
	update := map[string]any{"voting": voting}
	if deleted {
		update["deleted_at"] = at
	}
	if err := f.db.Model(&models.Packshot{}).Where("id = ?", ps.ID).Updates(update).Error; err != nil {
		f.t.Fatal(err)
	}
	return ps
}

func TestLiveProductsWithApprovedPackshots(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		// several: approved packshots voted at minutes 1 and 3 (the latest), and later ones that do
		// not count: rejected, pending, deleted, archived.
		several := f.product(f.inst, "several", f.base)
		older := f.votedPackshot(several, models.VotingAccepted, 1, false)
		latest := f.votedPackshot(several, models.VotingAccepted, 3, false)
		f.votedPackshot(several, models.VotingRejected, 5, false)
		f.votedPackshot(several, models.VotingPending, 6, false)
		f.votedPackshot(several, models.VotingAccepted, 7, true)
		// Approved, but archived by the external API's update-packshot: no longer approved.
		archived := f.votedPackshot(several, models.VotingAccepted, 8, false)
		if err := db.Model(&models.Packshot{}).Where("id = ?", archived.ID).Update("archived_at", f.base).Error; err != nil {
			t.Fatal(err)
		}
		none := f.product(f.inst, "none", f.base)
		f.votedPackshot(none, models.VotingRejected, 2, false)
		bare := f.product(f.inst, "bare", f.base)
		gone := f.product(f.inst, "gone", f.base)
		if err := db.Model(&models.Product{}).Where("id = ?", gone.ID).Update("deleted_at", f.base).Error; err != nil {
			t.Fatal(err)
		}
		// Another installation's product with the same ref, approved later, is not this one's.
		o := f.product(f.other, "several", f.base)
		f.packshot(f.other, o.ID, "", f.base.Add(9*time.Minute))

		// A product's latest approved packshot is one row however many it has (issue 23, item 21b).
		refs := []string{"several", "none", "bare", "gone", "unknown"}
		got, err := models.LiveProductsWithApprovedPackshots(db, f.inst.ID, refs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ids := packshotIDs(got["several"].Packshots); len(ids) != 1 || ids[0] != latest.ID {
			t.Fatalf("approved packshots of several read when none is named = %v; want only %s (latest)", ids, latest.ID)
		}
		// Named by a subject, the latest approved packshot of an asset is read too (an ID that is no
		// asset of the product's changes nothing).
		got, err = models.LiveProductsWithApprovedPackshots(db, f.inst.ID, refs, []string{older.AssetID, o.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got["several"] == nil || got["none"] == nil || got["bare"] == nil {
			t.Fatalf("products = %v; want several, none and bare", got)
		}
		if got["several"].ID != several.ID || got["none"].ID != none.ID || got["bare"].ID != bare.ID {
			t.Fatalf("products of another installation or the wrong ones: %+v", got)
		}
		if ids := packshotIDs(got["several"].Packshots); len(ids) != 2 || ids[0] != latest.ID || ids[1] != older.ID {
			t.Fatalf("approved packshots of several = %v; want %s (latest), %s", ids, latest.ID, older.ID)
		}
		if len(got["none"].Packshots) != 0 || len(got["bare"].Packshots) != 0 {
			t.Fatalf("approved packshots of none and bare = %v, %v; want none", got["none"].Packshots, got["bare"].Packshots)
		}
		// What photo-shoot jobs start from: the latest, or the one named when it is approved.
		if ps := got["several"].Approved(""); ps == nil || ps.ID != latest.ID {
			t.Fatalf("Approved(\"\") = %+v; want the latest", ps)
		}
		if ps := got["several"].Approved(older.AssetID); ps == nil || ps.ID != older.ID {
			t.Fatalf("Approved(older) = %+v; want older", ps)
		}
		if ps := got["several"].Approved(models.NewID()); ps != nil {
			t.Fatalf("Approved(unknown asset) = %+v; want nil", ps)
		}
		if ps := got["none"].Approved(""); ps != nil {
			t.Fatalf("Approved of a product without approved packshot = %+v; want nil", ps)
		}
		// An approved packshot without an approval time (voting_at NULL) sorts after every dated
		// one on both databases (PostgreSQL puts NULL first in a descending order, SQLite last).
		undated := f.product(f.inst, "undated", f.base)
		dated := f.votedPackshot(undated, models.VotingAccepted, 1, false)
		nullAt := f.votedPackshot(undated, models.VotingAccepted, 9, false)
		if err := db.Model(&models.Packshot{}).Where("id = ?", nullAt.ID).Update("voting_at", nil).Error; err != nil {
			t.Fatal(err)
		}
		got, err = models.LiveProductsWithApprovedPackshots(db, f.inst.ID, []string{"undated"}, []string{nullAt.AssetID})
		if err != nil {
			t.Fatal(err)
		}
		if ids := packshotIDs(got["undated"].Packshots); len(ids) != 2 || ids[0] != dated.ID || ids[1] != nullAt.ID {
			t.Fatalf("approved packshots of undated = %v; want %s (dated) before %s (no voting_at)", ids, dated.ID, nullAt.ID)
		}
		if got, err := models.LiveProductsWithApprovedPackshots(db, f.inst.ID, nil, nil); err != nil || len(got) != 0 {
			t.Fatalf("no refs = %v, %v; want nothing", got, err)
		}
	})
}

func packshotIDs(list []models.ApprovedPackshot) []string {
	var out []string
	for _, p := range list {
		out = append(out, p.ID)
	}
	return out
}
