package external_test

import (
	"errors"
	"fmt"
	"image/color"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/jobview"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// productPhoto describes a product photo stored directly in the database.
type productPhoto struct {
	account        string
	installation   *string // nil: the team account's own upload
	name, ref      string  // the product's display_name and external_ref
	assetStatus    string
	uploadExpires  *time.Time
	thumbnail      bool // the asset has a thumbnail
	created        time.Time
	productDeleted bool
	imageDeleted   bool
}

// storePhoto stores the product, asset and product_images rows of p and returns the photo's and
// the asset's IDs.
func (e *env) storePhoto(p productPhoto) (imageID, assetID string) {
	e.t.Helper()
	prod := models.Product{ID: models.NewID(), AccountID: p.account, InstallationID: p.installation, ExternalRef: p.ref,
		DisplayName: p.name, CreatedAt: p.created, UpdatedAt: p.created}
	if prod.ExternalRef == "" {
		prod.ExternalRef = prod.ID
	}
	if p.productDeleted {
		prod.DeletedAt = &p.created
	}
	a := models.Asset{ID: models.NewID(), AccountID: p.account, InstallationID: p.installation, Kind: models.AssetKindUpload,
		Status: p.assetStatus, ContentType: "image/png", BlobKey: "uploads/" + models.NewID(), UploadExpiresAt: p.uploadExpires,
		CreatedAt: p.created, UpdatedAt: p.created}
	if p.thumbnail {
		a.ThumbnailBlobKey = a.BlobKey + "/thumbnail"
	}
	img := models.ProductImage{ID: models.NewID(), AccountID: p.account, InstallationID: p.installation, ProductID: prod.ID,
		AssetID: a.ID, CreatedAt: p.created}
	img.ExternalRef = img.ID
	if p.imageDeleted {
		img.DeletedAt = &p.created
	}
	for _, row := range []any{&prod, &a, &img} {
		if err := e.db.Create(row).Error; err != nil {
			e.t.Fatal(err)
		}
	}
	return img.ID, a.ID
}

// productItems returns the items of a GET /products answer that holds every photo, checking the
// answer's shape: exactly products, count and has_more, count the number of items, has_more
// false, each item exactly the six fields.
func productItems(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	list, ok := body["products"].([]any)
	if !ok || len(body) != 3 || body["count"] != float64(len(list)) || body["has_more"] != false {
		t.Fatalf("GET /products = %v, want {products, count, has_more: false}", body)
	}
	out := make([]map[string]any, len(list))
	for i, raw := range list {
		item := raw.(map[string]any)
		checkProductKeys(t, item)
		out[i] = item
	}
	return out
}

func checkProductKeys(t *testing.T, item map[string]any) {
	t.Helper()
	var keys []string
	for k := range item {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[createdAt id livemode name status thumbnail]" {
		t.Fatalf("product item keys = %v, want createdAt id livemode name status thumbnail", keys)
	}
}

func productIDs(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it["id"].(string)
	}
	return out
}

func TestListProducts(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		other, otherKey := e.newAccount(external.ScopeRead)
		inst := models.Installation{ID: models.NewID(), AccountID: e.account, Name: "Shop", Status: "active",
			CreatedAt: e.now, UpdatedAt: e.now}
		if err := db.Create(&inst).Error; err != nil {
			t.Fatal(err)
		}
		at := func(minutes int) time.Time { return e.now.Add(time.Duration(minutes) * time.Minute) }

		uploaded, uploadedAsset := e.storePhoto(productPhoto{account: e.account, name: "Linen shirt",
			assetStatus: status.AssetReady, thumbnail: true, created: at(1)})
		catalog, catalogAsset := e.storePhoto(productPhoto{account: e.account, installation: &inst.ID, ref: "SKU-42",
			assetStatus: status.AssetReady, created: at(2)})
		processing, _ := e.storePhoto(productPhoto{account: e.account, installation: &inst.ID, name: "Cap", ref: "cap",
			assetStatus: status.AssetProcessing, thumbnail: true, created: at(3)})
		later, earlier := e.now.Add(time.Hour), e.now.Add(-time.Minute)
		awaiting, _ := e.storePhoto(productPhoto{account: e.account, installation: &inst.ID, name: "Scarf", ref: "scarf",
			assetStatus: status.AssetAwaitingUpload, uploadExpires: &later, created: at(3)})
		expired, _ := e.storePhoto(productPhoto{account: e.account, installation: &inst.ID, name: "Hat", ref: "hat",
			assetStatus: status.AssetAwaitingUpload, uploadExpires: &earlier, created: at(0)})
		invalid, _ := e.storePhoto(productPhoto{account: e.account, name: "Broken", assetStatus: status.AssetInvalid,
			thumbnail: true, created: at(4)})
		e.storePhoto(productPhoto{account: e.account, installation: &inst.ID, name: "Gone", ref: "gone",
			assetStatus: status.AssetReady, created: at(5), productDeleted: true})
		e.storePhoto(productPhoto{account: e.account, name: "Retired", assetStatus: status.AssetReady, created: at(6), imageDeleted: true})
		foreign, _ := e.storePhoto(productPhoto{account: other, name: "Theirs", assetStatus: status.AssetReady, created: at(7)})

		code, body := e.getAs(e.key, "/products")
		if code != http.StatusOK {
			t.Fatalf("GET /products = %d %v", code, body)
		}
		items := productItems(t, body)
		// Newest first; of the two photos of minute 3, the greater ID first.
		same := []string{processing, awaiting}
		sort.Sort(sort.Reverse(sort.StringSlice(same)))
		want := append([]string{invalid}, append(same, catalog, uploaded, expired)...)
		if got := productIDs(items); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		byID := map[string]map[string]any{}
		for _, it := range items {
			byID[it["id"].(string)] = it
		}
		for id, w := range map[string][2]string{
			uploaded:   {"Linen shirt", external.ProductUploaded},
			catalog:    {"SKU-42", external.ProductUploaded}, // no display name: the reference
			processing: {"Cap", external.ProductInProgress},
			awaiting:   {"Scarf", external.ProductInProgress},
			expired:    {"Hat", external.ProductFailed}, // its upload URL expired unused
			invalid:    {"Broken", external.ProductFailed},
		} {
			it := byID[id]
			if it["name"] != w[0] || it["status"] != w[1] {
				t.Errorf("%s: name %v status %v, want %s %s", id, it["name"], it["status"], w[0], w[1])
			}
			if w[1] != external.ProductUploaded && it["thumbnail"] != "" {
				t.Errorf("%s in status %s has thumbnail %v, want empty", id, w[1], it["thumbnail"])
			}
		}
		e.checkSigned(byID[uploaded]["thumbnail"], jobview.ThumbnailPath(uploadedAsset))
		e.checkSigned(byID[catalog]["thumbnail"], jobview.FilePath(catalogAsset)) // no thumbnail: the file

		// With the store's URLs (FILE_URLS=store, here under a CDN base), both come from the
		// store: the thumbnail's key, or the photo's own file when it has none; a purged file
		// keeps the API's URL, whose route answers 410.
		files, err := fileurl.Store(e.handler.Signer, nil, "https://cdn.example.com")
		if err != nil {
			t.Fatal(err)
		}
		e.handler.Files = files
		var uploadedRow, catalogRow models.Asset
		if err := db.Take(&uploadedRow, "id = ?", uploadedAsset).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Take(&catalogRow, "id = ?", catalogAsset).Error; err != nil {
			t.Fatal(err)
		}
		_, body = e.getAs(e.key, "/products")
		byStore := map[string]map[string]any{}
		for _, it := range productItems(t, body) {
			byStore[it["id"].(string)] = it
		}
		if got, want := byStore[uploaded]["thumbnail"], "https://cdn.example.com/"+uploadedRow.ThumbnailBlobKey; got != want {
			t.Errorf("store URLs: the uploaded photo's thumbnail = %v, want %s", got, want)
		}
		if got, want := byStore[catalog]["thumbnail"], "https://cdn.example.com/"+catalogRow.BlobKey; got != want {
			t.Errorf("store URLs: the photo without a thumbnail = %v, want its file %s", got, want)
		}
		if err := db.Model(&models.Asset{}).Where("id = ?", catalogAsset).Update("purged_at", e.now).Error; err != nil {
			t.Fatal(err)
		}
		_, body = e.getAs(e.key, "/products")
		for _, it := range productItems(t, body) {
			if it["id"] == catalog {
				e.checkSigned(it["thumbnail"], jobview.FilePath(catalogAsset))
			}
		}
		e.handler.Files = nil
		if created, err := time.Parse(time.RFC3339Nano, byID[uploaded]["createdAt"].(string)); err != nil || !created.Equal(at(1)) {
			t.Errorf("createdAt = %v, want %v", byID[uploaded]["createdAt"], at(1))
		}

		// Another account sees its own photos only.
		code, body = e.getAs(otherKey, "/products")
		if got := productIDs(productItems(t, body)); code != http.StatusOK || fmt.Sprint(got) != fmt.Sprint([]string{foreign}) {
			t.Errorf("the other account: %d %v", code, got)
		}
		// An account without photos: an empty list.
		_, emptyKey := e.newAccount(external.ScopeRead)
		code, body = e.getAs(emptyKey, "/products")
		if code != http.StatusOK || len(productItems(t, body)) != 0 {
			t.Errorf("empty account: %d %v", code, body)
		}
	})
}

func TestProductScopes(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		_, registerOnly := e.newAccount(external.ScopeRegister)
		_, readOnly := e.newAccount(external.ScopeRead)
		code, body := e.getAs(registerOnly, "/products")
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRead) {
			t.Errorf("GET without content.read: %d %v", code, body)
		}
		code, body = e.multipart(readOnly, http.MethodPost, "/products", []string{"name", "Shirt"},
			formFile{"file", "shirt.png", testimage.SolidPNG(t, 32, 32, color.NRGBA{200, 10, 10, 255})})
		if code != http.StatusForbidden || !strings.Contains(errorOf(t, body), external.ScopeRegister) {
			t.Errorf("POST without content.register: %d %v", code, body)
		}
		var n int64
		db.Model(&models.Product{}).Count(&n)
		if n != 0 || len(e.started("prepare-input/")) != 0 {
			t.Errorf("a refused upload stored %d products and started %v", n, e.started("prepare-input/"))
		}
	})
}

func TestUploadProduct(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		data := testimage.SolidPNG(t, 64, 48, color.NRGBA{10, 120, 200, 255})
		code, body := e.multipart(e.key, http.MethodPost, "/products", []string{"name", "  Linen shirt  ", "sku", " LS-1 "},
			formFile{"file", "shirt.png", data})
		if code != http.StatusOK || body["success"] != true || len(body) != 2 {
			t.Fatalf("POST /products = %d %v", code, body)
		}
		item := body["product"].(map[string]any)
		checkProductKeys(t, item)
		if item["name"] != "Linen shirt" || item["status"] != external.ProductInProgress || item["thumbnail"] != "" {
			t.Fatalf("product = %v", item)
		}

		var img models.ProductImage
		if err := db.Take(&img, "id = ?", item["id"]).Error; err != nil {
			t.Fatalf("photo %v: %v", item["id"], err)
		}
		var prod models.Product
		var asset models.Asset
		if err := db.Take(&prod, "id = ?", img.ProductID).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Take(&asset, "id = ?", img.AssetID).Error; err != nil {
			t.Fatal(err)
		}
		if img.AccountID != e.account || img.InstallationID != nil || img.ExternalRef != img.ID || img.DeletedAt != nil {
			t.Errorf("photo row = %+v", img)
		}
		if prod.AccountID != e.account || prod.InstallationID != nil || prod.ExternalRef != prod.ID ||
			prod.DisplayName != "Linen shirt" || prod.SKU != "LS-1" || prod.DeletedAt != nil {
			t.Errorf("product row = %+v", prod)
		}
		if asset.AccountID != e.account || asset.Kind != models.AssetKindUpload || asset.Status != status.AssetProcessing ||
			asset.ContentType != "image/png" || asset.Width != 64 || asset.Height != 48 || asset.Filename != "shirt.png" {
			t.Errorf("asset row = %+v", asset)
		}
		if stored, err := e.blobs.Get(t.Context(), asset.BlobKey); err != nil || string(stored) != string(data) {
			t.Errorf("stored file: %d bytes, %v", len(stored), err)
		}
		if got := e.started("prepare-input/"); fmt.Sprint(got) != fmt.Sprint([]string{"prepare-input/" + asset.ID}) {
			t.Errorf("preparations started = %v", got)
		}
		if created, err := time.Parse(time.RFC3339Nano, item["createdAt"].(string)); err != nil || !created.Equal(img.CreatedAt) {
			t.Errorf("createdAt = %v, want %v", item["createdAt"], img.CreatedAt)
		}

		// The list shows it, as the upload answered it.
		_, body = e.getAs(e.key, "/products")
		items := productItems(t, body)
		if len(items) != 1 || items[0]["id"] != item["id"] || items[0]["name"] != "Linen shirt" ||
			items[0]["status"] != external.ProductInProgress || items[0]["thumbnail"] != "" {
			t.Fatalf("GET /products after the upload = %v", items)
		}
		// Once prepared it is UPLOADED with its thumbnail.
		if err := db.Model(&asset).Updates(map[string]any{"status": status.AssetReady, "thumbnail_blob_key": asset.BlobKey + "/t"}).Error; err != nil {
			t.Fatal(err)
		}
		_, body = e.getAs(e.key, "/products")
		items = productItems(t, body)
		if items[0]["status"] != external.ProductUploaded {
			t.Fatalf("prepared photo = %v", items[0])
		}
		e.checkSigned(items[0]["thumbnail"], jobview.ThumbnailPath(asset.ID))

		// Without sku, the product has none.
		code, body = e.multipart(e.key, http.MethodPost, "/products", []string{"name", "Cap"},
			formFile{"file", "cap.png", data})
		if code != http.StatusOK {
			t.Fatalf("POST /products without sku = %d %v", code, body)
		}
		var capProduct models.Product
		if err := db.Take(&capProduct, "display_name = ?", "Cap").Error; err != nil || capProduct.SKU != "" {
			t.Errorf("product without sku = %+v, %v", capProduct, err)
		}
	})
}

func TestUploadProductRefusals(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 1000)
		png := testimage.SolidPNG(t, 32, 32, color.NRGBA{200, 10, 10, 255})
		image := formFile{"file", "shirt.png", png}
		for _, tc := range []struct {
			name   string
			fields []string
			files  []formFile
			field  string // the error names it
		}{
			{"missing name", nil, []formFile{image}, "name"},
			{"blank name", []string{"name", "   "}, []formFile{image}, "name"},
			{"name too long", []string{"name", strings.Repeat("é", 201)}, []formFile{image}, "name"},
			{"name twice", []string{"name", "a", "name", "b"}, []formFile{image}, "name"},
			{"sku too long", []string{"name", "Shirt", "sku", strings.Repeat("x", 101)}, []formFile{image}, "sku"},
			{"missing file", []string{"name", "Shirt"}, nil, "file"},
			{"file as text", []string{"name", "Shirt", "file", "hello"}, nil, "file"},
			{"two files", []string{"name", "Shirt"}, []formFile{image, image}, "file"},
			{"not an image", []string{"name", "Shirt"}, []formFile{{"file", "notes.txt", []byte("just some notes")}}, "file"},
			{"text named .png", []string{"name", "Shirt"}, []formFile{{"file", "shirt.png", []byte("not a PNG at all, only text")}}, "file"},
			{"empty file", []string{"name", "Shirt"}, []formFile{{"file", "shirt.png", nil}}, "file"},
			{"unknown field", []string{"name", "Shirt", "color", "red"}, []formFile{image}, "color"},
			{"unknown file field", []string{"name", "Shirt"}, []formFile{image, {"cover", "c.png", png}}, "cover"},
		} {
			code, body := e.multipart(e.key, http.MethodPost, "/products", tc.fields, tc.files...)
			if code != http.StatusBadRequest {
				t.Errorf("%s: %d %v, want 400", tc.name, code, body)
				continue
			}
			if msg := errorOf(t, body); !strings.Contains(msg, tc.field) {
				t.Errorf("%s: error %q does not name %s", tc.name, msg, tc.field)
			}
		}
		// A body that is not a multipart form.
		code, body := e.post(e.key, "/products", map[string]string{"name": "Shirt"})
		if code != http.StatusBadRequest {
			t.Errorf("JSON body: %d %v, want 400", code, body)
		}
		errorOf(t, body)

		for _, table := range []any{&models.Product{}, &models.ProductImage{}, &models.Asset{}} {
			var n int64
			if err := db.Model(table).Count(&n).Error; err != nil || n != 0 {
				t.Errorf("%T: %d rows after refused uploads (%v)", table, n, err)
			}
		}
		if got := e.started("prepare-input/"); len(got) != 0 {
			t.Errorf("refused uploads started %v", got)
		}
	})
}

// TestUploadProductRollsBack checks that a transaction that fails leaves no row and no file.
func TestUploadProductRollsBack(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	e := newEnv(t, db, 1000)
	var blobKey string
	if err := db.Callback().Create().Before("gorm:create").Register("test:fail_photo", func(tx *gorm.DB) {
		switch a := tx.Statement.Dest.(type) {
		case *models.Asset:
			blobKey = a.BlobKey
		case *models.ProductImage:
			_ = tx.AddError(errors.New("injected failure"))
		}
	}); err != nil {
		t.Fatal(err)
	}
	code, body := e.multipart(e.key, http.MethodPost, "/products", []string{"name", "Shirt"},
		formFile{"file", "shirt.png", testimage.SolidPNG(t, 32, 32, color.NRGBA{200, 10, 10, 255})})
	if code != http.StatusInternalServerError {
		t.Fatalf("POST /products with a failing transaction = %d %v", code, body)
	}
	errorOf(t, body)
	if blobKey == "" {
		t.Fatal("the asset row was never created")
	}
	if _, err := e.blobs.Get(t.Context(), blobKey); err == nil {
		t.Errorf("the file %s is still stored", blobKey)
	}
	for _, table := range []any{&models.Product{}, &models.ProductImage{}, &models.Asset{}} {
		var n int64
		if err := db.Model(table).Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%T: %d rows after a failed upload (%v)", table, n, err)
		}
	}
	if got := e.started("prepare-input/"); len(got) != 0 {
		t.Errorf("a failed upload started %v", got)
	}
}
