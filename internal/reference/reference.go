// Package reference seeds the shared reference data, the marketplace's fashion models and
// sceneries and the system presets (models/seed/reference.json), and renders their images.
//
// The images are drawn in Go, offline and deterministically, by internal/media/drawing: a scenery
// is the renderer's procedural backdrop of its preferences, a fashion model a drawn figure in front
// of a studio backdrop, a preset image a drawn product photographed by the renderer in the image's
// style. They are stored as JPEG files under models.ReferenceBlobKey. Seed renders every missing
// file; Image renders a missing one on first use, so a blob store that lost them, or a process
// that only seeded the rows, still serves every thumbnail.
package reference

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"runtime"
	"sync"

	"github.com/shotflow/shotflow/internal/media/drawing"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/models"
)

// ContentType is the media type of every rendered reference image.
const ContentType = "image/jpeg"

// jpegQuality is the JPEG quality of the stored images.
const jpegQuality = 85

// Recipe draws one seeded image.
type Recipe func() (image.Image, error)

var (
	recipesOnce  sync.Once
	recipesByKey map[string]Recipe
	recipesErr   error
)

// recipes maps the blob key of every seeded image to how it is drawn.
func recipes() (map[string]Recipe, error) {
	recipesOnce.Do(func() {
		seed, err := models.LoadReferenceSeed()
		if err != nil {
			recipesErr = err
			return
		}
		recipesByKey = Recipes(seed)
	})
	return recipesByKey, recipesErr
}

// Recipes maps the blob key of every image of the seed to how it is drawn.
func Recipes(seed *models.ReferenceSeed) map[string]Recipe {
	out := map[string]Recipe{}
	for _, sc := range seed.Sceneries {
		out[models.ReferenceBlobKey("sceneries", sc.ID)] = func() (image.Image, error) {
			return drawing.Scenery(sc.Preferences, sc.Seed)
		}
	}
	for _, m := range seed.FashionModels {
		out[models.ReferenceBlobKey("models", m.ID)] = func() (image.Image, error) {
			return drawing.FashionModel(drawing.Look(m.Look), m.Backdrop, m.Seed)
		}
	}
	for _, p := range seed.Presets {
		images := p.Gallery
		ratios := make([]string, len(images))
		for i := range ratios {
			ratios[i] = "4:5"
		}
		if p.Cover != nil {
			images = append([]models.SeedPresetImage{*p.Cover}, images...)
			ratios = append([]string{"1:1"}, ratios...)
		}
		for i, img := range images {
			out[models.ReferenceBlobKey("presets", img.ID)] = func() (image.Image, error) {
				return drawing.PresetImage(drawing.Product(img.Product), img.Style, img.Seed, ratios[i])
			}
		}
	}
	return out
}

// Render draws the seeded image stored under key and encodes it as JPEG; ok is false when key is
// not a seeded image.
func Render(key string) (data []byte, ok bool, err error) {
	rs, err := recipes()
	if err != nil {
		return nil, false, err
	}
	r, ok := rs[key]
	if !ok {
		return nil, false, nil
	}
	data, err = encode(r)
	return data, true, err
}

func encode(r Recipe) ([]byte, error) {
	img, err := r()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, opaque(img), &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// opaque drops the alpha channel (every rendered image is opaque already).
func opaque(img image.Image) image.Image {
	n, ok := img.(*image.NRGBA)
	if !ok {
		return img
	}
	out := image.NewRGBA(n.Rect)
	for i := 0; i < len(n.Pix); i += 4 {
		out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = n.Pix[i], n.Pix[i+1], n.Pix[i+2], 255
	}
	return out
}

var keyLocks sync.Map // blob key → *sync.Mutex: one render per key at a time in this process

// Image returns the file stored under key. A seeded image the blob store lacks is rendered and
// stored first (renders are deterministic, so processes racing on it write the same bytes). Any
// other missing key is blobstore.ErrNotFound.
func Image(ctx context.Context, blobs *blobstore.Store, key string) ([]byte, error) {
	data, err := blobs.Get(ctx, key)
	if !errors.Is(err, blobstore.ErrNotFound) {
		return data, err
	}
	rs, err := recipes()
	if err != nil {
		return nil, err
	}
	r, ok := rs[key]
	if !ok {
		return nil, blobstore.ErrNotFound
	}
	mu, _ := keyLocks.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if data, err := blobs.Get(ctx, key); err == nil {
		return data, nil
	}
	return renderAndStore(ctx, blobs, key, r)
}

func renderAndStore(ctx context.Context, blobs *blobstore.Store, key string, r Recipe) ([]byte, error) {
	data, err := encode(r)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", key, err)
	}
	if err := blobs.Put(ctx, key, data, ContentType); err != nil {
		return nil, fmt.Errorf("store %s: %w", key, err)
	}
	return data, nil
}

// RenderMissing renders and stores every seeded image the blob store lacks, on all CPUs, and
// returns how many it rendered.
func RenderMissing(ctx context.Context, blobs *blobstore.Store) (int, error) {
	rs, err := recipes()
	if err != nil {
		return 0, err
	}
	var missing []string
	for key := range rs {
		rc, _, err := blobs.Open(ctx, key)
		if err == nil {
			rc.Close()
			continue
		}
		if !errors.Is(err, blobstore.ErrNotFound) {
			return 0, err
		}
		missing = append(missing, key)
	}
	work := make(chan string)
	errs := make(chan error, len(missing))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(1, len(missing))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range work {
				if ctx.Err() != nil {
					continue // stopping: the rest are drawn when first downloaded
				}
				if _, err := Image(ctx, blobs, key); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, key := range missing {
		work <- key
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("render reference images: %w", err)
	}
	return len(missing), ctx.Err()
}

// Seed writes the reference rows (models.SeedReference) and, when render is true, renders every
// missing image into the blob store. Both steps are idempotent; without render, images are drawn
// when first downloaded.
func Seed(ctx context.Context, st *models.Store, blobs *blobstore.Store, render bool) error {
	if err := st.SeedReference(ctx); err != nil {
		return fmt.Errorf("seed reference data: %w", err)
	}
	if !render {
		return nil
	}
	if _, err := RenderMissing(ctx, blobs); err != nil {
		return fmt.Errorf("render reference images: %w", err)
	}
	return nil
}
