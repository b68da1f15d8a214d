package plugin_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/urlsign"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

func TestCreateUploadValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	valid := func() map[string]any {
		return map[string]any{"mode": "presigned", "filename": "shoe.png", "content_type": "image/png", "size_bytes": 1024}
	}
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		field string
	}{
		{"mode missing", func(m map[string]any) { delete(m, "mode") }, "mode"},
		{"mode multipart", func(m map[string]any) { m["mode"] = "multipart" }, "mode"},
		{"mode direct", func(m map[string]any) { m["mode"] = "direct" }, "mode"},
		{"filename missing", func(m map[string]any) { delete(m, "filename") }, "filename"},
		{"filename empty", func(m map[string]any) { m["filename"] = "" }, "filename"},
		{"filename too long", func(m map[string]any) { m["filename"] = strings.Repeat("a", 256) }, "filename"},
		{"content_type missing", func(m map[string]any) { delete(m, "content_type") }, "content_type"},
		{"content_type pdf", func(m map[string]any) { m["content_type"] = "application/pdf" }, "content_type"},
		{"content_type gif", func(m map[string]any) { m["content_type"] = "image/gif" }, "content_type"},
		{"content_type svg", func(m map[string]any) { m["content_type"] = "image/svg+xml" }, "content_type"},
		{"content_type with params", func(m map[string]any) { m["content_type"] = "image/png; charset=binary" }, "content_type"},
		{"size_bytes missing", func(m map[string]any) { delete(m, "size_bytes") }, "size_bytes"},
		{"size_bytes zero", func(m map[string]any) { m["size_bytes"] = 0 }, "size_bytes"},
		{"size_bytes negative", func(m map[string]any) { m["size_bytes"] = -5 }, "size_bytes"},
		{"size_bytes over 50 MiB", func(m map[string]any) { m["size_bytes"] = plugin.MaxUploadBytes + 1 }, "size_bytes"},
		{"size_bytes string", func(m map[string]any) { m["size_bytes"] = "1024" }, "size_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := valid()
			c.edit(body)
			msg := e.requireError(e.do(http.MethodPost, p("/assets/upload"), e.key, body), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, c.field)
		})
	}
	for _, body := range []string{"", "{", "[]", "null"} {
		e.requireError(e.do(http.MethodPost, p("/assets/upload"), e.key, body), http.StatusBadRequest, plugin.CodeInvalidInput)
	}
	require.Zero(t, e.count(&models.Asset{}, "1 = 1"), "no asset for a refused request")
}

func TestCreateUploadAcceptsBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		ct   string
		size int
	}{{"image/png", 1}, {"image/jpeg", plugin.MaxUploadBytes}, {"image/webp", 5000}} {
		id, _ := e.createUpload(e.key, "x", c.ct, c.size)
		a := e.asset(id)
		assert.Equal(t, c.ct, a.ContentType)
		assert.Equal(t, int64(c.size), a.SizeBytes)
	}
}

func TestCreateUploadResponse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := time.Now()
	rec := e.do(http.MethodPost, p("/assets/upload"), e.key, map[string]any{
		"mode": "presigned", "filename": "../../etc/shoe.png", "content_type": "image/png", "size_bytes": 2048,
	})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	m := decode(t, rec)
	id := m["asset_id"].(string)
	assert.Equal(t, "PUT", m["method"])
	assert.Equal(t, map[string]any{"Content-Type": "image/png"}, m["headers"])
	assert.Equal(t, float64(2048), m["max_size_bytes"])

	u, err := url.Parse(m["upload_url"].(string))
	require.NoError(t, err)
	assert.Equal(t, publicBaseURL, u.Scheme+"://"+u.Host)
	assert.Equal(t, plugin.Base+"/uploads/"+id, u.Path)
	exp := urlsign.ExpiresAt(u.Query())
	assert.WithinDuration(t, before.Add(2*time.Hour), exp, 5*time.Second, "upload URL valid for 2 hours")
	expiresAt, err := time.Parse(time.RFC3339, m["expires_at"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, exp, expiresAt, time.Second)

	a := e.asset(id)
	assert.Equal(t, status.AssetAwaitingUpload, a.Status)
	assert.Equal(t, models.AssetKindUpload, a.Kind)
	assert.Equal(t, "shoe.png", a.Filename, "the path part of the filename is dropped")
	assert.Equal(t, e.account.ID, a.AccountID)
	require.NotNil(t, a.InstallationID)
	assert.Equal(t, e.inst.ID, *a.InstallationID)
}

func TestUploadPNG(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := testimage.GradientPNG(t, 7, 5)
	id, uploadURL := e.createUpload(e.key, "shoe.png", "image/png", len(data))

	rec := e.put(uploadURL, "image/png", data, int64(len(data)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	sum := sha256.Sum256(data)
	m := decode(t, rec)
	assert.Equal(t, id, m["asset_id"])
	assert.Equal(t, status.AssetProcessing, m["status"], "stored, then prepared by PrepareInputWorkflow")
	assert.Equal(t, float64(7), m["width"])
	assert.Equal(t, float64(5), m["height"])
	assert.Equal(t, float64(len(data)), m["size_bytes"])
	assert.Equal(t, hex.EncodeToString(sum[:]), m["sha256"])

	a := e.asset(id)
	assert.Equal(t, status.AssetProcessing, a.Status)
	assert.Equal(t, []string{id}, *e.prepared, "the preparation of the upload is started")
	assert.Equal(t, 7, a.Width)
	assert.Equal(t, 5, a.Height)
	assert.Equal(t, hex.EncodeToString(sum[:]), a.SHA256)
	stored, err := e.blobs.Get(context.Background(), a.BlobKey)
	require.NoError(t, err)
	assert.Equal(t, data, stored)

	// The URL is single-use.
	e.requireError(e.put(uploadURL, "image/png", data, int64(len(data))), http.StatusConflict, plugin.CodeUploadConflict)
	assert.Equal(t, status.AssetProcessing, e.asset(id).Status)
	assert.Len(t, *e.prepared, 1)
}

// Media types are case-insensitive (RFC 9110 §8.3.1): a PUT whose Content-Type is the declared
// type in other letters, or with parameters, is that type.
func TestUploadContentTypeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := testimage.GradientPNG(t, 4, 4)
	for _, contentType := range []string{"IMAGE/PNG", "Image/Png; name=shoe.png"} {
		id, uploadURL := e.createUpload(e.key, "shoe.png", "image/png", len(data))
		rec := e.put(uploadURL, contentType, data, int64(len(data)))
		require.Equal(t, http.StatusOK, rec.Code, "Content-Type %q: %s", contentType, rec.Body.String())
		assert.Equal(t, "image/png", decode(t, rec)["content_type"])
		assert.Equal(t, status.AssetProcessing, e.asset(id).Status)
	}
}

func TestUploadJPEGWithUnknownLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := testimage.GradientJPEG(t, 9, 4)
	id, uploadURL := e.createUpload(e.key, "shoe.jpg", "image/jpeg", len(data))
	rec := e.put(uploadURL, "image/jpeg", data, -1)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	a := e.asset(id)
	assert.Equal(t, status.AssetProcessing, a.Status)
	assert.Equal(t, 9, a.Width)
	assert.Equal(t, 4, a.Height)
}

func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	data := func(t *testing.T) []byte { return testimage.GradientPNG(t, 4, 4) }

	t.Run("wrong content type", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b))
		for _, ct := range []string{"image/jpeg", "application/octet-stream", "", "text/plain"} {
			e.requireError(e.put(u, ct, b, int64(len(b))), http.StatusBadRequest, plugin.CodeInvalidInput)
		}
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
		// The URL is still usable afterwards.
		require.Equal(t, http.StatusOK, e.put(u, "image/png", b, int64(len(b))).Code)
	})

	t.Run("declared length shorter than the body", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b)-1)
		rec := e.put(u, "image/png", b, int64(len(b)))
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, rec.Code, rec.Body.String())
		e.requireError(rec, http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
		_, err := e.blobs.Get(context.Background(), e.asset(id).BlobKey)
		assert.Error(t, err, "nothing stored")
	})

	t.Run("body shorter than declared", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b)+10)
		e.requireError(e.put(u, "image/png", b, int64(len(b))), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
	})

	t.Run("unknown length, body shorter than declared", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b)+10)
		e.requireError(e.put(u, "image/png", b, -1), http.StatusBadRequest, plugin.CodeInvalidInput)
		a := e.asset(id)
		assert.Equal(t, status.AssetAwaitingUpload, a.Status)
		_, err := e.blobs.Get(context.Background(), a.BlobKey)
		assert.Error(t, err, "the incomplete file is deleted")
		// A correct retry is accepted.
		full := append(append([]byte{}, b...), make([]byte, 10)...)
		require.Equal(t, http.StatusOK, e.put(u, "image/png", full, int64(len(full))).Code)
	})

	t.Run("unknown length, body longer than declared", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b)-3)
		e.requireError(e.put(u, "image/png", b, -1), http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge)
		a := e.asset(id)
		assert.Equal(t, status.AssetAwaitingUpload, a.Status)
		_, err := e.blobs.Get(context.Background(), a.BlobKey)
		assert.Error(t, err, "nothing stored")
	})

	t.Run("bytes are not the declared type", func(t *testing.T) {
		e := newEnv(t)
		jpg := testimage.GradientJPEG(t, 4, 4)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(jpg))
		msg := e.requireError(e.put(u, "image/png", jpg, int64(len(jpg))), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "image/jpeg")
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)

		text := []byte(strings.Repeat("hello ", 20))
		id2, u2 := e.createUpload(e.key, "a.jpg", "image/jpeg", len(text))
		e.requireError(e.put(u2, "image/jpeg", text, int64(len(text))), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id2).Status)
	})

	t.Run("tampered signature", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, raw := e.createUpload(e.key, "a.png", "image/png", len(b))
		u, _ := url.Parse(raw)
		q := u.Query()
		sig := q.Get("signature")
		flipped := "A"
		if sig[0] == 'A' {
			flipped = "B"
		}
		variants := map[string]url.Values{
			"signature changed":  {"expires": {q.Get("expires")}, "signature": {flipped + sig[1:]}},
			"expiry extended":    {"expires": {"9999999999"}, "signature": {sig}},
			"signature missing":  {"expires": {q.Get("expires")}},
			"everything missing": {},
		}
		for name, v := range variants {
			t.Run(name, func(t *testing.T) {
				target := *u
				target.RawQuery = v.Encode()
				e.requireError(e.put(target.String(), "image/png", b, int64(len(b))), http.StatusForbidden, plugin.CodeForbidden)
			})
		}
		// A valid signature of another asset does not open this one.
		other, otherRaw := e.createUpload(e.key, "b.png", "image/png", len(b))
		ou, _ := url.Parse(otherRaw)
		target := *u
		target.RawQuery = ou.RawQuery
		e.requireError(e.put(target.String(), "image/png", b, int64(len(b))), http.StatusForbidden, plugin.CodeForbidden)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(other).Status)
	})

	t.Run("expired URL", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, _ := e.createUpload(e.key, "a.png", "image/png", len(b))
		expired := e.signer.URL(http.MethodPut, plugin.Base+"/uploads/"+id, time.Now().Add(-time.Minute))
		e.requireError(e.put(expired, "image/png", b, int64(len(b))), http.StatusConflict, plugin.CodeUploadConflict)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
	})

	t.Run("asset past its upload deadline", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, u := e.createUpload(e.key, "a.png", "image/png", len(b))
		require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", id).
			Update("upload_expires_at", time.Now().UTC().Add(-time.Second)).Error)
		e.requireError(e.put(u, "image/png", b, int64(len(b))), http.StatusConflict, plugin.CodeUploadConflict)
		assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
	})

	t.Run("signed URL of an unknown asset", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		u := e.signer.URL(http.MethodPut, plugin.Base+"/uploads/"+models.NewID(), time.Now().Add(time.Hour))
		e.requireError(e.put(u, "image/png", b, int64(len(b))), http.StatusNotFound, plugin.CodeNotFound)
	})

	t.Run("a download signature does not allow an upload", func(t *testing.T) {
		e := newEnv(t)
		b := data(t)
		id, _ := e.createUpload(e.key, "a.png", "image/png", len(b))
		get := e.signer.URL(http.MethodGet, plugin.Base+"/uploads/"+id, time.Now().Add(time.Hour))
		e.requireError(e.put(get, "image/png", b, int64(len(b))), http.StatusForbidden, plugin.CodeForbidden)
	})
}

// An upload declared at the largest size and sent without a length is refused 413 when it runs a
// byte over, like any longer upload: the route's own body limit, which trips first there, is no
// 500. Nothing is stored and the upload can still be sent.
func TestUploadAtTheLargestSizeRunningOverIs413(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := make([]byte, plugin.MaxUploadBytes+1)
	copy(data, testimage.GradientPNG(t, 8, 8))
	id, u := e.createUpload(e.key, "a.png", "image/png", plugin.MaxUploadBytes)
	e.requireError(e.put(u, "image/png", data, -1), http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge)
	assert.Equal(t, status.AssetAwaitingUpload, e.asset(id).Status)
	_, err := e.blobs.Get(context.Background(), e.asset(id).BlobKey)
	require.Error(t, err, "nothing is stored")
}
