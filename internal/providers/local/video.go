package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"

	"github.com/shotflow/shotflow/internal/media/render"
	"github.com/shotflow/shotflow/internal/media/video"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models/jobtype"
)

// VideoLongEdge is the long edge in pixels of the videos the local provider renders (the pure-Go
// encoder caps it lower, see internal/media/video).
const VideoLongEdge = 720

// renderVideo pans and zooms over the job's images (one for a video, 1 to video.MaxImages for a
// reel) into an MP4 at the requested aspect ratio.
func renderVideo(ctx context.Context, req providers.Request, encoder string) ([]providers.Output, error) {
	want := "one image"
	if req.JobType == jobtype.Reel {
		want = fmt.Sprintf("1 to %d images", video.MaxImages)
	}
	if len(req.Inputs) == 0 || (req.JobType == jobtype.Video && len(req.Inputs) != 1) || len(req.Inputs) > video.MaxImages {
		return nil, providers.Errorf(errorcat.InputMissing, "%s needs %s, got %d", req.JobType, want, len(req.Inputs))
	}
	frames := make([]image.Image, len(req.Inputs))
	for i, in := range req.Inputs {
		img, _, err := image.Decode(bytes.NewReader(in.Data))
		if err != nil {
			return nil, providers.Errorf(errorcat.InputMissing, "%s input %d is not a decodable image: %v", req.JobType, i+1, err)
		}
		frames[i] = img
	}
	w, h, err := render.CanvasSize(req.AspectRatio, VideoLongEdge)
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "video size: %v", err)
	}
	opts := video.Options{Width: w, Height: h, Seed: req.Seed, Encoder: encoder}
	if req.Watermark {
		opts.Stamp = watermarkStamp
	}
	res, err := video.Render(ctx, frames, opts)
	switch {
	case ctx.Err() != nil:
		return nil, providers.Errorf(errorcat.TransientInfra, "video rendering abandoned: %v", err)
	case errors.Is(err, video.ErrFFmpegMissing):
		return nil, providers.Errorf(errorcat.InternalBug, "VIDEO_ENCODER=ffmpeg but ffmpeg is not installed: %v", err)
	case err != nil:
		return nil, providers.Errorf(errorcat.InternalBug, "render video: %v", err)
	}
	return []providers.Output{{Data: res.Data, ContentType: res.ContentType, Ext: res.Ext,
		Width: res.Width, Height: res.Height, Duration: res.Duration}}, nil
}

// watermarkStamp is the "TEST" watermark of a test-mode job's video, painted on every frame at
// the size encoded: the letters of render.Watermark, without the band.
func watermarkStamp(width, height int) ([]image.Rectangle, color.NRGBA) {
	return render.Watermark(width, height).Letters, render.WatermarkColor
}
