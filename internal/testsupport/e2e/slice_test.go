package e2e_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/catalog"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// packshotPNG draws a product (a blue bottle with a white label) on a white background.
func packshotPNG(t *testing.T) []byte {
	t.Helper()
	bottle := testimage.Product(300, 400, testimage.White, image.Rect(100, 60, 200, 360), color.NRGBA{30, 60, 180, 255})
	return testimage.PNG(t, testimage.Fill(bottle, image.Rect(115, 180, 185, 240), color.NRGBA{250, 250, 250, 255}))
}

// TestPluginPhotoSessionEndToEnd walks the walking-skeleton slice by HTTP only: upload, packshot,
// AI models, a photo session of two images, the workflows, and the download of a real PNG.
func TestPluginPhotoSessionEndToEnd(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	input := packshotPNG(t)

	// 1–2. Presigned upload, PUT of the bytes, and registration as an approved packshot.
	registerPackshot(t, env, api, "bottle-1", input)

	// 3. The catalog lists a local model.
	var catalog struct {
		AIModels []catalog.AIModel `json:"ai_models"`
	}
	expect(t, api.do(http.MethodGet, "/ai-models", nil, &catalog), http.StatusOK)
	var model string
	for _, m := range catalog.AIModels {
		if m.ID == "local/studio-v1" {
			model = m.ID
		}
	}
	if model == "" {
		t.Fatalf("GET /ai-models lists no local model: %+v", catalog)
	}

	// 4. With the worker stopped, the session is accepted and its credits are reserved.
	env.StopWorker()
	var session plugin.SessionResponse
	expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "16:9", "style": "marble counter, soft daylight"},
		"subjects":       []map[string]any{{"product_ref": "bottle-1", "images_count": 2, "ai_model": model}},
	}, &session), http.StatusCreated)
	if session.OrderID == "" || session.Status != status.OrderInProgress || len(session.Subjects) != 1 ||
		session.Subjects[0].ProductRef != "bottle-1" || len(session.Subjects[0].JobIDs) != 2 || session.CreditsReserved != 2 {
		t.Fatalf("session = %+v", session)
	}
	me := credits(t, api)
	if me.Credits.Available != 8 || me.Credits.Reserved != 2 {
		t.Fatalf("after acceptance credits = %+v, want 8 available / 2 reserved", me.Credits)
	}
	var pending plugin.JobResponse
	expect(t, api.do(http.MethodGet, "/jobs/"+session.Subjects[0].JobIDs[0], nil, &pending), http.StatusOK)
	if pending.Status != status.JobPending || len(pending.Outputs) != 0 {
		t.Fatalf("job before any worker runs = %+v", pending)
	}

	// 5. A worker picks the order up: one JobWorkflow child per job, each renders a PNG.
	env.StartWorker()
	jobs := make([]plugin.JobResponse, 0, 2)
	for _, id := range session.Subjects[0].JobIDs {
		jobs = append(jobs, waitCompleted(t, api, id))
	}

	// 6. Each output downloads as a decodable PNG at 16:9 that is neither blank nor the input.
	for _, job := range jobs {
		if job.AttemptCount != 1 || job.StartedAt == nil || job.CompletedAt == nil || len(job.Outputs) != 1 {
			t.Fatalf("completed job = %+v", job)
		}
		out := job.Outputs[0]
		resp, err := http.Get(out.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("download: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		img, format, err := image.Decode(bytes.NewReader(body))
		if err != nil || format != "png" {
			t.Fatalf("download is not a PNG: %v (%s)", err, format)
		}
		b := img.Bounds()
		if abs(b.Dx()*9-b.Dy()*16) > 16 {
			t.Fatalf("output is %dx%d, not 16:9", b.Dx(), b.Dy())
		}
		if bytes.Equal(body, input) || b.Dx() == 300 {
			t.Fatal("output is the input")
		}
		if n := distinctColours(img); n < 500 {
			t.Fatalf("output has only %d distinct colours: blank or flat", n)
		}
		if !hasColourNear(img, color.NRGBA{30, 60, 180, 255}) {
			t.Fatal("the product (blue bottle) is not in the output")
		}
	}
	if jobs[0].Outputs[0].URL == jobs[1].Outputs[0].URL {
		t.Fatal("both jobs share one output")
	}

	// 7. Credits were consumed; the ledger balances; the order completed.
	me = credits(t, api)
	if me.Credits.Available != 8 || me.Credits.Reserved != 0 {
		t.Fatalf("after completion credits = %+v, want 8 available / 0 reserved", me.Credits)
	}
	balance, reserved, err := models.LedgerSums(env.DB, tenant.AccountID)
	if err != nil || balance != 8 || reserved != 0 {
		t.Fatalf("ledger sums = %d/%d (%v)", balance, reserved, err)
	}
	var order plugin.OrderResponse
	expect(t, api.do(http.MethodGet, "/orders/"+session.OrderID, nil, &order), http.StatusOK)
	if order.Status != status.OrderCompleted || order.JobsCompleted != 2 || len(order.Images) != 2 ||
		order.Summary.CreditsConsumed != 2 || order.Summary.CreditsHeld != 0 || len(order.Products) != 1 || order.Products[0].JobsCompleted != 2 {
		t.Fatalf("order = %+v", order)
	}

	// 8. Temporal shows the order workflow and its job children, completed, with search attributes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tc := env.App.Temporal
	testenv.Eventually(t, 20*time.Second, "order workflow to complete", func() bool {
		d, err := tc.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(session.OrderID), "")
		return err == nil && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	recordHistory(t, tc, workflows.OrderWorkflowID(session.OrderID), "order_workflow_completed.json")
	assertOrderIsLean(t, tc, workflows.OrderWorkflowID(session.OrderID), len(session.Subjects[0].JobIDs))
	for _, id := range session.Subjects[0].JobIDs {
		// The order completes after its job workflows; waiting for each costs nothing and keeps the
		// check independent of how the order learns of their ends.
		var d *workflowservice.DescribeWorkflowExecutionResponse
		testenv.Eventually(t, 20*time.Second, "job workflow "+id+" to complete", func() bool {
			var err error
			d, err = tc.DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(id, 1), "")
			if err != nil {
				t.Fatal(err)
			}
			return d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
		recordHistory(t, tc, workflows.JobWorkflowID(id, 1), "job_workflow_completed.json")
		assertJobEventBudget(t, tc, workflows.JobWorkflowID(id, 1))
		fields := d.WorkflowExecutionInfo.SearchAttributes.GetIndexedFields()
		for _, name := range []string{"ShotflowInstallationID", "ShotflowOrderID", "ShotflowJobStatus", "ShotflowLivemode"} {
			if _, ok := fields[name]; !ok {
				t.Errorf("job workflow %s lacks search attribute %s", id, name)
			}
		}
	}
}

// registerPackshot uploads image through a presigned URL, registers it as the approved packshot of
// a new product with the given reference, and waits until the upload is prepared, so that the
// tests' jobs find it ready and count no extra attempt. An upload URL of the API is PUT to the
// API, which prepares the upload; one of the store (FILE_URLS=store) is PUT to the store, and the
// registration collects the upload and starts its preparation.
func registerPackshot(t *testing.T, env *testenv.Env, api *client, productRef string, input []byte) {
	t.Helper()
	up := presign(t, api, "bottle.png", "image/png", input)
	direct := !strings.HasPrefix(up.UploadURL, env.BaseURL+"/")
	if direct {
		if code := putToStore(t, up.UploadURL, "image/png", input); code != http.StatusOK {
			t.Fatalf("PUT of the upload to the store = %d", code)
		}
	} else {
		putUpload(t, up.UploadURL, "image/png", input)
		waitPrepared(t, env, up.AssetID)
	}
	var reg struct{ Results []plugin.BulkResult }
	expect(t, api.do(http.MethodPost, "/packshots", map[string]any{"packshots": []map[string]any{{
		"asset_id": up.AssetID, "product_ref": productRef, "product_metadata": map[string]any{"display_name": productRef},
	}}}, &reg), http.StatusOK)
	if len(reg.Results) != 1 || reg.Results[0].Status != "created" || reg.Results[0].Packshot.Voting != models.VotingAccepted {
		t.Fatalf("packshot registration = %+v", reg)
	}
	if direct {
		waitPrepared(t, env, up.AssetID)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func distinctColours(img image.Image) int {
	seen := map[color.RGBA]struct{}{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}] = struct{}{}
		}
	}
	return len(seen)
}

func hasColourNear(img image.Image, want color.NRGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if absDiff(uint8(r>>8), want.R) < 40 && absDiff(uint8(g>>8), want.G) < 40 && absDiff(uint8(bl>>8), want.B) < 40 {
				return true
			}
		}
	}
	return false
}

func absDiff(a, b uint8) int { return abs(int(a) - int(b)) }
