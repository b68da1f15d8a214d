package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"image"
	_ "image/jpeg" // decodes JPEG inputs
	_ "image/png"  // decodes PNG inputs

	_ "golang.org/x/image/webp" // decodes WebP inputs

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
		return renderPhotoShoot(req)
	case jobtype.Packshot:
		return renderPackshot(req)
	case jobtype.ModelIdea:
		return renderIdea(IdeaModel, req)
	case jobtype.SceneryIdea:
		return renderIdea(IdeaScenery, req)
	case jobtype.Video, jobtype.Reel:
		return renderVideo(ctx, req, p.VideoEncoder)
	}
	return nil, providers.Errorf(errorcat.InternalBug, "local provider cannot render job type %q", req.JobType)
}

// renderPhotoShoot composes the packshot of req into a scene. The matted packshot comes from
// inputCache: the jobs of one product share it, so only the first decodes and mattes it.
func renderPhotoShoot(req providers.Request) ([]providers.Output, error) {
	in, err := matteRequestInput(req, "photo shoot", "packshot", photoShootMatte)
	if err != nil {
		return nil, err
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
	img, _, err := composePhotoShoot(in, opts)
	if err != nil {
		return nil, providers.Errorf(errorcat.InputMissing, "render: %v", err)
	}
	return pngOutput(img)
}

// renderPackshot cuts the product out of the photo. A photo Packshot cannot use (one without a
// visible pixel) is an input problem, like an undecodable one. The matted photo comes from
// inputCache, like a photo shoot's packshot.
func renderPackshot(req providers.Request) ([]providers.Output, error) {
	in, err := matteRequestInput(req, "packshot", "product photo", packshotMatte)
	if err != nil {
		return nil, err
	}
	img, _ := composePackshot(in, PackshotOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	return pngOutput(img)
}

// renderIdea draws an idea from the preferences text in req.Prompt. Ideas have no inputs, so a
// failure (an aspect ratio or size the catalog should not have let through) is a bug.
func renderIdea(kind IdeaKind, req providers.Request) ([]providers.Output, error) {
	img, err := Idea(kind, req.Prompt, IdeaOptions{AspectRatio: req.AspectRatio, LongEdge: req.LongEdge, Seed: req.Seed})
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "render %s idea: %v", kind, err)
	}
	return pngOutput(img)
}

// matteRequestInput returns the first input of req, the image a job of kind needs, matted with
// spec for req's canvas. It looks the input up in inputCache before decoding it, so a hit costs a
// SHA-256 of the input file and no decode. A missing or undecodable input is INPUT_MISSING, and so
// is one matteInput refuses ("render: …"), exactly as without the cache; failures are not cached.
func matteRequestInput(req providers.Request, kind, what string, spec matteSpec) (mattedInput, error) {
	if len(req.Inputs) == 0 {
		return mattedInput{}, providers.Errorf(errorcat.InputMissing, "%s needs a %s input", kind, what)
	}
	compute := func() (mattedInput, error) {
		img, err := decodeInput(req, what)
		if err != nil {
			return mattedInput{}, err
		}
		in, err := matteInput(img, spec, req.AspectRatio, req.LongEdge)
		if err != nil {
			return mattedInput{}, providers.Errorf(errorcat.InputMissing, "render: %v", err)
		}
		return in, nil
	}
	w, h, err := CanvasSize(req.AspectRatio, req.LongEdge)
	if err != nil {
		return compute() // no canvas to key on: fail as an uncached render does
	}
	key := matteKey{sum: sha256.Sum256(req.Inputs[0].Data), w: w, h: h, spec: spec}
	return inputCache.get(key, compute)
}

// decodeImage decodes an image file; a variable so that tests can count decodes.
var decodeImage = func(data []byte) (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	return img, err
}

// decodeInput decodes the first input of req (there is one), the what of the job; an undecodable
// one is INPUT_MISSING.
func decodeInput(req providers.Request, what string) (image.Image, error) {
	img, err := decodeImage(req.Inputs[0].Data)
	if err != nil {
		return nil, providers.Errorf(errorcat.InputMissing, "%s is not a decodable image: %v", what, err)
	}
	return img, nil
}

// pngOutput encodes img as the attempt's single PNG output.
func pngOutput(img *image.NRGBA) ([]providers.Output, error) {
	data, err := EncodePNG(img)
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "encode: %v", err)
	}
	b := img.Bounds()
	return []providers.Output{{Data: data, ContentType: "image/png", Ext: ".png", Width: b.Dx(), Height: b.Dy()}}, nil
}
