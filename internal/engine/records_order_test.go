package engine_test

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// byteOrderNames are catalog names whose order depends on the collation: byte order (SQLite, and
// PostgreSQL with C) puts every capital before every small letter and "Ä" after "Z", a linguistic
// collation (an en_US server's) does neither and weighs "-", "_" and " " otherwise. "b" twice:
// IDs break the tie.
var byteOrderNames = []string{"b", "B", "a_", "A-", "Äa", "ab", "a b", "Zed", "b"}

// The marketplace's fashion models and sceneries list by name and the system presets (of one
// position) by name in the same order on every database: SQLite's byte order, also on a PostgreSQL
// server whose databases collate linguistically, so a catalog lists the same (and a cut page holds
// the same items) on every deployment.
func TestCatalogNamesListInTheSameOrderOnEveryDatabase(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", testdb.SQLiteURL},
		{"postgres", testdb.MigratedPostgresURL},
		{"postgres-" + testdb.LinguisticCollation, testdb.LinguisticPostgresURL},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, d.url(t))
			eng := apitest.NewDeps(t, db, apitest.Options{}).Engine
			acc, err := models.CreateAccount(db, "team", 0)
			require.NoError(t, err)
			type named struct{ name, id string }
			var want []named
			for i, name := range byteOrderNames {
				id := models.NewID()
				want = append(want, named{name, id})
				for _, kind := range []models.ReferenceKind{models.KindFashionModel, models.KindScenery} {
					require.NoError(t, models.CreateReferenceItem(db, kind, &models.ReferenceItem{ID: id, Name: name,
						Status: models.RefStatusDone, ThumbnailKey: models.ReferenceBlobPrefix + "v1/x/" + id + ".jpg"}))
				}
				require.NoError(t, db.Create(&models.Preset{ID: id, Type: models.PresetTypeSystem, Status: models.PresetPublished,
					Visibility: models.PresetPublic, Slug: "order-" + strconv.Itoa(i), Name: name, IsFree: true}).Error)
			}
			slices.SortFunc(want, func(a, b named) int { return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.id, b.id)) })

			for _, kind := range []engine.ReferenceKind{engine.FashionModels, engine.Sceneries} {
				items, _, err := eng.Records.UsableReferenceItems(t.Context(), acc.ID, kind)
				require.NoError(t, err)
				var got []named
				for _, it := range items {
					got = append(got, named{it.Name, it.ID})
				}
				require.Equal(t, want, got, "%s in the order of %s", kind, d.name)
			}
			presets, _, err := eng.Records.VisiblePresets(t.Context(), acc.ID)
			require.NoError(t, err)
			var got []named
			for _, p := range presets {
				got = append(got, named{p.Name, p.ID})
			}
			require.Equal(t, want, got, "system presets in the order of %s", d.name)
		})
	}
}
