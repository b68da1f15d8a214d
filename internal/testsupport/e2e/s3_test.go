package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	doc "github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// The tests on a real S3 server (internal/testsupport/s3server) put the servers' credentials in
// this process's environment (the S3 client reads them there); they are the same for every server,
// so the tests run in parallel.

// s3Env starts an S3 server and shotflow over it (BLOB_URL=s3://…).
func s3Env(t *testing.T, opts testenv.Options) (*s3server.Server, *testenv.Env) {
	t.Helper()
	srv := s3server.Start(t)
	srv.Setenv(t)
	if opts.Environment == nil {
		opts.Environment = map[string]string{}
	}
	opts.Environment["BLOB_URL"] = srv.URL()
	return srv, testenv.New(t, temporalServer, opts)
}

// inBucket lists the objects of the server's bucket under prefix: versitygw's posix backend keeps
// each object as a file of the bucket's folder, so this reads the server's state, not the API's.
func inBucket(t *testing.T, srv *s3server.Server, prefix string) []string {
	t.Helper()
	root := filepath.Join(srv.Dir, srv.Bucket)
	var keys []string
	err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(prefix)), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return keys
}

// s3Files is how one deployment on the S3 server hands out files: the store's own URLs
// (FILE_URLS=store, the default for s3://: presigned PUTs and GETs of the bucket) or the API's
// signed routes (FILE_URLS=api).
type s3Files struct {
	srv   *s3server.Server
	env   *testenv.Env
	store bool
}

// check fails unless raw is a URL of the deployment's kind: a presigned URL of the S3 server, or
// one of the API.
func (f s3Files) check(t *testing.T, what, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if f.store {
		if u.Host != f.srv.Addr || u.Query().Get("X-Amz-Signature") == "" {
			t.Fatalf("%s %s is not a presigned URL of the store at %s", what, raw, f.srv.Addr)
		}
		return
	}
	if !strings.HasPrefix(raw, f.env.BaseURL+"/") {
		t.Fatalf("%s %s is not a URL of the API at %s", what, raw, f.env.BaseURL)
	}
}

// get downloads a file URL, with a Range header unless rangeHeader is "". The store is asked with
// a plain client (the bucket answers, under no contract of ours); the API's answer is checked
// against its document.
func (f s3Files) get(t *testing.T, raw, rangeHeader string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rangeHeader != "" {
		req.Header.Set("Range", rangeHeader)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !f.store {
		doc.Plugin.Check(t, req, nil, resp.StatusCode, resp.Header, body)
	}
	return resp, body
}

// getWhole downloads a whole file: 200, the content type, and from the store the Cache-Control
// the API's routes answer too.
func (f s3Files) getWhole(t *testing.T, what, raw, contentType string) []byte {
	t.Helper()
	f.check(t, what, raw)
	resp, body := f.get(t, raw, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != contentType || len(body) == 0 {
		t.Fatalf("%s = %d %q (%d bytes), want 200 %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), contentType)
	}
	if f.store && resp.Header.Get("Cache-Control") != fileurl.CacheControl {
		t.Fatalf("%s from the store has Cache-Control %q, want %q", what, resp.Header.Get("Cache-Control"), fileurl.CacheControl)
	}
	return body
}

// putToStore sends bytes to a presigned PUT of the store as a browser does: a plain PUT with a
// Content-Type and the body's Content-Length. It returns the store's status.
func putToStore(t *testing.T, rawURL, contentType string, data []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, rawURL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.ContentLength = int64(len(data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitPrepared waits until the preparation workflow of an upload has ended.
func waitPrepared(t *testing.T, env *testenv.Env, assetID string) {
	t.Helper()
	if err := env.App.Temporal.GetWorkflow(context.Background(), workflows.PrepareInputWorkflowID(assetID), "").
		Get(context.Background(), nil); err != nil {
		t.Fatalf("preparation of upload %s: %v", assetID, err)
	}
}

// bucketObject reads an object of the S3 server's bucket from its folder (versitygw's posix
// backend), not through the API nor S3.
func bucketObject(t *testing.T, srv *s3server.Server, key string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(key)))
	if err != nil {
		t.Fatalf("object %s of the bucket: %v", key, err)
	}
	return data
}

// TestJourneysOnS3 runs one journey of each API with its files on a real S3 server, once with the
// store's URLs (the default for s3://) and once with FILE_URLS=api:
//   - plugin: an upload, its packshot, its thumbnail, a photo session, its outputs (whole, a
//     range, and again after refresh-url). With the store's URLs the upload is a plain PUT to the
//     bucket (bound to the declared type), collected when the packshot names it, and every file is
//     fetched from the bucket with a plain client; with the API's, the upload is PUT to the API and
//     every file is streamed by it, its exchanges checked against the OpenAPI document.
//   - external: a multipart upload (through the API in both), its thumbnail in GET /products, a
//     packshot and a video with their downloads and ranges, and the record lists (GET /packshots,
//     GET /videos) serving the same files.
//
// Every file is an object of the bucket.
func TestJourneysOnS3(t *testing.T) {
	t.Parallel()
	long(t)
	for _, mode := range []string{fileurl.ModeStore, fileurl.ModeAPI} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			environment := map[string]string{}
			if mode == fileurl.ModeAPI {
				environment["FILE_URLS"] = fileurl.ModeAPI // store is the default for s3://
			}
			srv, env := s3Env(t, testenv.Options{Environment: environment})
			if got := env.App.Files.Mode(); got != mode {
				t.Fatalf("the deployment makes %s URLs, want %s", got, mode)
			}
			f := s3Files{srv: srv, env: env, store: mode == fileurl.ModeStore}
			t.Run("plugin", func(t *testing.T) {
				t.Parallel()
				f.pluginJourney(t)
			})
			t.Run("external", func(t *testing.T) {
				t.Parallel()
				f.externalJourney(t)
			})
		})
	}
}

func (f s3Files) pluginJourney(t *testing.T) {
	env, srv := f.env, f.srv
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	input := packshotPNG(t)
	up := presign(t, api, "bottle.png", "image/png", input)
	f.check(t, "upload URL", up.UploadURL)
	if f.store {
		if code := putToStore(t, up.UploadURL, "image/jpeg", input); code != http.StatusForbidden {
			t.Fatalf("the store answered %d to a PUT of another type than declared, want 403", code)
		}
		if code := putToStore(t, up.UploadURL, "image/png", input); code != http.StatusOK {
			t.Fatalf("PUT of the upload to the store = %d", code)
		}
		// Nobody told the service: the upload awaits its bytes, which wait under incoming/.
		var a models.Asset
		if err := env.DB.Take(&a, "id = ?", up.AssetID).Error; err != nil {
			t.Fatal(err)
		}
		if got := inBucket(t, srv, "incoming/"+tenant.AccountID+"/"+up.AssetID); a.Status != status.AssetAwaitingUpload || len(got) != 1 {
			t.Fatalf("after the PUT to the store the upload is %s with %v incoming, want awaiting_upload with its object", a.Status, got)
		}
	} else {
		putUpload(t, up.UploadURL, "image/png", input)
		waitPrepared(t, env, up.AssetID)
	}
	var reg struct{ Results []plugin.BulkResult }
	expect(t, api.do(http.MethodPost, "/packshots", map[string]any{"packshots": []map[string]any{{
		"asset_id": up.AssetID, "product_ref": "bottle-1", "product_metadata": map[string]any{"display_name": "Bottle"},
	}}}, &reg), http.StatusOK)
	if len(reg.Results) != 1 || reg.Results[0].Status != "created" || reg.Results[0].Packshot.Voting != models.VotingAccepted {
		t.Fatalf("packshot registration = %+v", reg)
	}
	if f.store {
		waitPrepared(t, env, up.AssetID) // the registration collected the upload and started its preparation
		if got := inBucket(t, srv, "incoming/"); len(got) != 0 {
			t.Fatalf("collected uploads left under incoming/: %v", got)
		}
	}
	var upload models.Asset
	if err := env.DB.Take(&upload, "id = ?", up.AssetID).Error; err != nil {
		t.Fatal(err)
	}
	if upload.Status != status.AssetReady || !bytes.Equal(bucketObject(t, srv, upload.BlobKey), input) {
		t.Fatalf("the upload is %s; its object %s must hold the bytes sent", upload.Status, upload.BlobKey)
	}
	if upload.ThumbnailBlobKey == "" || len(inBucket(t, srv, upload.ThumbnailBlobKey)) != 1 {
		t.Fatalf("the upload's thumbnail %q is not an object of the bucket", upload.ThumbnailBlobKey)
	}
	var img struct {
		Results []struct {
			Status string
			Image  struct {
				ThumbnailURL string `json:"thumbnail_url"`
			}
		}
	}
	expect(t, api.do(http.MethodPost, "/images", map[string]any{"images": []map[string]any{{
		"asset_id": up.AssetID, "external_ref": "img-1", "product_ref": "bottle-1"}}}, &img), http.StatusOK)
	if len(img.Results) != 1 || img.Results[0].Status != "created" {
		t.Fatalf("image registration = %+v", img)
	}
	thumb := f.getWhole(t, "the upload's thumbnail", img.Results[0].Image.ThumbnailURL, "image/jpeg")
	if !bytes.Equal(thumb, bucketObject(t, srv, upload.ThumbnailBlobKey)) {
		t.Fatal("the thumbnail served is not the bucket's object")
	}

	session := startSession(t, api, "bottle-1", "local/studio-v1", 2)
	for _, id := range session.Subjects[0].JobIDs {
		job := waitCompleted(t, api, id)
		if len(job.Outputs) != 1 {
			t.Fatalf("job %s has outputs %+v", id, job.Outputs)
		}
		body := f.getWhole(t, "output of job "+id, job.Outputs[0].URL, "image/png")
		if _, format, err := image.Decode(bytes.NewReader(body)); err != nil || format != "png" {
			t.Fatalf("the output of job %s is not a PNG: %v", id, err)
		}
		resp, head := f.get(t, job.Outputs[0].URL, "bytes=0-7")
		if resp.StatusCode != http.StatusPartialContent || string(head) != "\x89PNG\r\n\x1a\n" ||
			resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-7/%d", len(body)) {
			t.Fatalf("range of job %s = %d %q %q", id, resp.StatusCode, head, resp.Header.Get("Content-Range"))
		}
		got := inBucket(t, srv, "outputs/"+tenant.AccountID+"/"+id)
		if len(got) != 1 || !bytes.Equal(bucketObject(t, srv, got[0]), body) {
			t.Fatalf("job %s has objects %v, want its one output", id, got)
		}
		var fresh plugin.RefreshURLResponse
		expect(t, api.do(http.MethodPost, "/jobs/"+id+"/refresh-url", nil, &fresh), http.StatusOK)
		if len(fresh.Outputs) != 1 || !bytes.Equal(f.getWhole(t, "refreshed output of job "+id, fresh.Outputs[0].URL, "image/png"), body) {
			t.Fatalf("refresh-url of job %s = %+v, want a URL of the same file", id, fresh)
		}
	}
	me := credits(t, api)
	if me.Credits.Available != 8 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v, want 8 available / 0 reserved", me.Credits)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

func (f s3Files) externalJourney(t *testing.T) {
	env, srv := f.env, f.srv
	tenant := env.NewTenant(t, 20)
	ext := externalClient(t, env, tenant)
	photo := uploadProductPhoto(t, env, ext, "Red box", photoOnGrey(t)) // multipart, through the API into the bucket
	var photoAsset models.Asset
	if err := env.DB.Joins("JOIN product_images pi ON pi.asset_id = assets.id").Where("pi.id = ?", photo).Take(&photoAsset).Error; err != nil {
		t.Fatal(err)
	}
	if got := inBucket(t, srv, photoAsset.BlobKey); len(got) != 1 {
		t.Fatalf("the product photo %s is not an object of the bucket: %v", photoAsset.BlobKey, got)
	}
	thumb, _ := listed(t, ext, "/products", "products")[photo]["thumbnail"].(string)
	if !bytes.Equal(f.getWhole(t, "the photo's thumbnail", thumb, "image/jpeg"), bucketObject(t, srv, photoAsset.ThumbnailBlobKey)) {
		t.Fatal("the photo's thumbnail served is not the bucket's object")
	}

	packshots := register(t, ext, "/packshots/register-ideas", map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 1})
	video := register(t, ext, "/video-picker/register-videos", map[string]any{"imageId": photo, "suggestion": "slow push in"})
	outputs := map[string][]byte{}
	for _, r := range []struct {
		g           external.GenerationResponse
		contentType string
	}{{packshots, "image/png"}, {video, "video/mp4"}} {
		d := waitOrder(t, env, ext, r.g.OrderID)
		if d.Status != status.OrderCompleted || len(d.Jobs) != 1 || d.Jobs[0].OutputURL == nil {
			t.Fatalf("order %+v", d)
		}
		data := f.getWhole(t, "output of order "+r.g.OrderID, *d.Jobs[0].OutputURL, r.contentType)
		if len(data) < 16 {
			t.Fatalf("download of order %s: %d bytes", r.g.OrderID, len(data))
		}
		resp, part := f.get(t, *d.Jobs[0].OutputURL, "bytes=4-")
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, data[4:]) {
			t.Fatalf("range of order %s = %d, %d bytes of %d", r.g.OrderID, resp.StatusCode, len(part), len(data))
		}
		if got := inBucket(t, srv, "outputs/"+tenant.AccountID+"/"+d.Jobs[0].JobID); len(got) != 1 {
			t.Fatalf("job %s has objects %v, want its one output", d.Jobs[0].JobID, got)
		}
		outputs[r.g.OrderID] = data
	}
	// The video is an MP4: its first box is ftyp.
	d := waitOrder(t, env, ext, video.OrderID)
	if resp, box := f.get(t, *d.Jobs[0].OutputURL, "bytes=4-7"); resp.StatusCode != http.StatusPartialContent || string(box) != "ftyp" {
		t.Fatalf("the video's bytes 4-7 are %d %q, want ftyp", resp.StatusCode, box)
	}
	// The record lists serve the same files: the packshot's, the video and its input's preview.
	packshotItems := listed(t, ext, "/packshots", "packshots")
	if len(packshotItems) != 1 {
		t.Fatalf("GET /packshots lists %v, want the one packshot", packshotItems)
	}
	for _, it := range packshotItems {
		if !bytes.Equal(f.getWhole(t, "the packshot record's thumbnail", it["thumbnail"].(string), "image/png"), outputs[packshots.OrderID]) {
			t.Fatal("GET /packshots serves another file than the packshot's output")
		}
	}
	vid := listed(t, ext, "/videos", "videos")[d.Jobs[0].JobID]
	if vid == nil || !bytes.Equal(f.getWhole(t, "the video record's video", vid["videoUrl"].(string), "video/mp4"), outputs[video.OrderID]) {
		t.Fatalf("GET /videos lists the video as %v, or serves another file", vid)
	}
	f.getWhole(t, "the video record's thumbnail", vid["thumbnail"].(string), "image/jpeg")
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	var acc models.Account
	env.DB.Take(&acc, "id = ?", tenant.AccountID)
	if acc.CreditsReserved != 0 {
		t.Fatalf("%d credits still reserved", acc.CreditsReserved)
	}
}

// storeOutage is how long TestS3OutageMidOrder keeps the S3 server down.
const storeOutage = 60 * time.Second

// storeRequest is a request that needs the blob store, and what it gets once the store is back.
type storeRequest struct {
	name, method, url string
	header            map[string]string
	body              []byte
	doc               *doc.Document
	after             int
}

// send sends the request and checks the exchange against its API's document.
func (r storeRequest) send(t *testing.T) (int, http.Header, []byte) {
	req, err := http.NewRequest(r.method, r.url, bytes.NewReader(r.body))
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s: %v", r.name, err)
		return 0, nil, nil
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r.doc != nil {
		r.doc.Check(t, req, r.body, resp.StatusCode, resp.Header, body)
	}
	return resp.StatusCode, resp.Header, body
}

// TestS3OutageMidOrder kills the S3 server for a minute while an order of slow jobs runs. Meanwhile
// every request that needs the store (a download, a range of it, an upload's PUT, the external
// API's multipart upload, a reference image, the readiness check) answers 503 with Retry-After in
// its API's error body, and the jobs wait for the store (ShotflowWaitingOn). After the restart
// every job completes on its first attempt, each output is one object of the bucket, the refused
// upload can be sent again, and the ledger is settled: nothing reserved, nothing charged twice.
//
// It checks the API's own routes that stream from and to the store, so it pins FILE_URLS=api:
// with the store's URLs (the default for s3://) clients download and upload at the bucket itself,
// which is down for them alike, and the API's part is TestS3OutageWithStoreURLs'.
func TestS3OutageMidOrder(t *testing.T) {
	t.Parallel()
	long(t)
	srv, env := s3Env(t, testenv.Options{Environment: map[string]string{"FILE_URLS": fileurl.ModeAPI},
		Configure: func(c *config.Config) { c.SimProvider = true }})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "vase", packshotPNG(t))

	// Before the outage: a finished output to download, an upload to send, a reference image.
	done := waitCompleted(t, api, startSession(t, api, "vase", "local/studio-v1", 1).Subjects[0].JobIDs[0])
	png := packshotPNG(t)
	up := presign(t, api, "later.png", "image/png", png)
	var refs struct{ Models []plugin.ReferenceEntry }
	expect(t, api.do(http.MethodGet, "/models", nil, &refs), http.StatusOK)
	if len(refs.Models) == 0 || refs.Models[0].Thumbnail == "" {
		t.Fatalf("GET /models = %+v: no reference image", refs)
	}
	if code, _ := fetchFile(t, refs.Models[0].Thumbnail); code != http.StatusOK {
		t.Fatalf("reference image = %d", code)
	}
	form := multipartForm(t, []string{"name", "Lamp"}, "file", png)
	requests := []storeRequest{
		{name: "download", method: http.MethodGet, url: done.Outputs[0].URL, doc: doc.Plugin, after: http.StatusOK},
		{name: "range", method: http.MethodGet, url: done.Outputs[0].URL, header: map[string]string{"Range": "bytes=0-7"}, doc: doc.Plugin, after: http.StatusPartialContent},
		{name: "reference image", method: http.MethodGet, url: refs.Models[0].Thumbnail, doc: doc.Plugin, after: http.StatusOK},
		{name: "upload PUT", method: http.MethodPut, url: up.UploadURL, header: map[string]string{"Content-Type": "image/png"}, body: png, doc: doc.Plugin, after: http.StatusOK},
		{name: "external multipart upload", method: http.MethodPost, url: env.BaseURL + external.Base + "/products",
			header: map[string]string{"Content-Type": form.contentType, "X-Api-Key": tenant.ExternalKey}, body: form.data, doc: doc.External, after: http.StatusOK},
		{name: "readiness", method: http.MethodGet, url: env.BaseURL + "/readyz", after: http.StatusOK},
	}

	slow := startSlowSession(t, api, "vase", 4, 3*time.Second)
	ids := slow.Subjects[0].JobIDs
	testenv.Eventually(t, time.Minute, "a job of the order to generate", func() bool { return generating(t, env, ids) > 0 })

	srv.Kill()
	killed := time.Now()
	var wg sync.WaitGroup
	for _, r := range requests {
		wg.Go(func() {
			code, header, body := r.send(t)
			if code != http.StatusServiceUnavailable || header.Get("Retry-After") != strconv.Itoa(unavailable.RetryAfterSeconds) {
				t.Errorf("%s with the store down = %d %s (Retry-After %q), want 503 with Retry-After", r.name, code, body, header.Get("Retry-After"))
			}
			if r.name == "readiness" && !strings.Contains(string(body), `"dependency":"blob store"`) {
				t.Errorf("readiness with the store down = %s, want it to name the blob store", body)
			}
		})
	}
	wg.Wait()
	testenv.Eventually(t, storeOutage/2, "a job to wait for the blob store", func() bool {
		return len(waitingOn(t, env, tenant.AccountID, contract.DependencyBlobStore)) > 0
	})
	var failed int64
	env.DB.Model(&models.Job{}).Where("id IN ? AND status = ?", ids, status.JobFailed).Count(&failed)
	if failed > 0 {
		t.Fatalf("%d jobs failed during the outage", failed)
	}
	time.Sleep(time.Until(killed.Add(storeOutage)))
	srv.Restart(t)

	for _, r := range requests {
		if code, _, body := r.send(t); code != r.after {
			t.Errorf("%s after the restart = %d %s, want %d", r.name, code, body, r.after)
		}
	}
	for id, job := range waitTerminal(t, api, ids) {
		if job.Status != status.JobCompleted || job.AttemptCount != 1 || len(job.Outputs) != 1 {
			t.Errorf("job %s = %s after %d attempts with %d outputs, want completed on its first with one", id, job.Status, job.AttemptCount, len(job.Outputs))
		}
		if got := inBucket(t, srv, "outputs/"+tenant.AccountID+"/"+id); len(got) != 1 {
			t.Errorf("job %s has objects %v, want its one output", id, got)
		}
		if n := countRows(t, env, &models.Asset{}, "job_id = ? AND kind = ?", id, models.AssetKindOutput); n != 1 {
			t.Errorf("job %s has %d output assets, want 1", id, n)
		}
		if code, _ := fetchFile(t, job.Outputs[0].URL); code != http.StatusOK {
			t.Errorf("download of job %s = %d", id, code)
		}
	}
	testenv.Eventually(t, time.Minute, "no workflow to wait for the blob store", func() bool {
		return len(waitingOn(t, env, tenant.AccountID, contract.DependencyBlobStore)) == 0
	})
	waitOrderStatus(t, env, slow.OrderID, status.OrderCompleted, time.Minute)
	me := credits(t, api)
	if me.Credits.Available != 20-1-4 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v, want %d available and nothing reserved", me.Credits, 20-1-4)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
	t.Logf("the store was down %v; the order ended %v after the restart", storeOutage, time.Since(killed.Add(storeOutage)).Round(time.Second))
}

// TestS3OutageWithStoreURLs: with the store's URLs (FILE_URLS=store, the default for s3://) the API
// signs them without asking the store, so while the S3 server is down a job's read, its
// refresh-url and a new upload URL still answer; what needs the store from the API, collecting an
// upload sent straight to the bucket (here by the packshot registration that names it), answers
// 503 with Retry-After in the plugin's error body and leaves the upload awaiting. Once the store
// is back the same registration collects it, and every URL signed during the outage works.
func TestS3OutageWithStoreURLs(t *testing.T) {
	t.Parallel()
	long(t)
	srv, env := s3Env(t, testenv.Options{})
	f := s3Files{srv: srv, env: env, store: true}
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "vase", packshotPNG(t))
	done := waitCompleted(t, api, startSession(t, api, "vase", "local/studio-v1", 1).Subjects[0].JobIDs[0])
	output := f.getWhole(t, "the output", done.Outputs[0].URL, "image/png")
	lamp := photoOnGrey(t)
	up := presign(t, api, "lamp.jpg", "image/jpeg", lamp)
	if code := putToStore(t, up.UploadURL, "image/jpeg", lamp); code != http.StatusOK {
		t.Fatalf("PUT of the upload to the store = %d", code)
	}
	lampPackshot := map[string]any{"packshots": []map[string]any{{
		"asset_id": up.AssetID, "product_ref": "lamp", "product_metadata": map[string]any{"display_name": "Lamp"}}}}

	srv.Kill()
	var job plugin.JobResponse
	expect(t, api.do(http.MethodGet, "/jobs/"+done.ID, nil, &job), http.StatusOK)
	var fresh plugin.RefreshURLResponse
	expect(t, api.do(http.MethodPost, "/jobs/"+done.ID+"/refresh-url", nil, &fresh), http.StatusOK)
	if len(job.Outputs) != 1 || len(fresh.Outputs) != 1 {
		t.Fatalf("with the store down, the job lists %d outputs and refresh-url %d, want 1", len(job.Outputs), len(fresh.Outputs))
	}
	f.check(t, "the job's output during the outage", job.Outputs[0].URL)
	f.check(t, "the refreshed output during the outage", fresh.Outputs[0].URL)
	next := presign(t, api, "next.png", "image/png", output) // 201: signing asks nothing of the store
	f.check(t, "an upload URL signed during the outage", next.UploadURL)
	resp := api.do(http.MethodPost, "/packshots", lampPackshot, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != strconv.Itoa(unavailable.RetryAfterSeconds) {
		t.Fatalf("collecting an upload with the store down = %d (Retry-After %q) %s, want 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), readBody(resp))
	}
	var a models.Asset
	if err := env.DB.Take(&a, "id = ?", up.AssetID).Error; err != nil || a.Status != status.AssetAwaitingUpload {
		t.Fatalf("the upload is %q after the refused collection (%v), want awaiting_upload", a.Status, err)
	}

	srv.Restart(t)
	var reg struct{ Results []plugin.BulkResult }
	expect(t, api.do(http.MethodPost, "/packshots", lampPackshot, &reg), http.StatusOK)
	if len(reg.Results) != 1 || reg.Results[0].Status != "created" {
		t.Fatalf("packshot registration after the restart = %+v", reg)
	}
	waitPrepared(t, env, up.AssetID)
	if err := env.DB.Take(&a, "id = ?", up.AssetID).Error; err != nil || a.Status != status.AssetReady ||
		!bytes.Equal(bucketObject(t, srv, a.BlobKey), lamp) {
		t.Fatalf("the upload collected after the restart is %q (%v), want ready with the bytes sent", a.Status, err)
	}
	for _, u := range []string{job.Outputs[0].URL, fresh.Outputs[0].URL} {
		if got := f.getWhole(t, "an output URL signed during the outage", u, "image/png"); !bytes.Equal(got, output) {
			t.Fatalf("%s serves %d other bytes", u, len(got))
		}
	}
	if code := putToStore(t, next.UploadURL, "image/png", output); code != http.StatusOK {
		t.Fatalf("PUT to the upload URL signed during the outage = %d", code)
	}
}
