package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// catalogFixture is an account with two installations whose catalog rows a test writes directly.
type catalogFixture struct {
	t           *testing.T
	db          *gorm.DB
	inst, other *models.Installation
	base        time.Time
}

func newCatalogFixture(t *testing.T, db *gorm.DB) *catalogFixture {
	t.Helper()
	box, err := secrets.NewBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := models.CreateAccount(db, "catalog", 0)
	if err != nil {
		t.Fatal(err)
	}
	f := &catalogFixture{t: t, db: db, base: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	for _, dst := range []**models.Installation{&f.inst, &f.other} {
		created, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop", RateLimitPerMin: 60}, "whsec_x")
		if err != nil {
			t.Fatal(err)
		}
		*dst = &created.Installation
	}
	return f
}

func (f *catalogFixture) create(v any) {
	f.t.Helper()
	if err := f.db.Create(v).Error; err != nil {
		f.t.Fatalf("create %T: %v", v, err)
	}
}

func (f *catalogFixture) product(inst *models.Installation, ref string, at time.Time) models.Product {
	p := models.Product{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ExternalRef: ref,
		DisplayName: "Product " + ref, SKU: "SKU-" + ref, CreatedAt: at, UpdatedAt: at}
	f.create(&p)
	return p
}

func (f *catalogFixture) asset(inst *models.Installation, status string) models.Asset {
	id := models.NewID()
	exp := f.base.Add(2 * time.Hour)
	a := models.Asset{ID: id, AccountID: inst.AccountID, InstallationID: &inst.ID, Kind: models.AssetKindUpload, Status: status,
		ContentType: "image/png", SizeBytes: 10, BlobKey: "uploads/" + id, Width: 30, Height: 40, UploadExpiresAt: &exp,
		CreatedAt: f.base, UpdatedAt: f.base}
	f.create(&a)
	return a
}

func (f *catalogFixture) image(inst *models.Installation, productID, ref string, at time.Time) models.ProductImage {
	a := f.asset(inst, status.AssetReady)
	img := models.ProductImage{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: productID,
		AssetID: a.ID, ExternalRef: ref, CreatedAt: at}
	f.create(&img)
	return img
}

func (f *catalogFixture) packshot(inst *models.Installation, productID, ref string, at time.Time) models.Packshot {
	a := f.asset(inst, status.AssetReady)
	p := models.Packshot{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: productID,
		AssetID: a.ID, ExternalRef: ref, Voting: models.VotingAccepted, VotingAt: &at, CreatedAt: at}
	f.create(&p)
	return p
}

func TestProductImagesTableAndLiveRefIndex(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		if !db.Migrator().HasTable("product_images") {
			t.Fatal("table product_images missing")
		}
		f := newCatalogFixture(t, db)
		p := f.product(f.inst, "P", f.base)
		first := f.image(f.inst, p.ID, "img-1", f.base)

		// A second live row with the same reference in the installation is refused.
		a := f.asset(f.inst, status.AssetReady)
		dup := models.ProductImage{ID: models.NewID(), AccountID: f.inst.AccountID, InstallationID: &f.inst.ID, ProductID: p.ID,
			AssetID: a.ID, ExternalRef: "img-1", CreatedAt: f.base}
		if err := db.Create(&dup).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("duplicate live external_ref: err = %v, want ErrDuplicatedKey", err)
		}
		// Another installation may use the same reference.
		op := f.product(f.other, "P", f.base)
		f.image(f.other, op.ID, "img-1", f.base)

		// Retiring the row frees the reference; retiring twice is ErrNotFound.
		if err := models.RetireProductImage(db, first.ID, f.base.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := models.RetireProductImage(db, first.ID, f.base.Add(time.Minute)); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("second retire: %v", err)
		}
		dup.ID = models.NewID()
		if err := db.Create(&dup).Error; err != nil {
			t.Fatalf("reference after retirement: %v", err)
		}
		live, err := models.LiveImageByRef(db, f.inst.ID, "img-1")
		if err != nil || live.ID != dup.ID || live.ProductRef != "P" || live.AssetStatus != status.AssetReady || live.Width != 30 || live.Height != 40 {
			t.Fatalf("LiveImageByRef = %+v, %v", live, err)
		}
		if _, err := models.LiveImageByRef(db, f.inst.ID, "nope"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown ref: %v", err)
		}
		// GetProductImage sees retired rows but never another installation's.
		if got, err := models.GetProductImage(db, f.inst.ID, first.ID); err != nil || got.DeletedAt == nil {
			t.Fatalf("GetProductImage(retired) = %+v, %v", got, err)
		}
		if _, err := models.GetProductImage(db, f.other.ID, first.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("GetProductImage of another installation: %v", err)
		}
	})
}

// walkProducts pages through ListProducts with the given page size and returns the IDs in order;
// between pages it calls between (may be nil).
func walkProducts(t *testing.T, db *gorm.DB, instID string, size int, includeDeleted bool, between func(page int)) []string {
	t.Helper()
	var ids []string
	var cur *models.CatalogCursor
	for page := 0; page < 1000; page++ {
		rows, err := models.ListProducts(db, instID, cur, size, includeDeleted)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if len(rows) < size {
			return ids
		}
		last := rows[len(rows)-1]
		cur = &models.CatalogCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		if between != nil {
			between(page)
		}
	}
	t.Fatal("pagination does not end")
	return nil
}

func TestListProductsKeysetOrderCountsAndDeleted(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		// Seven products; three share one timestamp (ties break on id), one has sub-microsecond
		// offsets that PostgreSQL rounds away.
		var want []models.Product
		for i, at := range []time.Time{f.base, f.base.Add(time.Second), f.base.Add(time.Second), f.base.Add(time.Second),
			f.base.Add(2 * time.Second), f.base.Add(2*time.Second + 300*time.Nanosecond), f.base.Add(3 * time.Second)} {
			want = append(want, f.product(f.inst, fmt.Sprintf("P%d", i), at))
		}
		f.product(f.other, "P0", f.base) // another installation's product never shows
		deleted := f.product(f.inst, "GONE", f.base.Add(time.Second))
		if _, err := models.DeleteProduct(db, f.inst.ID, deleted.ID, f.base.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}

		// Counts: live images and live packshots only.
		p0 := want[0]
		f.image(f.inst, p0.ID, "i1", f.base)
		f.image(f.inst, p0.ID, "i2", f.base)
		gone := f.image(f.inst, p0.ID, "i3", f.base)
		if err := models.RetireProductImage(db, gone.ID, f.base); err != nil {
			t.Fatal(err)
		}
		f.packshot(f.inst, p0.ID, "s1", f.base)
		ds := f.packshot(f.inst, p0.ID, "s2", f.base)
		if _, err := models.DeletePackshot(db, f.inst.ID, ds.ID, f.base); err != nil {
			t.Fatal(err)
		}

		all, err := models.ListProducts(db, f.inst.ID, nil, 100, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(want) {
			t.Fatalf("ListProducts returned %d products, want %d", len(all), len(want))
		}
		for i := 1; i < len(all); i++ {
			a, b := all[i-1], all[i]
			if a.CreatedAt.After(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID >= b.ID) {
				t.Fatalf("not in (created_at, id) order at %d: %v/%s then %v/%s", i, a.CreatedAt, a.ID, b.CreatedAt, b.ID)
			}
		}
		for _, r := range all {
			wantImages, wantPackshots := int64(0), int64(0)
			if r.ID == p0.ID {
				wantImages, wantPackshots = 2, 1
			}
			if r.ImageCount != wantImages || r.PackshotCount != wantPackshots {
				t.Errorf("product %s counts = %d/%d, want %d/%d", r.ExternalRef, r.ImageCount, r.PackshotCount, wantImages, wantPackshots)
			}
			if r.DeletedAt != nil || r.SKU != "SKU-"+r.ExternalRef {
				t.Errorf("product %+v", r)
			}
		}

		// Every page size walks the same sequence, with nothing skipped or repeated.
		full := make([]string, len(all))
		for i, r := range all {
			full[i] = r.ID
		}
		for _, size := range []int{1, 2, 3, 7} {
			if got := walkProducts(t, db, f.inst.ID, size, false, nil); fmt.Sprint(got) != fmt.Sprint(full) {
				t.Fatalf("page size %d walked %v, want %v", size, got, full)
			}
		}
		// include_deleted adds the deleted product in its place.
		withDeleted := walkProducts(t, db, f.inst.ID, 2, true, nil)
		if len(withDeleted) != len(full)+1 {
			t.Fatalf("with deleted: %d products, want %d", len(withDeleted), len(full)+1)
		}
		found := false
		rows, _ := models.ListProducts(db, f.inst.ID, nil, 100, true)
		for _, r := range rows {
			if r.ID == deleted.ID {
				found = r.DeletedAt != nil
			}
		}
		if !found {
			t.Fatal("include_deleted does not list the deleted product with its deleted_at")
		}
	})
}

func TestListProductsStableWhileInserting(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		existing := map[string]bool{}
		for i := range 10 {
			existing[f.product(f.inst, fmt.Sprintf("OLD-%d", i), f.base.Add(time.Duration(i)*time.Millisecond)).ID] = true
		}
		added := map[string]bool{}
		now := f.base.Add(time.Minute)
		got := walkProducts(t, db, f.inst.ID, 3, false, func(page int) {
			// Between pages, new products are created.
			for j := range 2 {
				now = now.Add(time.Millisecond)
				added[f.product(f.inst, fmt.Sprintf("NEW-%d-%d", page, j), now).ID] = true
			}
		})
		seen := map[string]int{}
		for _, id := range got {
			seen[id]++
			if seen[id] > 1 {
				t.Fatalf("product %s listed twice", id)
			}
		}
		for id := range existing {
			if seen[id] != 1 {
				t.Fatalf("existing product %s skipped", id)
			}
		}
		// Products created during the walk come after everything seen, so the walk reaches them.
		for id := range added {
			if seen[id] != 1 {
				t.Fatalf("product %s created during the walk was not reached", id)
			}
		}
	})
}

func TestFindAndDeleteProduct(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		p := f.product(f.inst, "MUG", f.base)
		// A product whose external_ref is the other product's UUID: the ID wins.
		decoy := f.product(f.inst, p.ID, f.base.Add(time.Second))
		theirs := f.product(f.other, "THEIRS", f.base)
		img := f.image(f.inst, p.ID, "img", f.base)
		ps := f.packshot(f.inst, p.ID, "ps", f.base)

		for _, key := range []string{p.ID, "MUG"} {
			got, err := models.FindLiveProduct(db, f.inst.ID, key)
			if err != nil || got.ID != p.ID || got.ImageCount != 1 || got.PackshotCount != 1 {
				t.Fatalf("FindLiveProduct(%q) = %+v, %v", key, got, err)
			}
		}
		for _, key := range []string{theirs.ID, "THEIRS", "", "nope"} {
			if _, err := models.FindLiveProduct(db, f.inst.ID, key); !errors.Is(err, models.ErrNotFound) {
				t.Fatalf("FindLiveProduct(%q) err = %v, want ErrNotFound", key, err)
			}
		}
		// Another installation cannot delete it.
		if _, err := models.DeleteProduct(db, f.other.ID, p.ID, f.base); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("DeleteProduct from another installation: %v", err)
		}

		deletedAt := f.base.Add(time.Hour)
		got, err := models.DeleteProduct(db, f.inst.ID, "MUG", deletedAt)
		if err != nil || got.ID != p.ID || got.DeletedAt == nil {
			t.Fatalf("DeleteProduct = %+v, %v", got, err)
		}
		if _, err := models.DeleteProduct(db, f.inst.ID, "MUG", deletedAt); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("second DeleteProduct: %v", err)
		}
		if _, err := models.FindLiveProduct(db, f.inst.ID, "MUG"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("FindLiveProduct after delete: %v", err)
		}
		// The decoy (external_ref = the deleted product's ID) is now what the ID finds; once it
		// is deleted too, the ID finds nothing.
		if got, err := models.FindLiveProduct(db, f.inst.ID, p.ID); err != nil || got.ID != decoy.ID {
			t.Fatalf("FindLiveProduct(id of deleted) = %+v, %v; want the decoy", got, err)
		}
		if got, err := models.DeleteProduct(db, f.inst.ID, p.ID, deletedAt); err != nil || got.ID != decoy.ID {
			t.Fatalf("DeleteProduct(decoy's ref) = %+v, %v", got, err)
		}
		if _, err := models.DeleteProduct(db, f.inst.ID, p.ID, deletedAt); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("DeleteProduct(id of deleted) = %v, want ErrNotFound", err)
		}
		// Images and packshots stay.
		var n int64
		db.Model(&models.ProductImage{}).Where("id = ? AND deleted_at IS NULL", img.ID).Count(&n)
		if n != 1 {
			t.Fatal("the image of the deleted product is gone")
		}
		db.Model(&models.Packshot{}).Where("id = ? AND deleted_at IS NULL", ps.ID).Count(&n)
		if n != 1 {
			t.Fatal("the packshot of the deleted product is gone")
		}
		// The reference is free for a new product.
		again := f.product(f.inst, "MUG", f.base.Add(2*time.Hour))
		if got, err := models.FindLiveProduct(db, f.inst.ID, "MUG"); err != nil || got.ID != again.ID || got.ImageCount != 0 {
			t.Fatalf("re-registered MUG = %+v, %v", got, err)
		}
	})
}

func TestProductImagesAndPackshotsNewestFirst(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		p := f.product(f.inst, "P", f.base)
		other := f.product(f.inst, "Q", f.base)
		var imgs []models.ProductImage
		var shots []models.Packshot
		for i := range 5 {
			at := f.base.Add(time.Duration(i) * time.Second)
			imgs = append(imgs, f.image(f.inst, p.ID, fmt.Sprintf("i%d", i), at))
			shots = append(shots, f.packshot(f.inst, p.ID, fmt.Sprintf("s%d", i), at))
		}
		f.image(f.inst, other.ID, "q", f.base)
		f.packshot(f.inst, other.ID, "q", f.base)
		if err := models.RetireProductImage(db, imgs[4].ID, f.base); err != nil {
			t.Fatal(err)
		}
		if _, err := models.DeletePackshot(db, f.inst.ID, shots[4].ID, f.base); err != nil {
			t.Fatal(err)
		}
		// Awaiting upload: the image shows the asset's status.
		pending := f.asset(f.inst, status.AssetAwaitingUpload)
		db.Model(&models.ProductImage{}).Where("id = ?", imgs[3].ID).Update("asset_id", pending.ID)

		gotImgs, err := models.ProductImages(db, f.inst.ID, p.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotImgs) != 3 || gotImgs[0].ID != imgs[3].ID || gotImgs[1].ID != imgs[2].ID || gotImgs[2].ID != imgs[1].ID {
			t.Fatalf("ProductImages = %+v", gotImgs)
		}
		if gotImgs[0].AssetStatus != status.AssetAwaitingUpload || gotImgs[1].AssetStatus != status.AssetReady || gotImgs[1].ProductRef != "P" {
			t.Fatalf("image asset fields = %+v", gotImgs[:2])
		}
		gotShots, err := models.ProductPackshots(db, f.inst.ID, p.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotShots) != 4 || gotShots[0].ID != shots[3].ID || gotShots[3].ID != shots[0].ID || gotShots[0].ProductRef != "P" {
			t.Fatalf("ProductPackshots = %+v", gotShots)
		}
		// Scoped to the installation.
		if rows, _ := models.ProductImages(db, f.other.ID, p.ID, 10); len(rows) != 0 {
			t.Fatalf("another installation sees %d images", len(rows))
		}
		if rows, _ := models.ProductPackshots(db, f.other.ID, p.ID, 10); len(rows) != 0 {
			t.Fatalf("another installation sees %d packshots", len(rows))
		}
	})
}

func TestListAndDeletePackshots(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		a := f.product(f.inst, "A", f.base)
		b := f.product(f.inst, "B", f.base)
		gone := f.product(f.inst, "GONE", f.base)
		var shots []models.Packshot
		for i := range 6 {
			pid := a.ID
			if i%2 == 1 {
				pid = b.ID
			}
			shots = append(shots, f.packshot(f.inst, pid, fmt.Sprintf("ps-%d", i), f.base.Add(time.Duration(i/2)*time.Second)))
		}
		orphan := f.packshot(f.inst, gone.ID, "orphan", f.base)
		if _, err := models.DeleteProduct(db, f.inst.ID, gone.ID, f.base); err != nil {
			t.Fatal(err)
		}
		op := f.product(f.other, "A", f.base)
		theirs := f.packshot(f.other, op.ID, "ps-0", f.base)

		walk := func(ref string, size int) []string {
			var ids []string
			var cur *models.CatalogCursor
			for page := 0; ; page++ {
				if page > 100 {
					t.Fatal("pagination does not end")
				}
				rows, err := models.ListPackshots(db, f.inst.ID, ref, cur, size)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					ids = append(ids, r.ID)
					if r.DeletedAt != nil || r.ProductRef == "" {
						t.Fatalf("row %+v", r)
					}
				}
				if len(rows) < size {
					return ids
				}
				cur = &models.CatalogCursor{CreatedAt: rows[len(rows)-1].CreatedAt, ID: rows[len(rows)-1].ID}
			}
		}
		all := walk("", 100)
		if len(all) != 6 {
			t.Fatalf("ListPackshots = %d rows, want 6 (orphan of a deleted product and other installations left out)", len(all))
		}
		for _, size := range []int{1, 4} {
			if got := walk("", size); fmt.Sprint(got) != fmt.Sprint(all) {
				t.Fatalf("page size %d: %v, want %v", size, got, all)
			}
		}
		onlyB := walk("B", 2)
		if len(onlyB) != 3 {
			t.Fatalf("product_ref B: %d packshots, want 3", len(onlyB))
		}
		if got := walk("nope", 10); len(got) != 0 {
			t.Fatalf("unknown product_ref: %v", got)
		}

		// Delete by reference and by ID; twice is ErrNotFound; never another installation's.
		if _, err := models.DeletePackshot(db, f.inst.ID, theirs.ID, f.base); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("delete another installation's packshot: %v", err)
		}
		if _, err := models.DeletePackshot(db, f.other.ID, "ps-0", f.base); err != nil {
			t.Fatalf("other installation deletes its own ps-0: %v", err)
		}
		if _, err := models.DeletePackshot(db, f.inst.ID, "ps-0", f.base); err != nil {
			t.Fatalf("delete by ref: %v", err)
		}
		if _, err := models.DeletePackshot(db, f.inst.ID, shots[1].ID, f.base); err != nil {
			t.Fatalf("delete by id: %v", err)
		}
		for _, key := range []string{"ps-0", shots[0].ID, shots[1].ID, ""} {
			if _, err := models.DeletePackshot(db, f.inst.ID, key, f.base); !errors.Is(err, models.ErrNotFound) {
				t.Fatalf("second delete %q: %v", key, err)
			}
		}
		if got := walk("", 100); len(got) != 4 {
			t.Fatalf("after two deletes: %d packshots, want 4", len(got))
		}
		// The orphan is live (its product was deleted, it stays) and can still be deleted.
		if _, err := models.DeletePackshot(db, f.inst.ID, orphan.ID, f.base); err != nil {
			t.Fatal(err)
		}
	})
}

// FindOrCreateProduct called at once, each call in its own transaction, creates one product that
// every call returns; another installation's product with the same reference is another product,
// and a deleted one frees its reference for a new product.
func TestFindOrCreateProductConcurrently(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		fresh := func(inst *models.Installation) *models.Product {
			return &models.Product{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID,
				ExternalRef: "mug", DisplayName: "Mug", CreatedAt: f.base, UpdatedAt: f.base}
		}
		const callers = 12
		ids := make([]string, callers)
		created := make([]bool, callers)
		errs := make([]error, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				<-start
				errs[i] = db.Transaction(func(tx *gorm.DB) error {
					p, c, err := models.FindOrCreateProduct(tx, fresh(f.inst))
					if err == nil {
						ids[i], created[i] = p.ID, c
					}
					return err
				})
			})
		}
		close(start)
		wg.Wait()
		creators := 0
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Errorf("call %d returned product %s, call 0 %s", i, ids[i], ids[0])
			}
			if created[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Errorf("%d calls report creating the product, want 1", creators)
		}

		other, c, err := models.FindOrCreateProduct(db, fresh(f.other))
		if err != nil || !c || other.ID == ids[0] {
			t.Errorf("another installation's mug: %+v created=%v err=%v, want a new product", other, c, err)
		}
		if _, err := models.DeleteProduct(db, f.inst.ID, "mug", f.base); err != nil {
			t.Fatal(err)
		}
		again, c, err := models.FindOrCreateProduct(db, fresh(f.inst))
		if err != nil || !c || again.ID == ids[0] {
			t.Errorf("the mug after its deletion: %+v created=%v err=%v, want a new product", again, c, err)
		}
		if _, _, err := models.FindOrCreateProduct(db, &models.Product{ID: models.NewID(), ExternalRef: "x"}); err == nil {
			t.Error("a product without an installation was accepted")
		}
	})
}

// storePackshot inserts a packshot through the store, as POST /packshots does.
func (f *catalogFixture) storePackshot(inst *models.Installation, productID, ref string, at time.Time) (models.Packshot, error) {
	f.t.Helper()
	a := f.asset(inst, status.AssetReady)
	p := models.Packshot{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, ProductID: productID,
		AssetID: a.ID, ExternalRef: ref, Voting: models.VotingAccepted, VotingAt: &at, CreatedAt: at}
	return p, models.NewStore(f.db).CreatePackshot(f.t.Context(), &p)
}

// An installation has one live packshot per external_ref (packshots_live_ref): CreatePackshot
// answers ErrPackshotRefTaken for a second, and changes nothing. Packshots without a reference
// (every packshot a job produces) never collide, another installation has its own references, a
// deleted packshot frees its reference and an archived one, still in the catalog, does not.
func TestPackshotsLiveRefIndex(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newCatalogFixture(t, db)
		prod := f.product(f.inst, "P", f.base)
		first, err := f.storePackshot(f.inst, prod.ID, "ps-1", f.base)
		if err != nil {
			t.Fatal(err)
		}
		live := func(inst *models.Installation, ref string) int64 {
			var n int64
			if err := db.Model(&models.Packshot{}).Where("installation_id = ? AND external_ref = ? AND deleted_at IS NULL", inst.ID, ref).
				Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if _, err := f.storePackshot(f.inst, prod.ID, "ps-1", f.base.Add(time.Second)); !errors.Is(err, models.ErrPackshotRefTaken) {
			t.Fatalf("a second live ps-1: err = %v, want ErrPackshotRefTaken", err)
		}
		if n := live(f.inst, "ps-1"); n != 1 {
			t.Fatalf("live ps-1 after the refused insert: %d, want 1", n)
		}
		// A raw insert meets the index too: the store is not what keeps the reference unique.
		dup := first
		dup.ID = models.NewID()
		if err := db.Create(&dup).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("a raw insert of a second live ps-1: err = %v, want ErrDuplicatedKey", err)
		}
		for range 3 {
			if _, err := f.storePackshot(f.inst, prod.ID, "", f.base); err != nil {
				t.Fatalf("a packshot without a reference: %v", err)
			}
		}
		otherProd := f.product(f.other, "P", f.base)
		if _, err := f.storePackshot(f.other, otherProd.ID, "ps-1", f.base); err != nil {
			t.Fatalf("another installation's ps-1: %v", err)
		}

		// Archived (external API): still the installation's ps-1.
		testdb.MustExec(t, db, "UPDATE packshots SET archived_at = ? WHERE id = ?", f.base, first.ID)
		if _, err := f.storePackshot(f.inst, prod.ID, "ps-1", f.base.Add(time.Minute)); !errors.Is(err, models.ErrPackshotRefTaken) {
			t.Fatalf("ps-1 over an archived ps-1: err = %v, want ErrPackshotRefTaken", err)
		}
		// Deleted: the reference is free.
		if _, err := models.DeletePackshot(db, f.inst.ID, "ps-1", f.base.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		again, err := f.storePackshot(f.inst, prod.ID, "ps-1", f.base.Add(2*time.Minute))
		if err != nil {
			t.Fatalf("ps-1 after its deletion: %v", err)
		}
		if got, err := models.FindLivePackshot(db, f.inst.ID, "ps-1"); err != nil || got.ID != again.ID {
			t.Fatalf("ps-1 is %+v, %v; want the new packshot %s", got, err, again.ID)
		}
	})
}
