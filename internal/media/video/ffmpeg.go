package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// encodeFFmpeg pipes the frames of m as raw yuv420p into ffmpeg, which encodes them with
// libx264 into an MP4 with the moov box first. The MP4 goes through a temporary file because
// +faststart rewrites the file once it is complete, which needs a seekable output.
func encodeFFmpeg(ctx context.Context, m *movie) ([]byte, error) {
	bin, err := ffmpegPath()
	if err != nil {
		return nil, ErrFFmpegMissing
	}
	tmp, err := os.CreateTemp("", "shotflow-video-*.mp4")
	if err != nil {
		return nil, fmt.Errorf("video: temporary file for ffmpeg: %w", err)
	}
	out := tmp.Name()
	defer os.Remove(out)
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("video: temporary file for ffmpeg: %w", err)
	}

	if err := runFFmpeg(ctx, bin, ffmpegArgs(m.s, out), m); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("video: reading ffmpeg output: %w", err)
	}
	return data, nil
}

// ffmpegArgs is the command line that reads raw frames of s on stdin and writes out.
func ffmpegArgs(s settings, out string) []string {
	return []string{
		"-hide_banner", "-nostats", "-v", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "yuv420p",
		"-s", strconv.Itoa(s.width) + "x" + strconv.Itoa(s.height),
		"-framerate", strconv.Itoa(s.fps),
		"-i", "pipe:0",
		"-an",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
		"-color_range", "tv", "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
		"-movflags", "+faststart",
		"-f", "mp4", out,
	}
}

// runFFmpeg runs ffmpeg and writes every frame of m to its stdin. ffmpeg is killed when ctx
// ends; its stderr becomes part of the error when it fails.
func runFFmpeg(ctx context.Context, bin string, args []string, m *movie) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("video: ffmpeg stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("video: starting ffmpeg: %w", err)
	}
	writeErr := writeFrames(ctx, stdin, m)
	closeErr := stdin.Close()
	waitErr := cmd.Wait()
	switch ctxErr := ctx.Err(); {
	case ctxErr != nil && errors.Is(writeErr, ctxErr):
		return writeErr
	case ctxErr != nil:
		return fmt.Errorf("video: ffmpeg: %w", ctxErr)
	case waitErr != nil:
		return fmt.Errorf("video: ffmpeg failed: %w: %s", waitErr, lastLines(stderr.String(), 10))
	case writeErr != nil:
		return writeErr
	case closeErr != nil && !errors.Is(closeErr, os.ErrClosed):
		return fmt.Errorf("video: closing ffmpeg stdin: %w", closeErr)
	}
	return nil
}

// writeFrames renders every frame of m and writes it to w.
func writeFrames(ctx context.Context, w io.Writer, m *movie) error {
	for k := range m.s.frames {
		f, err := m.frame(ctx, k)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.raw); err != nil {
			return fmt.Errorf("video: writing frame %d to ffmpeg: %w", k, err)
		}
	}
	return nil
}

// lastLines returns at most the last n lines of s, trimmed.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
