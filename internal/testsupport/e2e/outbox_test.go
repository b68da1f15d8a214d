package e2e_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// lostStarts is a Temporal client whose workflow starts never arrive, as when the API process
// dies right after committing an order.
type lostStarts struct{ temporalclient.Client }

func (lostStarts) ExecuteWorkflow(context.Context, temporalclient.StartWorkflowOptions, any, ...any) (temporalclient.WorkflowRun, error) {
	return nil, errors.New("connection to Temporal lost")
}

// lostStartsEngine is an engine like env's whose workflow starts never reach Temporal.
func lostStartsEngine(env *testenv.Env) *engine.Engine {
	return engine.New(engine.Config{Store: models.NewStore(env.DB), Temporal: lostStarts{env.App.Temporal}, Blobs: env.App.Blobs, TaskQueue: env.Config.TemporalTaskQueue, Log: env.App.Log,
		Models: env.App.Generator, JobOptions: env.App.EngineConfig.JobOptions})
}

// lostStartsAPI serves env's API as a process whose workflow starts are lost (lostStartsEngine)
// would; it returns the server's URL, closed at cleanup, and its engine.
func lostStartsAPI(t *testing.T, env *testenv.Env) (string, *engine.Engine) {
	t.Helper()
	crashing := *env.App
	crashing.Engine = lostStartsEngine(env)
	srv := httptest.NewServer(crashing.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, crashing.Engine
}

// TestOrderWhoseWorkflowStartWasLostIsStartedBySweeper: the order and its reservation are
// committed, the start is lost, and the worker's sweeper starts the order; nothing is stranded.
func TestOrderWhoseWorkflowStartWasLostIsStartedBySweeper(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 5)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "lamp", packshotPNG(t))

	// An API process whose Temporal connection dies between the commit and the start.
	crashedURL, _ := lostStartsAPI(t, env)
	crashed := &client{t: t, base: crashedURL + plugin.Base, key: tenant.PluginKey}

	session := startSession(t, crashed, "lamp", "local/studio-v1", 2)

	var order models.Order
	if err := env.DB.Take(&order, "id = ?", session.OrderID).Error; err != nil {
		t.Fatal(err)
	}
	if order.WorkflowStartedAt != nil || order.CreditsReserved != 2 {
		t.Fatalf("after a lost start: workflow_started_at=%v credits_reserved=%d", order.WorkflowStartedAt, order.CreditsReserved)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var notFound *serviceerror.NotFound
	if _, err := env.App.Temporal.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(order.ID), ""); !errors.As(err, &notFound) {
		t.Fatalf("a workflow exists although its start was lost: %v", err)
	}

	// The sweeper (here called directly instead of waiting for its ticker) starts it exactly once.
	started, err := env.App.Engine.Outbox.StartPending(ctx, 0, 10)
	if err != nil || started != 1 {
		t.Fatalf("StartPending = %d, %v; want 1", started, err)
	}
	if again, err := env.App.Engine.Outbox.StartPending(ctx, 0, 10); err != nil || again != 0 {
		t.Fatalf("second sweep started %d (%v); want 0", again, err)
	}
	for _, id := range session.Subjects[0].JobIDs {
		waitCompleted(t, api, id)
	}
	// A start racing an already started order is harmless: it is recorded, not repeated.
	if err := env.App.Engine.Orders.Start(ctx, &order, nil); err != nil {
		t.Fatalf("starting an already started order: %v", err)
	}
	me := credits(t, api)
	if me.Credits.Available != 3 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v, want 3 available / 0 reserved", me.Credits)
	}
}

// TestUploadWhosePreparationStartWasLostIsPreparedBySweeper: the bytes are stored and the asset is
// processing, but the start of its PrepareInputWorkflow is lost; the worker's sweep starts it and
// the upload becomes ready.
func TestUploadWhosePreparationStartWasLostIsPreparedBySweeper(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 5)
	crashedURL, _ := lostStartsAPI(t, env)
	crashed := &client{t: t, base: crashedURL + plugin.Base, key: tenant.PluginKey}
	data := packshotPNG(t)
	up := presign(t, crashed, "lamp.png", "image/png", data)
	// The signed URL names the public base URL; send the PUT to the crashing process instead.
	putUpload(t, crashedURL+strings.TrimPrefix(up.UploadURL, env.BaseURL), "image/png", data)
	id := up.AssetID

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var notFound *serviceerror.NotFound
	if _, err := env.App.Temporal.DescribeWorkflowExecution(ctx, workflows.PrepareInputWorkflowID(id), ""); !errors.As(err, &notFound) {
		t.Fatalf("a preparation exists although its start was lost: %v", err)
	}
	if n, err := env.App.Engine.Uploads.StartPendingPreparations(ctx, time.Hour, 10); err != nil || n != 0 {
		t.Fatalf("a sweep before the threshold started %d (%v)", n, err)
	}
	if n, err := env.App.Engine.Uploads.StartPendingPreparations(ctx, 0, 10); err != nil || n != 1 {
		t.Fatalf("StartPendingPreparations = %d, %v; want 1", n, err)
	}
	if err := env.App.Temporal.GetWorkflow(ctx, workflows.PrepareInputWorkflowID(id), "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var asset models.Asset
	if err := env.DB.Take(&asset, "id = ?", id).Error; err != nil || asset.Status != status.AssetReady || asset.ThumbnailBlobKey == "" {
		t.Fatalf("asset after the sweep = %+v, %v", asset, err)
	}
	if n, err := env.App.Engine.Uploads.StartPendingPreparations(ctx, 0, 10); err != nil || n != 0 {
		t.Fatalf("a ready upload was swept again: %d (%v)", n, err)
	}
}
