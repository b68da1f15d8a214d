package video

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests check with a real decoder (ffprobe and ffmpeg) that the videos of both
// encoders play: codec, size, frame count, duration, error-free decoding, and pictures.

// requireFFmpeg fails the test when ffmpeg or ffprobe is missing, or skips it when
// SHOTFLOW_SKIP_FFMPEG_TESTS=1.
func requireFFmpeg(t testing.TB) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s not on PATH: run `make ffmpeg` to install it, or set SHOTFLOW_SKIP_FFMPEG_TESTS=1 to skip these tests",
		strings.Join(missing, " and "))
	if os.Getenv("SHOTFLOW_SKIP_FFMPEG_TESTS") == "1" {
		t.Skip(msg)
	}
	t.Fatal(msg)
}

// colourTolerance is how far, per channel, a decoded solid area may be from its source:
// I_PCM is lossless but for the Y'CbCr conversion; x264 at CRF 23 adds a little.
var colourTolerance = map[string]float64{EncoderGo: 3, EncoderFFmpeg: 6}

// renderToFile renders images with opts and writes the video to a temporary file.
func renderToFile(t *testing.T, images []image.Image, opts Options) (Result, string) {
	t.Helper()
	res, err := Render(context.Background(), images, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Encoder != opts.Encoder {
		t.Fatalf("rendered with %q, asked for %q", res.Encoder, opts.Encoder)
	}
	path := filepath.Join(t.TempDir(), "video"+res.Ext)
	if err := os.WriteFile(path, res.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %dx%d, %d frames, %v, %d bytes", res.Encoder, res.Width, res.Height, res.Frames, res.Duration, len(res.Data))
	return res, path
}

// checkPlays probes and fully decodes the video at path and compares it with res.
func checkPlays(t *testing.T, path string, res Result) {
	t.Helper()
	out, _ := run(t, "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,width,height,nb_read_frames,duration", "-of", "json", path)
	var probe struct {
		Streams []struct {
			CodecName    string `json:"codec_name"`
			Width        int    `json:"width"`
			Height       int    `json:"height"`
			NbReadFrames string `json:"nb_read_frames"`
			Duration     string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &probe); err != nil || len(probe.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	st := probe.Streams[0]
	if st.CodecName != "h264" || st.Width != res.Width || st.Height != res.Height {
		t.Errorf("ffprobe: %s %dx%d, want h264 %dx%d", st.CodecName, st.Width, st.Height, res.Width, res.Height)
	}
	if frames, err := strconv.Atoi(st.NbReadFrames); err != nil || frames != res.Frames {
		t.Errorf("ffprobe decoded %q frames, want %d", st.NbReadFrames, res.Frames)
	}
	seconds, err := strconv.ParseFloat(st.Duration, 64)
	frameLength := res.Duration.Seconds() / float64(res.Frames)
	if err != nil || math.Abs(seconds-res.Duration.Seconds()) > frameLength {
		t.Errorf("ffprobe duration %q s, want %v within one frame", st.Duration, res.Duration)
	}
	if _, errs := run(t, "ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"); len(errs) > 0 {
		t.Errorf("ffmpeg reported decoding errors:\n%s", errs)
	}
}

// decodeFrame decodes frame n of the video at path with ffmpeg.
func decodeFrame(t *testing.T, path string, n int) image.Image {
	t.Helper()
	out, _ := run(t, "ffmpeg", "-v", "error", "-i", path, "-vf", fmt.Sprintf(`select=eq(n\,%d)`, n),
		"-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-")
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("decoding frame %d: %v", n, err)
	}
	return img
}

// run runs a command and returns its stdout and stderr; it fails the test when the
// command fails.
func run(t *testing.T, name string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	var out, errs bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errs.Bytes())
	}
	return out.Bytes(), errs.Bytes()
}

// encoders runs f as a subtest for each encoder, after checking for ffmpeg and ffprobe.
func encoders(t *testing.T, f func(t *testing.T, encoder string)) {
	for _, encoder := range []string{EncoderFFmpeg, EncoderGo} {
		t.Run(encoder, func(t *testing.T) {
			requireFFmpeg(t)
			f(t, encoder)
		})
	}
}

func TestDecodeSingleImage(t *testing.T) {
	colour := color.RGBA{200, 60, 40, 255}
	encoders(t, func(t *testing.T, encoder string) {
		res, path := renderToFile(t, []image.Image{solidImage(900, 600, colour)}, Options{Encoder: encoder})
		wantW, wantFrames := map[string]int{EncoderFFmpeg: 720, EncoderGo: 480}[encoder], map[string]int{EncoderFFmpeg: 72, EncoderGo: 36}[encoder]
		if res.Width != wantW || res.Height != wantW || res.Frames != wantFrames || res.Duration != 3*time.Second {
			t.Fatalf("Result %dx%d, %d frames, %v; want %dx%d, %d frames, 3s", res.Width, res.Height, res.Frames, res.Duration, wantW, wantW, wantFrames)
		}
		checkPlays(t, path, res)
		top := parseBoxes(t, res.Data, 0)
		if types := boxTypes(top); slices.Index(types, "moov") > slices.Index(types, "mdat") {
			t.Errorf("boxes %v: moov after mdat, the file cannot play progressively", types)
		}
		pic := decodeFrame(t, path, res.Frames/2)
		if mean := meanColour(pic, pic.Bounds()); colourDistance(mean, colour) > colourTolerance[encoder] {
			t.Errorf("middle frame's mean colour %.1f, want %v", mean, colour)
		}
	})
}

func TestDecodeReel(t *testing.T) {
	colours := []color.RGBA{{220, 40, 40, 255}, {30, 180, 70, 255}, {40, 60, 210, 255}}
	var images []image.Image
	for _, c := range colours {
		images = append(images, solidImage(500, 500, c))
	}
	encoders(t, func(t *testing.T, encoder string) {
		res, path := renderToFile(t, images, Options{Width: 640, Height: 360, PerImage: time.Second, Encoder: encoder})
		if res.Duration != 3*time.Second {
			t.Fatalf("duration %v, want 3s", res.Duration)
		}
		checkPlays(t, path, res)
		fps := float64(res.Frames) / res.Duration.Seconds()
		for i, c := range colours {
			n := int((float64(i) + 0.5) * fps) // the middle of image i's second
			pic := decodeFrame(t, path, n)
			if mean := meanColour(pic, pic.Bounds()); colourDistance(mean, c) > colourTolerance[encoder] {
				t.Errorf("frame %d: mean colour %.1f, want image %d's %v", n, mean, i, c)
			}
		}
		// Just before the first cut the first two images crossfade.
		n := int(fps) - 1
		pic := decodeFrame(t, path, n)
		mean := meanColour(pic, pic.Bounds())
		if colourDistance(mean, colours[0]) < 20 || colourDistance(mean, colours[1]) < 20 {
			t.Errorf("frame %d: mean colour %.1f, want a mix of %v and %v", n, mean, colours[0], colours[1])
		}
	})
}

func TestDecodeQuadrantsKeepTheirPlace(t *testing.T) {
	img := quadrantImage(1200, 800)
	encoders(t, func(t *testing.T, encoder string) {
		for _, seed := range []int64{1, 2, 3} {
			res, path := renderToFile(t, []image.Image{img}, Options{Width: 640, Height: 360, Seed: seed, Encoder: encoder})
			for _, n := range []int{0, res.Frames / 2, res.Frames - 1} {
				pic := decodeFrame(t, path, n)
				b := pic.Bounds()
				// A box around the centre of each quadrant stays inside it whatever the pan.
				bw, bh := b.Dx()/20, b.Dy()/20
				for q, c := range quadrantColours {
					cx, cy := b.Dx()/4+q%2*b.Dx()/2, b.Dy()/4+q/2*b.Dy()/2
					box := image.Rect(cx-bw, cy-bh, cx+bw, cy+bh)
					if mean := meanColour(pic, box); colourDistance(mean, c) > colourTolerance[encoder] {
						t.Errorf("seed %d frame %d quadrant %d: mean colour %.1f, want %v", seed, n, q, mean, c)
					}
				}
			}
		}
	})
}
