package fal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // decodes the sizes of JPEG outputs
	_ "image/png"  // decodes the sizes of PNG outputs
	"strings"

	_ "golang.org/x/image/webp" // decodes the sizes of WebP outputs

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// imageResult is the output of the FLUX endpoints (https://fal.ai/models/fal-ai/flux-pro/kontext/api,
// https://fal.ai/models/fal-ai/flux/dev/api): images[i] is flagged by has_nsfw_concepts[i], and a
// flagged image comes back black.
type imageResult struct {
	Images          []file `json:"images"`
	HasNSFWConcepts []bool `json:"has_nsfw_concepts"`
}

// videoResult is the output of Kling image-to-video
// (https://fal.ai/models/fal-ai/kling-video/v2.1/standard/image-to-video/api).
type videoResult struct {
	Video *file `json:"video"`
}

// file is fal's File / Image object: width and height are given for images only, and optional.
type file struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
}

// imageOutputs downloads the images of a result, leaving out those flagged as NSFW. A result whose
// images are all flagged is a CONTENT_POLICY failure; one without images an INTERNAL_BUG.
func (p *Provider) imageOutputs(ctx context.Context, q *queued, body []byte) ([]providers.Output, error) {
	var res imageResult
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: result of request %s to %s: decoding: %v", Name, q.RequestID, q.endpoint, err)
	}
	if len(res.Images) == 0 {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: result of request %s to %s has no images", Name, q.RequestID, q.endpoint)
	}
	var outs []providers.Output
	for i, img := range res.Images {
		if i < len(res.HasNSFWConcepts) && res.HasNSFWConcepts[i] {
			continue
		}
		out, err := p.image(ctx, q, img)
		if err != nil {
			return nil, err
		}
		outs = append(outs, out)
	}
	if len(outs) == 0 {
		return nil, providers.Errorf(errorcat.ContentPolicy, "%s: request %s to %s: every image has has_nsfw_concepts (fal returns them black)",
			Name, q.RequestID, q.endpoint)
	}
	return outs, nil
}

// image downloads one output image; its size comes from the result, or from the file itself.
func (p *Provider) image(ctx context.Context, q *queued, img file) (providers.Output, error) {
	data, ct, err := p.download(ctx, q, img.URL)
	if err != nil {
		return providers.Output{}, err
	}
	if !strings.HasPrefix(ct, "image/") {
		return providers.Output{}, providers.Errorf(errorcat.TransientInfra, "%s: output of request %s is %q, not an image", Name, q.RequestID, ct)
	}
	out := providers.Output{Data: data, ContentType: ct, Ext: providers.ExtFor(ct), Width: img.Width, Height: img.Height}
	if out.Width <= 0 || out.Height <= 0 {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return providers.Output{}, providers.Errorf(errorcat.InternalBug, "%s: output of request %s: reading its size: %v", Name, q.RequestID, err)
		}
		out.Width, out.Height = cfg.Width, cfg.Height
	}
	return out, nil
}

// videoOutputs downloads the video of a result: an MP4 of the requested duration.
func (p *Provider) videoOutputs(ctx context.Context, q *queued, body []byte) ([]providers.Output, error) {
	var res videoResult
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: result of request %s to %s: decoding: %v", Name, q.RequestID, q.endpoint, err)
	}
	if res.Video == nil || res.Video.URL == "" {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: result of request %s to %s has no video", Name, q.RequestID, q.endpoint)
	}
	data, _, err := p.download(ctx, q, res.Video.URL)
	if err != nil {
		return nil, err
	}
	return []providers.Output{{Data: data, ContentType: "video/mp4", Ext: ".mp4", Duration: VideoDuration}}, nil
}

// download fetches an output file with providers.Download, without the API key (fal's output URLs
// are public), naming the request in the message of a failure.
func (p *Provider) download(ctx context.Context, q *queued, rawURL string) ([]byte, string, error) {
	return providers.Download(ctx, p.client, fmt.Sprintf("%s: request %s to %s", Name, q.RequestID, q.endpoint), rawURL)
}
