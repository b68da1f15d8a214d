package plugin_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/internal/testsupport/s3server"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// storePut sends data with PUT to a URL of the store, as a browser would.
func storePut(t *testing.T, rawURL, contentType string, data []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, rawURL, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func storeGet(t *testing.T, rawURL string) (int, []byte, http.Header) {
	t.Helper()
	res, err := http.Get(rawURL)
	require.NoError(t, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data, res.Header
}

// TestDirectUploadToS3 sends an upload straight to a real S3 server through the URL POST
// /assets/upload answers: the store refuses another type or length, takes the declared one, and
// the upload is collected, checked and prepared when a packshot first names it.
func TestDirectUploadToS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	e := newEnv(t, onS3(srv.URL(), ""))
	data := testimage.GradientPNG(t, 64, 48)
	assetID, u := e.createUpload(e.key, "shoe.png", "image/png", len(data))
	require.True(t, strings.HasPrefix(u, "http://"+srv.Addr+"/"), "upload URL %s is not the store's", u)
	assert.Contains(t, u, "X-Amz-Signature=")

	assert.Equal(t, http.StatusForbidden, storePut(t, u, "image/jpeg", data), "another Content-Type")
	assert.Equal(t, http.StatusForbidden, storePut(t, u, "image/png", data[:len(data)-1]), "a shorter body")
	// Not used yet: nothing is collected, the upload still awaits its bytes.
	var a models.Asset
	require.NoError(t, e.db.Take(&a, "id = ?", assetID).Error)
	assert.Equal(t, status.AssetAwaitingUpload, a.Status)

	require.Equal(t, http.StatusOK, storePut(t, u, "image/png", data))
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": assetID, "product_ref": "SHOE-1", "product_metadata": map[string]any{"display_name": "Shoe"},
	})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])
	require.NoError(t, e.db.Take(&a, "id = ?", assetID).Error)
	assert.Equal(t, status.AssetProcessing, a.Status)
	assert.Equal(t, []int{64, 48}, []int{a.Width, a.Height})
	assert.Contains(t, *e.prepared, assetID, "preparation started")
	ctx := context.Background()
	stored, err := e.blobs.Get(ctx, a.BlobKey)
	require.NoError(t, err)
	assert.Equal(t, data, stored)
	_, err = e.blobs.Stat(ctx, engine.IncomingKey(a.AccountID, a.ID))
	assert.ErrorIs(t, err, blobstore.ErrNotFound, "the incoming copy is removed")

	assert.Equal(t, status.AssetReady, e.prepare(assetID).Status)
	require.NoError(t, e.db.Take(&a, "id = ?", assetID).Error)
	assert.Len(t, a.SHA256, 64, "the preparation records the SHA-256 nobody computed on the way in")

	// The thumbnail of the ready upload is read straight from the store.
	img := e.do(http.MethodPost, p("/images"), e.key, map[string]any{"images": []map[string]any{{
		"asset_id": assetID, "external_ref": "img-1", "product_ref": "SHOE-1"}}})
	require.Equal(t, http.StatusOK, img.Code, img.Body.String())
	thumb := decode(t, img)["results"].([]any)[0].(map[string]any)["image"].(map[string]any)["thumbnail_url"].(string)
	require.True(t, strings.HasPrefix(thumb, "http://"+srv.Addr+"/"), "thumbnail URL %s", thumb)
	code, body, h := storeGet(t, thumb)
	require.Equal(t, http.StatusOK, code)
	want, err := e.blobs.Get(ctx, a.ThumbnailBlobKey)
	require.NoError(t, err)
	assert.Equal(t, want, body)
	assert.Equal(t, "image/jpeg", h.Get("Content-Type"))
	assert.Equal(t, fileurl.CacheControl, h.Get("Cache-Control"))
}

// TestDirectUploadRefusedWhenFirstUsed: bytes in the store that are not what the upload declared
// (more, fewer, not an image, an image too small) are refused, when first used, with the codes
// the API's own PUT answers, and deleted; the upload may be sent again.
func TestDirectUploadRefusedWhenFirstUsed(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	e := newEnv(t, onS3(srv.URL(), ""))
	ctx := context.Background()
	good := testimage.GradientPNG(t, 64, 48)
	tiny := testimage.GradientPNG(t, 8, 8)
	text := bytes.Repeat([]byte("not an image "), 40)
	cases := []struct {
		name     string
		declared int
		stored   []byte
		status   int
		code     string
	}{
		{"too big", len(good) - 10, good, http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge},
		{"incomplete", len(good) + 10, good, http.StatusBadRequest, plugin.CodeInvalidInput},
		{"not an image", len(text), text, http.StatusBadRequest, plugin.CodeInvalidInput},
		{"too small", len(tiny), tiny, http.StatusBadRequest, plugin.CodeInvalidInput},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assetID, u := e.createUpload(e.key, "x.png", "image/png", tc.declared)
			var a models.Asset
			require.NoError(t, e.db.Take(&a, "id = ?", assetID).Error)
			incoming := engine.IncomingKey(a.AccountID, a.ID)
			if len(tc.stored) == tc.declared {
				// The store takes anything of the declared type and length: it does not sniff.
				require.Equal(t, http.StatusOK, storePut(t, u, "image/png", tc.stored))
			} else {
				// A store that enforced no length (or a client of another URL) left these bytes.
				require.NoError(t, e.blobs.Put(ctx, incoming, tc.stored, "image/png"))
			}
			ref := "P-" + string(rune('a'+i))
			res := e.registerPackshots(e.key, map[string]any{
				"asset_id": assetID, "product_ref": ref, "product_metadata": map[string]any{"display_name": ref},
			})
			requireItemError(t, res[0], tc.status, tc.code)
			require.NoError(t, e.db.Take(&a, "id = ?", assetID).Error)
			assert.Equal(t, status.AssetAwaitingUpload, a.Status)
			_, err := e.blobs.Stat(ctx, incoming)
			assert.ErrorIs(t, err, blobstore.ErrNotFound, "refused bytes are deleted")
			assert.Empty(t, *e.prepared)
		})
	}
}

// TestStoreDownloadURLs: output URLs of an S3 bucket are presigned GETs that read the file and
// expire; under a public base they are base/key; a directory keeps the API's URLs.
func TestStoreDownloadURLs(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	ctx := context.Background()
	blobs, err := blobstore.Open(ctx, srv.URL())
	require.NoError(t, err)
	defer blobs.Close()
	data := testimage.GradientPNG(t, 40, 40)
	key := "outputs/acc/job/0.png"
	require.NoError(t, blobs.Put(ctx, key, data, "image/png"))
	e := newEnv(t)

	files, err := fileurl.Store(e.signer, blobs, "")
	require.NoError(t, err)
	expires := time.Now().Add(168 * time.Hour)
	u, until := files.File(fileurl.File{AssetID: "a1", Key: key, ContentType: "image/png"}, expires)
	require.True(t, strings.HasPrefix(u, "http://"+srv.Addr+"/"), u)
	assert.WithinDuration(t, expires, until, 2*time.Second, "valid until %v, asked %v", until, expires)
	code, body, _ := storeGet(t, u)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, data, body)

	// Longer than a store signs: the API's URL, which lasts as asked.
	long := time.Now().Add(9 * 24 * time.Hour)
	u, until = files.File(fileurl.File{AssetID: "a1", Key: key}, long)
	assert.True(t, strings.HasPrefix(u, publicBaseURL+"/files/a1?"), u)
	assert.Equal(t, long, until)

	short, _ := files.File(fileurl.File{AssetID: "a1", Key: key}, time.Now().Add(1500*time.Millisecond))
	time.Sleep(2500 * time.Millisecond)
	code, _, _ = storeGet(t, short)
	assert.Equal(t, http.StatusForbidden, code, "an expired URL")

	cdn, err := fileurl.Store(e.signer, nil, "https://cdn.example.com/media/")
	require.NoError(t, err)
	u, until = cdn.File(fileurl.File{AssetID: "a1", Key: "outputs/a b/0.png"}, expires)
	assert.Equal(t, "https://cdn.example.com/media/outputs/a%20b/0.png", u)
	assert.Equal(t, expires, until)

	api := fileurl.API(e.signer)
	u, _ = api.File(fileurl.File{AssetID: "a1", Key: key}, expires)
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	assert.Equal(t, "/files/a1", parsed.Path)
	assert.Equal(t, fileurl.ModeAPI, api.Mode())
}

// TestStoreURLsRefreshAndRetention: with FILE_URLS=store, POST /jobs/{id}/refresh-url signs fresh
// presigned GETs of the bucket for as long as DOWNLOAD_URL_TTL; once retention purged the job's
// file, it answers 410 outputs_purged, the job lists no output, the store's URL signed before
// answers the bucket's 404 and the API's own route its 410.
func TestStoreURLsRefreshAndRetention(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	e := newEnv(t, onS3(srv.URL(), ""))
	j, a, data := e.storedOutputJob(e.inst)

	rec := e.post(e.key, "/jobs/"+j.ID+"/refresh-url")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	out := decode(t, rec)["outputs"].([]any)[0].(map[string]any)
	refreshed := out["url"].(string)
	require.True(t, strings.HasPrefix(refreshed, "http://"+srv.Addr+"/"), "refreshed URL %s is not the store's", refreshed)
	expires, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(168*time.Hour), expires, 5*time.Second, "a store URL lasts DOWNLOAD_URL_TTL")
	code, body, h := storeGet(t, refreshed)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, data, body)
	assert.Equal(t, "image/png", h.Get("Content-Type"))
	// GET /jobs/{id} gives the store's URL too.
	got := decode(t, e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil))
	listed := got["outputs"].([]any)[0].(map[string]any)["url"].(string)
	require.True(t, strings.HasPrefix(listed, "http://"+srv.Addr+"/"), "job output URL %s is not the store's", listed)

	old := time.Now().UTC().Add(-91 * 24 * time.Hour)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", a.ID).Update("created_at", old).Error)
	n, err := (&retention.Purger{Store: models.NewStore(e.db), Blobs: e.blobs, Log: zap.NewNop(), Retention: 90 * 24 * time.Hour}).Purge(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	e.requireError(e.post(e.key, "/jobs/"+j.ID+"/refresh-url"), http.StatusGone, plugin.CodeOutputsPurged)
	code, _, _ = storeGet(t, refreshed)
	assert.Equal(t, http.StatusNotFound, code, "the bucket no longer holds the file")
	e.requireError(e.download(e.signer.URL(http.MethodGet, files.Path(a.ID), time.Now().Add(time.Hour))), http.StatusGone, plugin.CodeOutputsPurged)
	got = decode(t, e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil))
	assert.Equal(t, status.JobCompleted, got["status"])
	assert.Equal(t, []any{}, got["outputs"])
}

// TestStoreURLsOfReferenceItems: with FILE_URLS=store, the image of an account's own fashion model
// (a generated asset) is a presigned GET of the bucket; a marketplace item's seeded image keeps
// the API's signed route.
func TestStoreURLsOfReferenceItems(t *testing.T) {
	srv := s3server.Start(t)
	srv.Setenv(t)
	e := newEnv(t, onS3(srv.URL(), ""))
	require.NoError(t, models.SeedReference(e.db))
	own := e.ownItem(models.KindFashionModel, e.inst, "Own", models.RefStatusDone, nil, true, time.Minute)
	_, entries := e.refList("/models", e.key, "models")
	var ownURL, marketURL string
	for _, it := range entries {
		switch {
		case it["id"] == own.ID:
			ownURL = it["thumbnail"].(string)
		case it["source"] == plugin.SourceMarketplace && marketURL == "":
			marketURL = it["thumbnail"].(string)
		}
	}
	require.True(t, strings.HasPrefix(ownURL, "http://"+srv.Addr+"/"), "own item's image %q is not the store's", ownURL)
	var a models.Asset
	require.NoError(t, e.db.Take(&a, "id = ?", *own.ThumbnailAssetID).Error)
	want, err := e.blobs.Get(context.Background(), a.BlobKey)
	require.NoError(t, err)
	code, body, _ := storeGet(t, ownURL)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, want, body)
	require.True(t, strings.HasPrefix(marketURL, publicBaseURL+files.RefPrefix), "marketplace image %q is not the API's", marketURL)
}

// jpegWithLargeMetadata is a valid JPEG whose frame header comes after 80 KB of comment segments,
// as large EXIF, XMP or ICC segments put it: beyond the head an upload's check reads first.
func jpegWithLargeMetadata(t *testing.T) []byte {
	img := testimage.GradientJPEG(t, 64, 48)
	out := append([]byte{}, img[:2]...) // SOI
	for range 2 {
		payload := bytes.Repeat([]byte{'x'}, 40000)
		n := len(payload) + 2
		out = append(out, 0xFF, 0xFE, byte(n>>8), byte(n))
		out = append(out, payload...)
	}
	return append(out, img[2:]...)
}

// A valid JPEG whose header lies beyond the head the first use reads is collected, not refused as
// unreadable: the preparation, which reads all of it, decides, as for the API's own PUT (which
// takes the same bytes). A JPEG cut short inside the head is still refused when first used.
func TestDirectUploadOfAJPEGWithLargeMetadata(t *testing.T) {
	data := jpegWithLargeMetadata(t)
	srv := s3server.Start(t)
	srv.Setenv(t)
	e := newEnv(t, onS3(srv.URL(), ""))
	assetID, u := e.createUpload(e.key, "a.jpg", "image/jpeg", len(data))
	require.Equal(t, http.StatusOK, storePut(t, u, "image/jpeg", data))
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": assetID, "product_ref": "J-1", "product_metadata": map[string]any{"display_name": "J"},
	})
	require.Equal(t, "created", res[0]["status"], "%v", res[0])

	cut := testimage.GradientJPEG(t, 64, 48)[:100]
	assetID, u = e.createUpload(e.key, "b.jpg", "image/jpeg", len(cut))
	require.Equal(t, http.StatusOK, storePut(t, u, "image/jpeg", cut))
	res = e.registerPackshots(e.key, map[string]any{
		"asset_id": assetID, "product_ref": "J-2", "product_metadata": map[string]any{"display_name": "J2"},
	})
	requireItemError(t, res[0], http.StatusBadRequest, plugin.CodeInvalidInput)
}
