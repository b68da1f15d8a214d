package e2e_test

import (
	"bytes"
	"fmt"
	"image"
	"io"
	"io/fs"
	"net/http"
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
	"github.com/shotflow/shotflow/internal/platform/unavailable"
	doc "github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
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

// getRange downloads a signed URL with a Range header.
func getRange(t *testing.T, rawURL, rangeHeader string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", rangeHeader)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	doc.Plugin.Check(t, req, nil, resp.StatusCode, resp.Header, body)
	return resp, body
}

// TestJourneysOnS3 runs one journey of each API with its files on a real S3 server: the plugin
// API's upload (PUT through the API into the bucket), packshot, photo session and downloads, and
// the external API's multipart upload, packshot and video with their downloads. Every file is an
// object of the bucket, and downloads serve ranges.
func TestJourneysOnS3(t *testing.T) {
	t.Parallel()
	long(t)
	srv, env := s3Env(t, testenv.Options{})

	t.Run("plugin", func(t *testing.T) {
		t.Parallel()
		tenant := env.NewTenant(t, 10)
		api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
		input := packshotPNG(t)
		registerPackshot(t, env, api, "bottle-1", input)
		var upload models.Asset
		if err := env.DB.Where("account_id = ? AND kind = ?", tenant.AccountID, models.AssetKindUpload).Take(&upload).Error; err != nil {
			t.Fatal(err)
		}
		if got := inBucket(t, srv, upload.BlobKey); len(got) != 1 {
			t.Fatalf("the upload %s is not an object of the bucket: %v", upload.BlobKey, got)
		}
		if upload.ThumbnailBlobKey == "" || len(inBucket(t, srv, upload.ThumbnailBlobKey)) != 1 {
			t.Fatalf("the upload's thumbnail %q is not an object of the bucket", upload.ThumbnailBlobKey)
		}

		session := startSession(t, api, "bottle-1", "local/studio-v1", 2)
		for _, id := range session.Subjects[0].JobIDs {
			job := waitCompleted(t, api, id)
			if len(job.Outputs) != 1 {
				t.Fatalf("job %s has outputs %+v", id, job.Outputs)
			}
			code, body := fetchFile(t, job.Outputs[0].URL)
			if code != http.StatusOK {
				t.Fatalf("download of job %s = %d", id, code)
			}
			if _, format, err := image.Decode(bytes.NewReader(body)); err != nil || format != "png" {
				t.Fatalf("the output of job %s is not a PNG: %v", id, err)
			}
			resp, head := getRange(t, job.Outputs[0].URL, "bytes=0-7")
			if resp.StatusCode != http.StatusPartialContent || string(head) != "\x89PNG\r\n\x1a\n" ||
				resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-7/%d", len(body)) {
				t.Fatalf("range of job %s = %d %q %q", id, resp.StatusCode, head, resp.Header.Get("Content-Range"))
			}
			if got := inBucket(t, srv, "outputs/"+tenant.AccountID+"/"+id); len(got) != 1 {
				t.Fatalf("job %s has objects %v, want its one output", id, got)
			}
		}
		me := credits(t, api)
		if me.Credits.Available != 8 || me.Credits.Reserved != 0 {
			t.Fatalf("credits = %+v, want 8 available / 0 reserved", me.Credits)
		}
		assertCreditInvariants(t, env.DB, tenant.AccountID)
	})

	t.Run("external", func(t *testing.T) {
		t.Parallel()
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

		packshots := register(t, ext, "/packshots/register-ideas", map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 1})
		video := register(t, ext, "/video-picker/register-videos", map[string]any{"imageId": photo, "suggestion": "slow push in"})
		for _, r := range []external.GenerationResponse{packshots, video} {
			d := waitOrder(t, env, ext, r.OrderID)
			if d.Status != status.OrderCompleted || len(d.Jobs) != 1 || d.Jobs[0].OutputURL == nil {
				t.Fatalf("order %+v", d)
			}
			code, data := fetchFile(t, *d.Jobs[0].OutputURL)
			if code != http.StatusOK || len(data) < 16 {
				t.Fatalf("download of order %s = %d, %d bytes", r.OrderID, code, len(data))
			}
			resp, part := getRange(t, *d.Jobs[0].OutputURL, "bytes=4-")
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, data[4:]) {
				t.Fatalf("range of order %s = %d, %d bytes of %d", r.OrderID, resp.StatusCode, len(part), len(data))
			}
			if got := inBucket(t, srv, "outputs/"+tenant.AccountID+"/"+d.Jobs[0].JobID); len(got) != 1 {
				t.Fatalf("job %s has objects %v, want its one output", d.Jobs[0].JobID, got)
			}
		}
		// The video is an MP4: its first box is ftyp.
		d := waitOrder(t, env, ext, video.OrderID)
		if resp, box := getRange(t, *d.Jobs[0].OutputURL, "bytes=4-7"); resp.StatusCode != http.StatusPartialContent || string(box) != "ftyp" {
			t.Fatalf("the video's bytes 4-7 are %d %q, want ftyp", resp.StatusCode, box)
		}
		assertCreditInvariants(t, env.DB, tenant.AccountID)
		var acc models.Account
		env.DB.Take(&acc, "id = ?", tenant.AccountID)
		if acc.CreditsReserved != 0 {
			t.Fatalf("%d credits still reserved", acc.CreditsReserved)
		}
	})
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
func TestS3OutageMidOrder(t *testing.T) {
	t.Parallel()
	long(t)
	srv, env := s3Env(t, testenv.Options{Configure: func(c *config.Config) { c.SimProvider = true }})
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
