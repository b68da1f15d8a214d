package e2e_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// upload sends data through a presigned upload and returns the asset ID.
func upload(t *testing.T, api *client, filename, contentType string, data []byte) string {
	t.Helper()
	up := presign(t, api, filename, contentType, data)
	putUpload(t, up.UploadURL, contentType, data)
	return up.AssetID
}

// presign asks for a presigned upload of data.
func presign(t *testing.T, api *client, filename, contentType string, data []byte) plugin.UploadResponse {
	t.Helper()
	var up plugin.UploadResponse
	expect(t, api.do(http.MethodPost, "/assets/upload", map[string]any{
		"mode": "presigned", "filename": filename, "content_type": contentType, "size_bytes": len(data),
	}, &up), http.StatusCreated)
	return up
}

// putUpload PUTs the bytes to a presigned upload URL; the answer must be 200 with status processing.
func putUpload(t *testing.T, uploadURL, contentType string, data []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, uploadURL, bytes.NewReader(data))
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got plugin.AssetResponse
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || got.Status != status.AssetProcessing {
		t.Fatalf("PUT upload = %d %+v, want 200 and status processing", resp.StatusCode, got)
	}
}

// photoOnGrey is a product photo as a shop owner takes it: a red box on a light grey table.
func photoOnGrey(t *testing.T) []byte {
	t.Helper()
	return testimage.JPEG(t, testimage.Product(600, 450, color.NRGBA{214, 214, 210, 255}, image.Rect(220, 120, 380, 360), testimage.Red), 95)
}

// withOrientation inserts an EXIF APP1 segment with the orientation tag after the JPEG's SOI.
func withOrientation(data []byte, orientation uint16) []byte {
	tiff := []byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00")
	binary.BigEndian.PutUint16(tiff[18:], orientation)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	out := append(append(append([]byte{}, data[:2]...), seg...), payload...)
	return append(out, data[2:]...)
}

// jobOutput reads the stored file of a completed job's first output.
func jobOutput(t *testing.T, env *testenv.Env, jobID string) models.Asset {
	t.Helper()
	var a models.Asset
	if err := env.DB.Where("job_id = ? AND kind = ?", jobID, models.AssetKindOutput).Order("position").Take(&a).Error; err != nil {
		t.Fatalf("output of job %s: %v", jobID, err)
	}
	return a
}

func decodeOutput(t *testing.T, env *testenv.Env, a models.Asset) image.Image {
	t.Helper()
	data, err := env.App.Blobs.Get(context.Background(), a.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output %s does not decode: %v", a.ID, err)
	}
	if b := img.Bounds(); b.Dx() != a.Width || b.Dy() != a.Height {
		t.Fatalf("output %s is %v, recorded as %dx%d", a.ID, b.Size(), a.Width, a.Height)
	}
	return img
}

// probeVideo decodes every frame of a stored video with ffprobe and returns the frame count and
// duration. Without ffprobe (make ffmpeg installs it) the test fails, unless
// SHOTFLOW_SKIP_FFMPEG_TESTS=1 skips it as internal/media/video's decoder tests do.
func probeVideo(t *testing.T, env *testenv.Env, a models.Asset) (frames int, seconds float64) {
	t.Helper()
	if _, err := exec.LookPath("ffprobe"); err != nil {
		if os.Getenv("SHOTFLOW_SKIP_FFMPEG_TESTS") == "1" {
			t.Skip("ffprobe is not installed and SHOTFLOW_SKIP_FFMPEG_TESTS=1")
		}
		t.Fatal("ffprobe is not installed: run `make ffmpeg` (or set SHOTFLOW_SKIP_FFMPEG_TESTS=1)")
	}
	data, err := env.App.Blobs.Get(context.Background(), a.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out"+filepath.Ext(a.BlobKey))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,nb_read_frames:format=duration", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var probe struct {
		Streams []struct {
			Codec  string `json:"codec_name"`
			Frames string `json:"nb_read_frames"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &probe); err != nil || len(probe.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	frames, _ = strconv.Atoi(probe.Streams[0].Frames)
	seconds, _ = strconv.ParseFloat(probe.Format.Duration, 64)
	if probe.Streams[0].Codec != "h264" {
		t.Fatalf("video codec is %s, want h264", probe.Streams[0].Codec)
	}
	return frames, seconds
}

// submitOrder creates an order of the external API's job types straight through the order engine
// (their HTTP routes are the external API's) and returns its job IDs.
func submitOrder(t *testing.T, env *testenv.Env, accountID, jobType, model string, jobs ...models.Job) []string {
	t.Helper()
	order := &models.Order{ID: models.NewID(), AccountID: accountID, API: models.APIExternal, JobType: jobType,
		SessionConfig: models.JSON(`{"style":"warm minimal"}`), CorrelationID: models.NewID()}
	ids := make([]string, len(jobs))
	for i := range jobs {
		jobs[i].ID, jobs[i].AccountID, jobs[i].JobType, jobs[i].Position = models.NewID(), accountID, jobType, i
		jobs[i].AIModel, jobs[i].CreditCost, jobs[i].Status = model, 1, status.JobPending
		if jobs[i].AspectRatio == "" {
			jobs[i].AspectRatio = "1:1"
		}
		ids[i] = jobs[i].ID
	}
	if err := env.App.Engine.Orders.Submit(context.Background(), order, jobs); err != nil {
		t.Fatal(err)
	}
	return ids
}

func waitJobs(t *testing.T, env *testenv.Env, ids []string) map[string]models.Job {
	t.Helper()
	out := map[string]models.Job{}
	testenv.Eventually(t, 90*time.Second, "the jobs to end", func() bool {
		var jobs []models.Job
		if err := env.DB.Where("id IN ?", ids).Find(&jobs).Error; err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			out[j.ID] = j
		}
		for _, j := range jobs {
			if !status.IsTerminalJob(j.Status) {
				return false
			}
		}
		return len(jobs) == len(ids)
	})
	return out
}

// TestEveryJobTypeCompletesOffline runs a job of each type through the real engine with the local
// studio on its defaults: a packshot cut from a photo on a grey table, a photo shoot of the
// approved packshot, model and scenery ideas from preferences text, a video of the photo shoot and
// a reel of three images. Every output is decoded: images by Go's decoders, videos by ffprobe.
func TestEveryJobTypeCompletesOffline(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 100)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}

	// Packshot: the photo goes in, a cut-out on white comes out and is approved.
	photo := upload(t, api, "box.jpg", "image/jpeg", photoOnGrey(t))
	var images struct{ Results []plugin.ImageBulkResult }
	expect(t, api.do(http.MethodPost, "/images", map[string]any{"images": []map[string]any{{
		"asset_id": photo, "external_ref": "red-box-front", "product_ref": "red-box", "product_metadata": map[string]any{"display_name": "Red box"},
	}}}, &images), http.StatusOK)
	var session plugin.SessionResponse
	expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
		"job_type":       "packshot",
		"session_config": map[string]any{"aspect_ratio": "4:5"},
		"subjects": []map[string]any{{"product_ref": "red-box", "ai_model": "local/studio-v1", "images_count": 1,
			"auto_register_packshot": true, "packshot_asset_id": photo}},
	}, &session), http.StatusCreated)
	packshotJob := session.Subjects[0].JobIDs[0]
	waitTerminal(t, api, []string{packshotJob})
	packshot := decodeOutput(t, env, jobOutput(t, env, packshotJob))
	if b := packshot.Bounds(); abs(b.Dx()*5-b.Dy()*4) > 10 {
		t.Fatalf("packshot is %v, want 4:5", b.Size())
	}
	for _, p := range []image.Point{{1, 1}, {packshot.Bounds().Dx() - 2, 1}, {1, packshot.Bounds().Dy() - 2}} {
		if r, g, b, _ := packshot.At(p.X, p.Y).RGBA(); r>>8 < 250 || g>>8 < 250 || b>>8 < 250 {
			t.Fatalf("packshot corner %v is not white", p)
		}
	}
	centre := packshot.At(packshot.Bounds().Dx()/2, packshot.Bounds().Dy()/2)
	if r, g, b, _ := centre.RGBA(); r>>8 < 150 || g>>8 > 90 || b>>8 > 90 {
		t.Fatalf("packshot centre %v is not the red product", centre)
	}
	expect(t, api.do(http.MethodPost, "/jobs/"+packshotJob+"/accept", nil, nil), http.StatusNoContent)

	// Photo shoot of the approved packshot.
	shoot := startSession(t, api, "red-box", "local/studio-v1", 1).Subjects[0].JobIDs[0]
	waitTerminal(t, api, []string{shoot})
	shootOut := jobOutput(t, env, shoot)
	decodeOutput(t, env, shootOut)

	// Ideas, videos and reels (the external API's job types).
	ideas := submitOrder(t, env, tenant.AccountID, jobtype.ModelIdea, "local/studio-v1",
		models.Job{Prompt: "elegant woman, navy dress"}, models.Job{Prompt: "elegant woman, navy dress"})
	sceneries := submitOrder(t, env, tenant.AccountID, jobtype.SceneryIdea, "local/studio-v1",
		models.Job{Prompt: "sunny beach, warm", AspectRatio: "16:9"})
	video := models.Job{Prompt: "slow zoom"}
	video.SetInputs([]string{shootOut.ID})
	videos := submitOrder(t, env, tenant.AccountID, jobtype.Video, "local/motion-v1", video)
	packshotOut := jobOutput(t, env, packshotJob)
	all := append(append([]string{}, ideas...), sceneries...)
	done := waitJobs(t, env, all)
	reel := models.Job{}
	reel.SetInputs([]string{shootOut.ID, packshotOut.ID, jobOutput(t, env, ideas[0]).ID})
	reels := submitOrder(t, env, tenant.AccountID, jobtype.Reel, "local/motion-v1", reel)
	for id, j := range waitJobs(t, env, append(videos, reels...)) {
		done[id] = j
	}
	for id, j := range done {
		if j.Status != status.JobCompleted || j.AttemptCount != 1 {
			t.Fatalf("%s job %s: %s after %d attempts (%s)", j.JobType, id, j.Status, j.AttemptCount, j.ErrorDetail)
		}
	}
	a, b := decodeOutput(t, env, jobOutput(t, env, ideas[0])), decodeOutput(t, env, jobOutput(t, env, ideas[1]))
	if jobOutput(t, env, ideas[0]).SHA256 == jobOutput(t, env, ideas[1]).SHA256 || a.Bounds() != b.Bounds() {
		t.Fatal("two model ideas of one request are the same image")
	}
	if s := decodeOutput(t, env, jobOutput(t, env, sceneries[0])).Bounds(); abs(s.Dx()*9-s.Dy()*16) > 20 {
		t.Fatalf("scenery idea is %v, want 16:9", s.Size())
	}
	for _, id := range []string{videos[0], reels[0]} {
		out := jobOutput(t, env, id)
		if !strings.HasPrefix(out.ContentType, "video/") {
			t.Fatalf("video output is %s", out.ContentType)
		}
		frames, seconds := probeVideo(t, env, out)
		if frames < 10 || seconds < 2 || seconds > 20 {
			t.Fatalf("video of job %s: %d frames over %.2fs", id, frames, seconds)
		}
	}

	// The external API tracks the same orders: the video's order with its downloadable output.
	ext := &client{t: t, base: env.BaseURL + external.Base, key: tenant.ExternalKey, doc: contract.External}
	var page external.OrdersPage
	expect(t, ext.do(http.MethodGet, "/orders?limit=50", nil, &page), http.StatusOK)
	if page.Returned != 6 || page.Orders[0].OrderID != jobOrder(t, env, reels[0]) {
		t.Fatalf("GET /api/external/orders = %+v, want the 6 orders, the reel's first", page)
	}
	var order external.OrderDetail
	expect(t, ext.do(http.MethodGet, "/orders/"+jobOrder(t, env, videos[0]), nil, &order), http.StatusOK)
	if order.Status != status.OrderCompleted || order.JobType != jobtype.Video || order.Provider != "local" ||
		order.Model != "motion-v1" || len(order.Jobs) != 1 || order.Jobs[0].OutputURL == nil || order.Jobs[0].AttemptCount != 1 {
		t.Fatalf("video order = %+v", order)
	}
	if code, data := fetchFile(t, *order.Jobs[0].OutputURL); code != http.StatusOK || len(data) == 0 {
		t.Fatalf("video download = %d, %d bytes", code, len(data))
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

func jobOrder(t *testing.T, env *testenv.Env, jobID string) string {
	t.Helper()
	var j models.Job
	if err := env.DB.Select("order_id").Take(&j, "id = ?", jobID).Error; err != nil {
		t.Fatal(err)
	}
	return j.OrderID
}

// TestUploadsArePreparedBeforeJobsUseThem: an upload is checked, turned upright, upscaled and
// thumbnailed by PrepareInputWorkflow before it is ready; an unreadable one becomes invalid and the
// job waiting for it fails with INPUT_MISSING, its credits released.
func TestUploadsArePreparedBeforeJobsUseThem(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}

	// A 600×450 photo stored rotated (EXIF orientation 6) is upright 450×600, upscaled to 768×1024.
	id := upload(t, api, "sideways.jpg", "image/jpeg", withOrientation(photoOnGrey(t), 6))
	var reg struct{ Results []plugin.ImageBulkResult }
	expect(t, api.do(http.MethodPost, "/images", map[string]any{"images": []map[string]any{{
		"asset_id": id, "external_ref": "sideways-1", "product_ref": "sideways", "product_metadata": map[string]any{"display_name": "Sideways"},
	}}}, &reg), http.StatusOK)
	var img plugin.ImageItem
	testenv.Eventually(t, 30*time.Second, "the upload to be prepared", func() bool {
		var product plugin.ProductDetail
		expect(t, api.do(http.MethodGet, "/products/sideways", nil, &product), http.StatusOK)
		img = product.Images[0]
		return img.Status == plugin.ImageReady
	})
	if img.Width != 768 || img.Height != 1024 || img.ThumbnailURL == "" {
		t.Fatalf("prepared image = %+v, want upright 768x1024 with a thumbnail", img)
	}
	w, h, ct := fetchImage(t, img.ThumbnailURL)
	if ct != "image/jpeg" || w != 240 || h != 320 {
		t.Fatalf("thumbnail = %dx%d %s, want a 240x320 JPEG", w, h, ct)
	}
	var asset models.Asset
	if err := env.DB.Take(&asset, "id = ?", id).Error; err != nil || asset.PreparedBlobKey == "" {
		t.Fatalf("asset = %+v, %v: want a prepared copy", asset, err)
	}
	recordHistory(t, env.App.Temporal, "prepare-input/"+id, "prepare_input_workflow.json")

	// A job waits for an upload that turns out unreadable, and fails with INPUT_MISSING.
	brokenID, uploadURL := inputBeingPrepared(t, env, api, "broken")
	job := startSession(t, api, "broken", "local/studio-v1", 1).Subjects[0].JobIDs[0]
	var waiting plugin.JobResponse
	testenv.Eventually(t, 30*time.Second, "the job to wait for its input", func() bool {
		expect(t, api.do(http.MethodGet, "/jobs/"+job, nil, &waiting), http.StatusOK)
		return waiting.Status == status.JobRetryPending
	})
	// As long as the registered file, with the PNG signature, but damaged after it.
	damaged := packshotPNG(t)
	for i := 40; i < len(damaged); i++ {
		damaged[i] = 0x42
	}
	putUpload(t, uploadURL, "image/png", damaged)
	ended := waitTerminal(t, api, []string{job})[job]
	if ended.Status != status.JobFailed || ended.ErrorCategory == nil || *ended.ErrorCategory != string(errorcat.InputMissing) {
		t.Fatalf("job = %+v, want failed with INPUT_MISSING", ended)
	}
	var invalid models.Asset
	if err := env.DB.Take(&invalid, "id = ?", brokenID).Error; err != nil || invalid.Status != status.AssetInvalid || invalid.Problem == "" {
		t.Fatalf("damaged upload = %+v, %v: want invalid with the problem", invalid, err)
	}
	if ended.AttemptCount != 2 {
		t.Fatalf("job made %d attempts, want 2: one waiting, one finding the input unusable", ended.AttemptCount)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
