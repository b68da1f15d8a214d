package local

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg" // decodes JPEG inputs
	_ "image/png"  // decodes PNG inputs

	_ "golang.org/x/image/webp" // decodes WebP inputs

	"github.com/shotflow/shotflow/activities/generate"
	"github.com/shotflow/shotflow/internal/errorcat"
	"github.com/shotflow/shotflow/models"
)

// Provider is the built-in offline generator: real image work in Go, deterministic per seed.
type Provider struct{}

// Generate renders the outputs of one attempt.
func (Provider) Generate(ctx context.Context, req generate.Request) ([]generate.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, generate.Errorf(errorcat.TransientInfra, "cancelled before rendering: %v", err)
	}
	switch req.JobType {
	case models.JobTypePhotoShoot:
		return renderPhotoShoot(req)
	}
	return nil, generate.Errorf(errorcat.InternalBug, "local provider cannot render job type %q", req.JobType)
}

func renderPhotoShoot(req generate.Request) ([]generate.Output, error) {
	if len(req.Inputs) == 0 {
		return nil, generate.Errorf(errorcat.InputMissing, "photo shoot needs a packshot input")
	}
	packshot, _, err := image.Decode(bytes.NewReader(req.Inputs[0].Data))
	if err != nil {
		return nil, generate.Errorf(errorcat.InputMissing, "packshot is not a decodable image: %v", err)
	}
	opts := PhotoShootOptions{
		AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed,
		Style: req.Session.Style, Suggestions: req.Session.Suggestions,
	}
	if req.Scenery != nil {
		if scene, _, err := image.Decode(bytes.NewReader(req.Scenery.Data)); err == nil {
			opts.Scenery = scene
		}
	}
	img, err := PhotoShoot(packshot, opts)
	if err != nil {
		return nil, generate.Errorf(errorcat.InputMissing, "render: %v", err)
	}
	data, err := EncodePNG(img)
	if err != nil {
		return nil, generate.Errorf(errorcat.InternalBug, "encode: %v", err)
	}
	b := img.Bounds()
	return []generate.Output{{Data: data, ContentType: "image/png", Ext: ".png", Width: b.Dx(), Height: b.Dy()}}, nil
}
