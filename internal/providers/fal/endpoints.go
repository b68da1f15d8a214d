package fal

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// endpoint is one fal model endpoint behind a catalog model fal/<name>.
type endpoint struct {
	id       string   // fal endpoint ID, the path of the submit URL
	jobTypes []string // the job types it serves
	// ratios maps each catalog aspect ratio the endpoint renders to the value of its size input
	// (aspect_ratio or image_size); the value is "" where the endpoint has no such input.
	ratios map[string]string
	input  func(req providers.Request, ratio string) (any, error)
	video  bool // the output is a video, not images
}

// endpoints maps the catalog model names (the part after "fal/") to fal endpoints. The input and
// output shapes are those of the model API pages cited below, as generated into fal-js
// (FluxKontextInput, FluxDevInput, KlingVideoV2MasterImageToVideoInput and their outputs in
// libs/client/src/types/endpoints.ts).
var endpoints = map[string]endpoint{
	"flux-pro-kontext": {
		id:       "fal-ai/flux-pro/kontext",
		jobTypes: []string{jobtype.PhotoShoot, jobtype.Packshot},
		// aspect_ratio enum of https://fal.ai/models/fal-ai/flux-pro/kontext/api: 21:9, 16:9, 4:3,
		// 3:2, 1:1, 2:3, 3:4, 9:16, 9:21 (no 4:5); the catalog ratios it has pass through.
		ratios: map[string]string{
			"1:1": "1:1", "3:4": "3:4", "2:3": "2:3", "9:16": "9:16", "4:3": "4:3", "3:2": "3:2", "16:9": "16:9",
		},
		input: kontextInput,
	},
	"flux-dev": {
		id:       "fal-ai/flux/dev",
		jobTypes: []string{jobtype.ModelIdea, jobtype.SceneryIdea},
		// image_size enum of https://fal.ai/models/fal-ai/flux/dev/api.
		ratios: map[string]string{
			"1:1": "square_hd", "3:4": "portrait_4_3", "9:16": "portrait_16_9", "4:3": "landscape_4_3", "16:9": "landscape_16_9",
		},
		input: fluxDevInput,
	},
	"kling-video-v2.1": {
		id:       "fal-ai/kling-video/v2.1/standard/image-to-video",
		jobTypes: []string{jobtype.Video},
		// https://fal.ai/models/fal-ai/kling-video/v2.1/standard/image-to-video/api has no size
		// input: the video takes the shape of its input image.
		ratios: map[string]string{"1:1": "", "9:16": "", "16:9": ""},
		input:  klingInput,
		video:  true,
	},
}

// request builds the JSON input of the endpoint for req, or fails without calling fal when req
// cannot be served: INPUT_MISSING without its input image, INTERNAL_BUG for an aspect ratio the
// endpoint cannot render (the catalog and the table disagree).
func (ep endpoint) request(req providers.Request) (any, error) {
	ar := req.AspectRatio
	if ar == "" {
		ar = "1:1" // the catalog's default aspect ratio
	}
	ratio, ok := ep.ratios[ar]
	if !ok {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: %s cannot render aspect ratio %q", Name, ep.id, ar)
	}
	return ep.input(req, ratio)
}

// kontextRequest is the input of fal-ai/flux-pro/kontext
// (https://fal.ai/models/fal-ai/flux-pro/kontext/api).
type kontextRequest struct {
	Prompt          string `json:"prompt"`
	ImageURL        string `json:"image_url"`
	Seed            int64  `json:"seed"`
	AspectRatio     string `json:"aspect_ratio"`
	OutputFormat    string `json:"output_format"`    // jpeg or png
	NumImages       int    `json:"num_images"`       // 1 to 4
	SafetyTolerance string `json:"safety_tolerance"` // "1" (strict) to "6"; the page's default is "2"
}

// fluxDevRequest is the input of fal-ai/flux/dev (https://fal.ai/models/fal-ai/flux/dev/api).
type fluxDevRequest struct {
	Prompt              string `json:"prompt"`
	ImageSize           string `json:"image_size"`
	Seed                int64  `json:"seed"`
	NumImages           int    `json:"num_images"`
	EnableSafetyChecker bool   `json:"enable_safety_checker"`
}

// klingRequest is the input of fal-ai/kling-video/v2.1/standard/image-to-video
// (https://fal.ai/models/fal-ai/kling-video/v2.1/standard/image-to-video/api). cfg_scale is left
// at the page's default of 0.5. The endpoint takes no seed.
type klingRequest struct {
	Prompt         string `json:"prompt"`
	ImageURL       string `json:"image_url"`
	Duration       string `json:"duration"` // "5" or "10" seconds
	NegativePrompt string `json:"negative_prompt"`
}

// videoSeconds is the duration of the videos asked of Kling.
const videoSeconds = 5

// VideoDuration is the Duration of the videos the fal provider returns.
const VideoDuration = videoSeconds * time.Second

func kontextInput(req providers.Request, ratio string) (any, error) {
	img, err := inputImage(req)
	if err != nil {
		return nil, err
	}
	prompt := packshotPrompt
	if req.JobType == jobtype.PhotoShoot {
		// Kontext [pro] edits one image: a scene image (req.Scenery) cannot be sent along, so the
		// scene comes from the session's style and suggestions.
		prompt = photoShootPrompt(req.Session)
	}
	return kontextRequest{
		Prompt: prompt, ImageURL: img, Seed: seed(req.Seed), AspectRatio: ratio,
		OutputFormat: "png", NumImages: 1, SafetyTolerance: "2",
	}, nil
}

func fluxDevInput(req providers.Request, size string) (any, error) {
	prompt := sceneryIdeaPrompt(req.Prompt)
	if req.JobType == jobtype.ModelIdea {
		prompt = modelIdeaPrompt(req.Prompt)
	}
	return fluxDevRequest{
		Prompt: prompt, ImageSize: size, Seed: seed(req.Seed), NumImages: 1, EnableSafetyChecker: true,
	}, nil
}

func klingInput(req providers.Request, _ string) (any, error) {
	img, err := inputImage(req)
	if err != nil {
		return nil, err
	}
	return klingRequest{
		Prompt: videoPrompt(req.Prompt), ImageURL: img, Duration: strconv.Itoa(videoSeconds),
		NegativePrompt: videoNegativePrompt,
	}, nil
}

// inputImage returns the first input of req as a data URI, or INPUT_MISSING when there is none.
func inputImage(req providers.Request) (string, error) {
	if len(req.Inputs) == 0 || len(req.Inputs[0].Data) == 0 {
		return "", providers.Errorf(errorcat.InputMissing, "%s: %s job %s has no input image", Name, req.JobType, req.JobID)
	}
	return providers.DataURI(req.Inputs[0]), nil
}

// seed maps a request seed onto [0, 2^31). The model pages type seed as a plain integer without a
// range; keeping it below 2^31 fits any 32-bit field, signed or not, behind the endpoints.
func seed(s int64) int64 { return s & math.MaxInt32 }

// keepProduct is the instruction every edit of a product photo carries.
const keepProduct = "Keep the product exactly as it is: the same shape, proportions, colours, materials, " +
	"labels, logos and text, with nothing added to it or removed from it."

const packshotPrompt = "Isolate this exact product on a pure white (#FFFFFF) seamless studio background, " +
	"centred in the frame with even margins, with a soft, natural contact shadow directly beneath it. " +
	"Remove everything else: hands, props, surfaces and the original background. " + keepProduct +
	" Even, soft studio lighting, sharp focus, professional e-commerce packshot."

func photoShootPrompt(s providers.SessionConfig) string {
	var b strings.Builder
	b.WriteString("Place this exact product in a " + orDefault(s.Style, "tasteful, natural lifestyle") +
		" scene for a professional product photo shoot.")
	if sug := clause(s.Suggestions); sug != "" {
		b.WriteString(" Follow these directions: " + sug + ".")
	}
	b.WriteString(" " + keepProduct + " The product is the clear subject, with lighting, perspective and " +
		"shadows consistent with the scene. Photorealistic, high detail.")
	return b.String()
}

func modelIdeaPrompt(preferences string) string {
	return "Full-body studio photograph of a fashion model for product photography: " +
		orDefault(preferences, "a versatile, approachable look that suits many products") +
		". Natural pose, plain light grey background, soft even lighting, photorealistic, high detail."
}

func sceneryIdeaPrompt(preferences string) string {
	return "Empty scene for product photography, without people or products: " +
		orDefault(preferences, "a bright, minimal interior") +
		". A clear, uncluttered surface in the foreground where a product can stand, natural light, " +
		"photorealistic, high detail."
}

func videoPrompt(suggestion string) string {
	return "Slow, smooth cinematic camera movement around the product. " +
		orDefault(suggestion, "Gentle light changes bring out its materials") +
		". The product stays exactly as in the image: the same shape, colours, labels and text."
}

// videoNegativePrompt extends the page's default negative prompt ("blur, distort, and low quality").
const videoNegativePrompt = "blur, distort, and low quality, deformed product, changed logo, warped text"

// clause trims s of spaces and final full stops, so that it can be embedded in a sentence.
func clause(s string) string { return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ".")) }

// orDefault returns clause(s), or def when it is empty.
func orDefault(s, def string) string {
	if c := clause(s); c != "" {
		return c
	}
	return def
}
