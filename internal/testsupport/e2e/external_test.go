package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// externalClient is a client of the external API whose exchanges are checked against its document.
func externalClient(t *testing.T, env *testenv.Env, tenant testenv.Tenant) *client {
	return &client{t: t, base: env.BaseURL + external.Base, key: tenant.ExternalKey, doc: contract.External}
}

// uploadProductPhoto sends a photo with POST /products and waits until it is prepared; it returns
// the product photo's ID.
func uploadProductPhoto(t *testing.T, env *testenv.Env, ext *client, name string, data []byte) string {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("name", name)
	part, err := w.CreateFormFile("file", "photo.jpg")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = w.Close()
	req, err := http.NewRequest(http.MethodPost, ext.base+"/products", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-Api-Key", ext.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	contract.External.Check(t, req, buf.Bytes(), resp.StatusCode, resp.Header, body)
	var out struct {
		Product struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"product"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Product.ID == "" {
		t.Fatalf("POST /products = %d %s", resp.StatusCode, body)
	}
	testenv.Eventually(t, time.Minute, "the photo to be prepared", func() bool {
		var a models.Asset
		err := env.DB.Joins("JOIN product_images pi ON pi.asset_id = assets.id").Where("pi.id = ?", out.Product.ID).Take(&a).Error
		return err == nil && a.Status == status.AssetReady
	})
	return out.Product.ID
}

// register posts a generation request and returns its answer.
func register(t *testing.T, ext *client, path string, body any) external.GenerationResponse {
	t.Helper()
	var out external.GenerationResponse
	expect(t, ext.do(http.MethodPost, path, body, &out), http.StatusOK)
	if out.OrderID == "" || len(out.CreatedRecordIDs) == 0 {
		t.Fatalf("POST %s = %+v", path, out)
	}
	return out
}

// waitOrder waits until the order has ended and returns its detail as GET /orders/:id shows it.
func waitOrder(t *testing.T, env *testenv.Env, ext *client, orderID string) external.OrderDetail {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, "order "+orderID+" to end", func() bool {
		var o models.Order
		return env.DB.Take(&o, "id = ?", orderID).Error == nil && o.Status != status.OrderInProgress
	})
	var detail external.OrderDetail
	expect(t, ext.do(http.MethodGet, "/orders/"+orderID, nil, &detail), http.StatusOK)
	return detail
}

// listed returns the items of a list route, by ID.
func listed(t *testing.T, ext *client, path, key string) map[string]map[string]any {
	t.Helper()
	var page map[string]any
	expect(t, ext.do(http.MethodGet, path, nil, &page), http.StatusOK)
	items, _ := page[key].([]any)
	if int(page["count"].(float64)) != len(items) {
		t.Fatalf("GET %s: count %v for %d items", path, page["count"], len(items))
	}
	out := map[string]map[string]any{}
	for _, it := range items {
		m := it.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

// allDone checks that every record is listed DONE with a thumbnail.
func allDone(t *testing.T, items map[string]map[string]any, ids []string, what string) {
	t.Helper()
	for _, id := range ids {
		it, ok := items[id]
		if !ok || it["status"] != "DONE" || it["thumbnail"] == "" {
			t.Fatalf("%s %s is listed as %v, want DONE with a thumbnail", what, id, it)
		}
	}
}

// TestExternalGenerationEndToEnd runs every register-* route of the external API through the real
// engine with the local studio: a team uploads a product photo, generates models and sceneries
// from words, cuts packshots, approves one, shoots the photo with a model and a scenery, and makes a
// video and a reel, each to DONE, with credits consumed.
func TestExternalGenerationEndToEnd(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 200)
	ext := externalClient(t, env, tenant)
	photo := uploadProductPhoto(t, env, ext, "Red box", photoOnGrey(t))

	modelsReq := register(t, ext, "/models/register-ideas", map[string]any{"preferences": "tall woman, short dark hair, linen dress", "count": 2})
	sceneries := register(t, ext, "/sceneries/register-ideas", map[string]any{"preferences": "warm oak table, morning light", "count": 1})
	packshots := register(t, ext, "/packshots/register-ideas", map[string]any{"config": map[string]any{"product": map[string]any{"id": photo}}, "count": 2})
	if modelsReq.CreditsReserved != 2 || sceneries.CreditsReserved != 1 || packshots.CreditsReserved != 2 {
		t.Fatalf("reserved %d, %d, %d credits; want 2, 1, 2", modelsReq.CreditsReserved, sceneries.CreditsReserved, packshots.CreditsReserved)
	}
	// The records exist at once, in progress.
	if it := listed(t, ext, "/models", "models")[modelsReq.CreatedRecordIDs[0]]; it == nil || it["status"] != "INPROGRESS" && it["status"] != "DONE" {
		t.Fatalf("a new model idea is listed as %v", it)
	}
	for _, r := range []external.GenerationResponse{modelsReq, sceneries, packshots} {
		if d := waitOrder(t, env, ext, r.OrderID); d.Status != status.OrderCompleted || d.JobsCompleted != d.JobsTotal {
			t.Fatalf("order %+v", d)
		}
	}
	allDone(t, listed(t, ext, "/models", "models"), modelsReq.CreatedRecordIDs, "model")
	allDone(t, listed(t, ext, "/sceneries", "sceneries"), sceneries.CreatedRecordIDs, "scenery")
	allDone(t, listed(t, ext, "/packshots", "packshots"), packshots.CreatedRecordIDs, "packshot")

	// Without an approved packshot a photo shoot is refused; approving one opens it.
	shootBody := map[string]any{"config": map[string]any{"product": map[string]any{"id": photo},
		"model": map[string]any{"id": modelsReq.CreatedRecordIDs[0]}, "scenery": map[string]any{"id": sceneries.CreatedRecordIDs[0]},
		"industry": "home goods", "suggestions": "soft shadows"}, "count": 2}
	expect(t, ext.do(http.MethodPost, "/image-picker/register-ideas", shootBody, nil), http.StatusUnprocessableEntity)
	expect(t, ext.do(http.MethodPost, "/packshots/update-packshot",
		map[string]any{"recordId": packshots.CreatedRecordIDs[1], "Voting": "APPROVED"}, nil), http.StatusOK)
	shoot := register(t, ext, "/image-picker/register-ideas", shootBody)
	waitOrder(t, env, ext, shoot.OrderID)
	var shotWith []string
	env.DB.Model(&models.Job{}).Where("order_id = ?", shoot.OrderID).Distinct().Pluck("packshot_id", &shotWith)
	if !slices.Equal(shotWith, packshots.CreatedRecordIDs[1:]) {
		t.Fatalf("the shoot used packshots %v, want the approved %s", shotWith, packshots.CreatedRecordIDs[1])
	}
	images := listed(t, ext, "/image-picker?productId="+photo, "images")
	allDone(t, images, shoot.CreatedRecordIDs, "photo-shoot image")
	if images[shoot.CreatedRecordIDs[0]]["voting"] != nil {
		t.Fatalf("an unreviewed image has voting %v, want null", images[shoot.CreatedRecordIDs[0]]["voting"])
	}

	video := register(t, ext, "/video-picker/register-videos", map[string]any{"generatedImageId": shoot.CreatedRecordIDs[0], "suggestion": "slow push in"})
	reel := register(t, ext, "/reel/register-reel", map[string]any{"imagesIds": []string{photo, shoot.CreatedRecordIDs[0], shoot.CreatedRecordIDs[1]}})
	for _, r := range []external.GenerationResponse{video, reel} {
		d := waitOrder(t, env, ext, r.OrderID)
		if d.Status != status.OrderCompleted || d.Jobs[0].OutputURL == nil {
			t.Fatalf("video order %+v", d)
		}
		if code, data := fetchFile(t, *d.Jobs[0].OutputURL); code != http.StatusOK || len(data) == 0 {
			t.Fatalf("video download = %d, %d bytes", code, len(data))
		}
	}
	videos := listed(t, ext, "/videos", "videos")
	for _, id := range []string{video.CreatedRecordIDs[0], reel.CreatedRecordIDs[0]} {
		if v := videos[id]; v == nil || v["status"] != "DONE" || v["videoUrl"] == "" {
			t.Fatalf("video %s listed as %v", id, v)
		}
	}
	// Credits: 2+1+2+2 images at 1 and two videos at 3, all consumed.
	var acc models.Account
	env.DB.Take(&acc, "id = ?", tenant.AccountID)
	if acc.CreditBalance != 200-13 || acc.CreditsReserved != 0 {
		t.Fatalf("balance %d reserved %d, want %d and 0", acc.CreditBalance, acc.CreditsReserved, 200-13)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

// TestExternalPartialCompletionRefundsTheFailedJob runs a packshot request of three on the sim
// provider (the service's default provider here) where the second job hits a content-policy
// refusal: the order completes with two packshots DONE and one FAILED, and the failed job's credit
// is refunded.
func TestExternalPartialCompletionRefundsTheFailedJob(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider, c.DefaultProvider = true, "sim"
	}})
	tenant := env.NewTenant(t, 50)
	ext := externalClient(t, env, tenant)
	photo := uploadProductPhoto(t, env, ext, "Red box", photoOnGrey(t))

	r := register(t, ext, "/packshots/register-ideas", map[string]any{"config": map[string]any{"product": map[string]any{"id": photo},
		"suggestions": "sim-fault=content-policy sim-fault-at=1"}, "count": 3})
	if r.CreditsReserved != 3 {
		t.Fatalf("reserved %d, want 3", r.CreditsReserved)
	}
	d := waitOrder(t, env, ext, r.OrderID)
	if d.Status != status.OrderCompleted || d.JobsCompleted != 2 || d.JobsFailed != 1 || d.Provider != "sim" {
		t.Fatalf("order %+v, want completed with 2 done and 1 failed on sim", d)
	}
	for i, j := range d.Jobs {
		failed := i == 1
		if failed != (j.Status == status.JobFailed) || failed != (j.OutputURL == nil) ||
			failed != (j.ErrorCategory != nil && *j.ErrorCategory == "CONTENT_POLICY") {
			t.Fatalf("job %d: %+v", i, j)
		}
	}
	items := listed(t, ext, "/packshots", "packshots")
	for i, id := range r.CreatedRecordIDs {
		want := "DONE"
		if i == 1 {
			want = "FAILED"
		}
		if items[id] == nil || items[id]["status"] != want {
			t.Fatalf("packshot %d listed as %v, want %s", i, items[id], want)
		}
	}
	var acc models.Account
	env.DB.Take(&acc, "id = ?", tenant.AccountID)
	if acc.CreditBalance != 50-2 || acc.CreditsReserved != 0 {
		t.Fatalf("balance %d reserved %d, want 48 and 0: the failed job's credit is refunded", acc.CreditBalance, acc.CreditsReserved)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
