// Package local is the built-in offline provider: the adapter that serves the "local" models by
// rendering jobs with internal/media/render (images) and internal/media/video (videos and reels),
// mapping their failures to error categories.
package local

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/jpeg" // decodes JPEG inputs
	_ "image/png"  // decodes PNG inputs

	_ "golang.org/x/image/webp" // decodes WebP inputs

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// Name is the provider's name in the registry and in catalog model IDs (local/<model>).
const Name = "local"

// The local provider's models (the part of a catalog model ID after "local/").
const (
	// StudioModel renders images: photo shoots, packshots and model and scenery ideas.
	StudioModel = "studio-v1"
	// MotionModel renders videos and reels.
	MotionModel = "motion-v1"
)

// Provider is the built-in offline generator: real image work in Go, deterministic per seed.
type Provider struct {
	// VideoEncoder is internal/media/video's encoder for videos and reels: "" (ffmpeg when installed,
	// else pure Go), "ffmpeg" or "go".
	VideoEncoder string
	// Mattes keeps the matted packshots and product photos of this provider's renders, so the
	// jobs of one product decode and matte their input once (a worker's holds at most
	// render.MatteCacheBytes). It is the provider's own, injected by whoever builds it: nothing is
	// shared with another provider or another test. Nil renders every job without a cache.
	Mattes *render.MatteCache
	// Sceneries keeps the decoded scene images of photo shoots by blob key, so the jobs of a
	// session decode their scenery once; nil decodes it for every job.
	Sceneries *SceneryCache
}

// Serves reports whether the local model generates jobs of jobType: StudioModel every image job
// type, MotionModel videos and reels.
func (Provider) Serves(model, jobType string) bool {
	switch model {
	case StudioModel:
		switch jobType {
		case jobtype.PhotoShoot, jobtype.Packshot, jobtype.ModelIdea, jobtype.SceneryIdea:
			return true
		}
	case MotionModel:
		return jobType == jobtype.Video || jobType == jobtype.Reel
	}
	return false
}

// Generate renders the outputs of one attempt. It dispatches on the job type alone, so a caller
// that checked Serves (or a simulated model standing in for one) gets the same pixels.
func (p Provider) Generate(ctx context.Context, req providers.Request) ([]providers.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, providers.Errorf(errorcat.TransientInfra, "cancelled before rendering: %v", err)
	}
	switch req.JobType {
	case jobtype.PhotoShoot:
		return renderPhotoShoot(p.Mattes, p.Sceneries, req)
	case jobtype.Packshot:
		return renderPackshot(p.Mattes, req)
	case jobtype.ModelIdea:
		return renderIdea(render.IdeaModel, req)
	case jobtype.SceneryIdea:
		return renderIdea(render.IdeaScenery, req)
	case jobtype.Video, jobtype.Reel:
		return renderVideo(ctx, req, p.VideoEncoder)
	}
	return nil, providers.Errorf(errorcat.InternalBug, "local provider cannot render job type %q", req.JobType)
}

// renderPhotoShoot composes the packshot of req into a scene. mattes keeps the matted packshot:
// the jobs of one product share it, so only the first decodes and mattes it; sceneries (when not
// nil) keeps the decoded scene image the same way, by its blob key.
func renderPhotoShoot(mattes *render.MatteCache, sceneries *SceneryCache, req providers.Request) ([]providers.Output, error) {
	if len(req.Inputs) == 0 {
		return nil, providers.Errorf(errorcat.InputMissing, "photo shoot needs a packshot input")
	}
	opts := render.PhotoShootOptions{
		AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed,
		Style: req.Session.Style, Suggestions: req.Session.Suggestions,
	}
	if req.Scenery != nil {
		var scene image.Image
		var err error
		if sceneries != nil {
			scene, err = sceneries.Image(req.Scenery.Key, req.Scenery.Data)
		} else {
			scene, _, err = image.Decode(bytes.NewReader(req.Scenery.Data))
		}
		if err == nil {
			opts.Scenery = scene
		}
	}
	img, err := mattes.PhotoShootFile(req.Inputs[0].Data, opts)
	if err != nil {
		return nil, inputFailure(err, "packshot")
	}
	return pngOutput(img, req.Watermark)
}

// renderPackshot cuts the product out of the photo. A photo the renderer cannot use (one without a
// visible pixel) is an input problem, like an undecodable one. mattes keeps the matted photo,
// like a photo shoot's packshot.
func renderPackshot(mattes *render.MatteCache, req providers.Request) ([]providers.Output, error) {
	if len(req.Inputs) == 0 {
		return nil, providers.Errorf(errorcat.InputMissing, "packshot needs a product photo input")
	}
	img, err := mattes.PackshotFile(req.Inputs[0].Data, render.PackshotOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	if err != nil {
		return nil, inputFailure(err, "product photo")
	}
	return pngOutput(img, req.Watermark)
}

// inputFailure is the INPUT_MISSING failure of a render from the job's input file, the what of the
// job: a file that is not a decodable image, or one the renderer refuses (no visible pixel, no
// canvas of the request's aspect ratio and long edge), in the renderer's words.
func inputFailure(err error, what string) error {
	if de, ok := errors.AsType[*render.DecodeError](err); ok {
		return providers.Errorf(errorcat.InputMissing, "%s is not a decodable image: %v", what, de.Err)
	}
	return providers.Errorf(errorcat.InputMissing, "%v", err)
}

// renderIdea draws an idea from the preferences text in req.Prompt. Ideas have no inputs, so a
// failure (an aspect ratio or size the catalog should not have let through) is a bug.
func renderIdea(kind render.IdeaKind, req providers.Request) ([]providers.Output, error) {
	img, err := render.Idea(kind, req.Prompt, render.IdeaOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "render %s idea: %v", kind, err)
	}
	return pngOutput(img, req.Watermark)
}

// pngOutput encodes img as the attempt's single PNG output, watermarked "TEST" first when
// watermark is set (a test-mode job). img is the render's own, never a cached one.
func pngOutput(img *image.NRGBA, watermark bool) ([]providers.Output, error) {
	if watermark {
		render.DrawWatermark(img)
	}
	data, err := render.EncodePNG(img)
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "encode: %v", err)
	}
	b := img.Bounds()
	return []providers.Output{{Data: data, ContentType: "image/png", Ext: ".png", Width: b.Dx(), Height: b.Dy()}}, nil
}
