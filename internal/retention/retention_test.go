package retention_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

const period = 90 * 24 * time.Hour

// fixture is an account with a product over a database and a real file blob store.
type fixture struct {
	t       *testing.T
	db      *gorm.DB
	blobs   *blobstore.Store
	acc     *models.Account
	product models.Product
	now     time.Time
}

func newFixture(t *testing.T, db *gorm.DB) *fixture {
	t.Helper()
	blobs, err := blobstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	acc, err := models.CreateAccount(db, "acme", 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f := &fixture{t: t, db: db, blobs: blobs, acc: acc, now: now}
	f.product = models.Product{ID: models.NewID(), AccountID: acc.ID, ExternalRef: "mug", DisplayName: "Mug", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&f.product).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) purger() *retention.Purger {
	return &retention.Purger{Store: models.NewStore(f.db), Blobs: f.blobs, Log: zap.NewNop(), Retention: period}
}

// file stores an asset of the kind created age ago, with its blob.
func (f *fixture) file(kind string, age time.Duration) models.Asset {
	f.t.Helper()
	id := models.NewID()
	at := f.now.Add(-age)
	jobID := models.NewID()
	a := models.Asset{ID: id, AccountID: f.acc.ID, Kind: kind, Status: status.AssetReady, ContentType: "image/png",
		SizeBytes: 4, BlobKey: kind + "s/" + id + ".png", JobID: &jobID, CreatedAt: at, UpdatedAt: at}
	if err := f.db.Create(&a).Error; err != nil {
		f.t.Fatal(err)
	}
	if err := f.blobs.Put(context.Background(), a.BlobKey, []byte("png!"), "image/png"); err != nil {
		f.t.Fatal(err)
	}
	return a
}

// packshot points a packshot of the product at the asset.
func (f *fixture) packshot(a models.Asset, voting string, deleted bool) {
	f.t.Helper()
	p := models.Packshot{ID: models.NewID(), AccountID: f.acc.ID, ProductID: f.product.ID, AssetID: a.ID, Voting: voting,
		JobID: a.JobID, CreatedAt: f.now}
	if deleted {
		p.DeletedAt = &f.now
	}
	if err := f.db.Create(&p).Error; err != nil {
		f.t.Fatal(err)
	}
}

// idea makes the asset the image of an account's fashion model or scenery in the status.
func (f *fixture) idea(kind models.ReferenceKind, a models.Asset, status string) {
	f.t.Helper()
	item := models.ReferenceItem{AccountID: &f.acc.ID, Name: "idea", Status: status, ThumbnailAssetID: &a.ID}
	if err := models.CreateReferenceItem(f.db, kind, &item); err != nil {
		f.t.Fatal(err)
	}
}

// stored reports whether the asset's blob exists and whether its row is marked purged.
func (f *fixture) state(a models.Asset) (blob bool, purged *time.Time) {
	f.t.Helper()
	_, err := f.blobs.Get(context.Background(), a.BlobKey)
	if err != nil && !errors.Is(err, blobstore.ErrNotFound) {
		f.t.Fatal(err)
	}
	var row models.Asset
	if err := f.db.Take(&row, "id = ?", a.ID).Error; err != nil {
		f.t.Fatal(err)
	}
	return err == nil, row.PurgedAt
}

func (f *fixture) requireKept(a models.Asset, why string) {
	f.t.Helper()
	if blob, purged := f.state(a); !blob || purged != nil {
		f.t.Errorf("%s: blob stored %v, purged_at %v; want it kept", why, blob, purged)
	}
}

func (f *fixture) requirePurged(a models.Asset, why string) time.Time {
	f.t.Helper()
	blob, purged := f.state(a)
	if blob || purged == nil {
		f.t.Fatalf("%s: blob stored %v, purged_at %v; want it purged", why, blob, purged)
	}
	return *purged
}

func TestPurgeRemovesOutputsPastRetention(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		old := f.file(models.AssetKindOutput, period+time.Hour)
		older := f.file(models.AssetKindOutput, 3*period)
		young := f.file(models.AssetKindOutput, period-time.Hour)
		oldUpload := f.file(models.AssetKindUpload, 3*period)
		approved := f.file(models.AssetKindOutput, 2*period)
		f.packshot(approved, models.VotingAccepted, false)
		candidate := f.file(models.AssetKindOutput, 2*period)
		f.packshot(candidate, models.VotingPending, false)
		rejected := f.file(models.AssetKindOutput, 2*period)
		f.packshot(rejected, models.VotingRejected, false)
		deleted := f.file(models.AssetKindOutput, 2*period)
		f.packshot(deleted, models.VotingAccepted, true)
		archived := f.file(models.AssetKindOutput, 2*period)
		f.packshot(archived, models.VotingAccepted, false)
		if err := db.Model(&models.Packshot{}).Where("asset_id = ?", archived.ID).Update("archived_at", f.now).Error; err != nil {
			t.Fatal(err)
		}
		model := f.file(models.AssetKindOutput, 2*period)
		f.idea(models.KindFashionModel, model, models.RefStatusDone)
		scenery := f.file(models.AssetKindOutput, 2*period)
		f.idea(models.KindScenery, scenery, models.RefStatusDone)
		archivedScenery := f.file(models.AssetKindOutput, 2*period)
		f.idea(models.KindScenery, archivedScenery, models.RefStatusArchived)

		n, err := f.purger().Purge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n != 6 {
			t.Errorf("Purge purged %d files, want 6", n)
		}
		start := time.Now().UTC().Add(-time.Minute)
		for _, c := range []struct {
			a   models.Asset
			why string
		}{{old, "output just past retention"}, {older, "old output"}, {rejected, "rejected packshot candidate"}, {deleted, "deleted packshot"},
			{archived, "archived packshot"}, {archivedScenery, "archived scenery"}} {
			if at := f.requirePurged(c.a, c.why); at.Before(start) {
				t.Errorf("%s: purged_at %v is not the time of the sweep", c.why, at)
			}
		}
		f.requireKept(young, "output within retention")
		f.requireKept(oldUpload, "upload")
		f.requireKept(approved, "approved packshot")
		f.requireKept(candidate, "pending packshot candidate")
		f.requireKept(model, "image of a DONE fashion model")
		f.requireKept(scenery, "image of a DONE scenery")
	})
}

func TestPurgeIsIdempotent(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		a := f.file(models.AssetKindOutput, 2*period)
		p := f.purger()
		p.Metrics = metrics.New()
		defer p.Metrics.Close()
		if n, err := p.Purge(context.Background()); err != nil || n != 1 {
			t.Fatalf("first Purge = %d, %v; want 1", n, err)
		}
		first := f.requirePurged(a, "first sweep")
		if n, err := p.Purge(context.Background()); err != nil || n != 0 {
			t.Fatalf("second Purge = %d, %v; want 0", n, err)
		}
		if again := f.requirePurged(a, "second sweep"); !again.Equal(first) {
			t.Fatalf("purged_at moved from %v to %v on a second sweep", first, again)
		}
		if got := metricstest.Serve(t, p.Metrics.WorkerHandler()).Value(metrics.RetentionPurged, nil); got != 1 {
			t.Errorf("%s = %v after two sweeps of one file, want 1", metrics.RetentionPurged, got)
		}
	})
}

// A blob that is already gone (a sweep that crashed after deleting it, or a file removed by hand)
// still gets its row marked.
func TestPurgeMarksAFileWhoseBlobIsAlreadyGone(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		a := f.file(models.AssetKindOutput, 2*period)
		if err := f.blobs.Delete(context.Background(), a.BlobKey); err != nil {
			t.Fatal(err)
		}
		if n, err := f.purger().Purge(context.Background()); err != nil || n != 1 {
			t.Fatalf("Purge = %d, %v; want 1", n, err)
		}
		f.requirePurged(a, "file without blob")
	})
}

// Batches page forward, so kept files at the front of the queue never stall the sweep.
func TestPurgeWorksThroughEveryBatch(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		var purgeable []models.Asset
		for i := range 7 {
			age := 2*period + time.Duration(20-i)*time.Hour // oldest first
			a := f.file(models.AssetKindOutput, age)
			if i < 3 {
				f.packshot(a, models.VotingAccepted, false)
				continue
			}
			purgeable = append(purgeable, a)
		}
		p := f.purger()
		p.BatchSize = 2
		n, err := p.Purge(context.Background())
		if err != nil || n != len(purgeable) {
			t.Fatalf("Purge = %d, %v; want %d", n, err, len(purgeable))
		}
		for _, a := range purgeable {
			f.requirePurged(a, "file of a later batch")
		}
	})
}

// A packshot accepted after the sweep listed its file (POST /jobs/{id}/accept while the sweep
// runs) keeps the file: the sweep checks again with the row locked.
func TestFileAcceptedDuringTheSweepIsKept(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		a := f.file(models.AssetKindOutput, 2*period)
		f.packshot(a, models.VotingRejected, false)
		var once sync.Once
		if err := db.Callback().Query().After("gorm:query").Register("test:accept_after_listing", func(tx *gorm.DB) {
			if tx.Statement.Table == "assets" && len(tx.Statement.Selects) > 0 {
				once.Do(func() {
					if err := db.Session(&gorm.Session{NewDB: true, SkipHooks: true}).Exec(
						"UPDATE packshots SET voting = ? WHERE asset_id = ?", models.VotingAccepted, a.ID).Error; err != nil {
						t.Error(err)
					}
				})
			}
		}); err != nil {
			t.Fatal(err)
		}
		n, err := f.purger().Purge(context.Background())
		if err != nil || n != 0 {
			t.Fatalf("Purge = %d, %v; want 0", n, err)
		}
		f.requireKept(a, "file of a packshot accepted during the sweep")
	})
}

// Several workers sweep at once: every file is purged exactly once.
func TestConcurrentSweepsPurgeEachFileOnce(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db)
		files := make([]models.Asset, 12)
		for i := range files {
			files[i] = f.file(models.AssetKindOutput, 2*period+time.Duration(i)*time.Minute)
		}
		var wg sync.WaitGroup
		counts := make([]int, 4)
		errs := make([]error, 4)
		m := metrics.New() // the workers of one process share its metrics
		defer m.Close()
		for w := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := f.purger()
				p.BatchSize = 3
				p.Metrics = m
				counts[w], errs[w] = p.Purge(context.Background())
			}()
		}
		wg.Wait()
		total := 0
		for w := range counts {
			if errs[w] != nil {
				t.Fatalf("worker %d: %v", w, errs[w])
			}
			total += counts[w]
		}
		if total != len(files) {
			t.Fatalf("workers purged %d files in total, want %d (each once)", total, len(files))
		}
		if got := metricstest.Serve(t, m.WorkerHandler()).Value(metrics.RetentionPurged, nil); got != float64(len(files)) {
			t.Errorf("%s = %v, want %d", metrics.RetentionPurged, got, len(files))
		}
		for _, a := range files {
			f.requirePurged(a, "file")
		}
	})
}

func TestPurgeRefusesANonPositivePeriod(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	f := newFixture(t, db)
	a := f.file(models.AssetKindOutput, time.Hour)
	for _, d := range []time.Duration{0, -time.Hour} {
		p := f.purger()
		p.Retention = d
		if _, err := p.Purge(context.Background()); err == nil {
			t.Fatalf("Purge with retention %v succeeded", d)
		}
	}
	f.requireKept(a, "file after refused sweeps")
}

// Run sweeps at once when it starts, then on every tick, and returns when its context ends.
func TestRunSweepsPeriodicallyUntilCancelled(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	f := newFixture(t, db)
	first := f.file(models.AssetKindOutput, 2*period)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.purger().Run(ctx, 50*time.Millisecond)
	}()
	waitFor(t, func() bool { _, purged := f.state(first); return purged != nil })
	later := f.file(models.AssetKindOutput, 2*period)
	waitFor(t, func() bool { _, purged := f.state(later); return purged != nil })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The sweep deletes expired Idempotency-Key records of every installation, and keeps live ones
// (acceptance no longer deletes them on its hot path).
func TestRunPurgesExpiredIdempotencyKeys(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	f := newFixture(t, db)
	box, _ := secrets.NewBox(make([]byte, 32))
	inst, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: f.acc.ID, Name: "shop", RateLimitPerMin: 60}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"old", "young"} {
		if _, _, err := models.ClaimIdempotencyKey(db, inst.Installation.ID, key, "h", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	testdb.MustExec(t, db, "UPDATE idempotency_keys SET expires_at = ? WHERE idempotency_key = ?", time.Now().UTC().Add(-time.Second), "old")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.purger().Run(ctx, time.Hour)
	waitFor(t, func() bool {
		_, err := models.GetIdempotencyKey(db, inst.Installation.ID, "old")
		return errors.Is(err, models.ErrNotFound)
	})
	if _, err := models.GetIdempotencyKey(db, inst.Installation.ID, "young"); err != nil {
		t.Fatalf("live key: %v", err)
	}
}
