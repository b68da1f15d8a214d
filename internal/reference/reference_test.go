package reference_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"testing"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/reference"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

func seed(t *testing.T) *models.ReferenceSeed {
	t.Helper()
	s, err := models.LoadReferenceSeed()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func blobs(t *testing.T) *blobstore.Store {
	t.Helper()
	b, err := blobstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// meanDiff is the mean absolute channel difference of two images of the same size.
func meanDiff(a, b image.Image) float64 {
	var sum, n float64
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			for _, d := range []int64{int64(r1) - int64(r2), int64(g1) - int64(g2), int64(b1) - int64(b2)} {
				sum += float64(max(d, -d)) / 257
				n++
			}
		}
	}
	return sum / n
}

func TestEverySeededImageHasARecipe(t *testing.T) {
	t.Parallel()
	s := seed(t)
	rs := reference.Recipes(s)
	want := len(s.FashionModels) + len(s.Sceneries)
	for _, p := range s.Presets {
		want += 1 + len(p.Gallery)
	}
	if len(rs) != want {
		t.Fatalf("%d recipes, want %d", len(rs), want)
	}
	for _, m := range s.FashionModels {
		if rs[models.ReferenceBlobKey("models", m.ID)] == nil {
			t.Errorf("model %s has no recipe", m.Name)
		}
	}
}

func TestRenderedImagesAreDeterministicSizedAndDistinct(t *testing.T) {
	t.Parallel()
	s := seed(t)
	cases := []struct {
		key  string
		w, h int
	}{
		{models.ReferenceBlobKey("sceneries", s.Sceneries[0].ID), 1024, 768},
		{models.ReferenceBlobKey("sceneries", s.Sceneries[1].ID), 1024, 768},
		{models.ReferenceBlobKey("models", s.FashionModels[0].ID), 512, 640},
		{models.ReferenceBlobKey("presets", s.Presets[0].Cover.ID), 640, 640},
		{models.ReferenceBlobKey("presets", s.Presets[0].Gallery[0].ID), 512, 640},
	}
	var imgs []image.Image
	for _, c := range cases {
		data, ok, err := reference.Render(c.key)
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", c.key, ok, err)
		}
		again, _, err := reference.Render(c.key)
		if err != nil || !bytes.Equal(data, again) {
			t.Errorf("%s: two renders differ (err %v)", c.key, err)
		}
		img := decode(t, data)
		if img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h {
			t.Errorf("%s is %v, want %dx%d", c.key, img.Bounds(), c.w, c.h)
		}
		imgs = append(imgs, img)
	}
	if d := meanDiff(imgs[0], imgs[1]); d < 10 {
		t.Errorf("two sceneries differ by only %.1f per channel", d)
	}
	// The model is drawn: the picture differs from its bare backdrop around the figure.
	m := s.FashionModels[0]
	bare, err := render.Backdrop(render.PhotoShootOptions{AspectRatio: "4:5", LongEdge: 640, Seed: m.Seed, Style: m.Backdrop})
	if err != nil {
		t.Fatal(err)
	}
	figure := image.Rect(206, 100, 306, 560)
	if d := meanDiff(imgs[2].(interface {
		image.Image
		SubImage(image.Rectangle) image.Image
	}).SubImage(figure), bare.SubImage(figure)); d < 20 {
		t.Errorf("the figure changes its backdrop by only %.1f per channel", d)
	}
	if _, ok, err := reference.Render("reference/v1/sceneries/unknown.jpg"); ok || err != nil {
		t.Errorf("unknown key: ok %v, err %v", ok, err)
	}
}

func TestImageDrawsAMissingFileOnceAndStoresIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := blobs(t)
	key := models.ReferenceBlobKey("sceneries", seed(t).Sceneries[2].ID)
	if _, err := b.Get(ctx, key); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("stored before use: %v", err)
	}
	data, err := reference.Image(ctx, b, key)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := b.Get(ctx, key)
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored %d bytes (err %v), served %d", len(stored), err, len(data))
	}
	// A stored file is served as it is, never redrawn.
	if err := b.Put(ctx, key, []byte("kept"), reference.ContentType); err != nil {
		t.Fatal(err)
	}
	if got, err := reference.Image(ctx, b, key); err != nil || string(got) != "kept" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := reference.Image(ctx, b, "reference/v1/sceneries/"+models.NewID()+".jpg"); !errors.Is(err, blobstore.ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestRenderMissingDrawsOnlyWhatIsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := blobs(t)
	s := seed(t)
	missing := []string{models.ReferenceBlobKey("models", s.FashionModels[1].ID), models.ReferenceBlobKey("sceneries", s.Sceneries[3].ID)}
	for key := range reference.Recipes(s) {
		if key != missing[0] && key != missing[1] {
			if err := b.Put(ctx, key, []byte("stored"), reference.ContentType); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := reference.RenderMissing(ctx, b)
	if err != nil || n != 2 {
		t.Fatalf("RenderMissing = %d, %v; want 2", n, err)
	}
	for _, key := range missing {
		data, err := b.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, data)
	}
	if n, err := reference.RenderMissing(ctx, b); err != nil || n != 0 {
		t.Errorf("second RenderMissing = %d, %v; want 0", n, err)
	}
}

func TestSeedWritesTheRows(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	b := blobs(t)
	for range 2 {
		if err := reference.Seed(context.Background(), models.NewStore(db), b, false); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := db.Table("sceneries").Where("account_id IS NULL").Count(&n).Error; err != nil || n != int64(len(seed(t).Sceneries)) {
		t.Errorf("%d sceneries (err %v)", n, err)
	}
}
