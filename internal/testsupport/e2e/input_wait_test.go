package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// inputBeingPrepared registers a packshot, then puts its file back into the "being uploaded"
// state, returning the asset ID and a fresh upload URL for it.
func inputBeingPrepared(t *testing.T, env *testenv.Env, api *client, productRef string) (string, string) {
	t.Helper()
	registerPackshot(t, env, api, productRef, packshotPNG(t))
	var p models.Packshot
	if err := env.DB.Joins("JOIN products ON products.id = packshots.product_id").
		Where("products.external_ref = ?", productRef).Take(&p).Error; err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour)
	if err := env.DB.Model(&models.Asset{}).Where("id = ?", p.AssetID).
		Updates(map[string]any{"status": status.AssetAwaitingUpload, "upload_expires_at": expires}).Error; err != nil {
		t.Fatal(err)
	}
	return p.AssetID, env.App.Signer.URL(http.MethodPut, plugin.Base+"/uploads/"+p.AssetID, expires)
}

func TestJobWaitsForItsInputAndRunsWhenItIsReady(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	_, uploadURL := inputBeingPrepared(t, env, api, "kettle")
	session := startSession(t, api, "kettle", "local/studio-v1", 1)
	id := session.Subjects[0].JobIDs[0]

	var job plugin.JobResponse
	testenv.Eventually(t, 30*time.Second, "the job to wait for its input", func() bool {
		expect(t, api.do(http.MethodGet, "/jobs/"+id, nil, &job), http.StatusOK)
		return job.Status == status.JobRetryPending
	})
	if job.ErrorCategory == nil || *job.ErrorCategory != string(errorcat.InputNotReady) || job.ErrorHint == nil || *job.ErrorHint == "" {
		t.Fatalf("waiting job = %+v", job)
	}
	time.Sleep(time.Second)
	expect(t, api.do(http.MethodGet, "/jobs/"+id, nil, &job), http.StatusOK)
	if job.Status != status.JobRetryPending || job.AttemptCount != 1 {
		t.Fatalf("the waiting job polled or moved on by itself: %+v", job)
	}

	// The input arrives: the upload wakes the job, which runs on its own.
	putUpload(t, uploadURL, "image/png", packshotPNG(t))
	testenv.Eventually(t, 30*time.Second, "the woken job to complete", func() bool {
		expect(t, api.do(http.MethodGet, "/jobs/"+id, nil, &job), http.StatusOK)
		return job.Status == status.JobCompleted
	})
	if job.AttemptCount != 2 || job.ErrorCategory != nil || len(job.Outputs) != 1 {
		t.Fatalf("completed job = %+v", job)
	}
	recordHistory(t, env.App.Temporal, "job/"+id, "job_workflow_input_wait.json")
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}

func TestJobGivesUpWhenItsInputIsNotReadyInTime(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.InputWaitTimeout = 2 * time.Second }})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	inputBeingPrepared(t, env, api, "toaster")
	session := startSession(t, api, "toaster", "local/studio-v1", 1)
	jobs := waitTerminal(t, api, session.Subjects[0].JobIDs)
	job := jobs[session.Subjects[0].JobIDs[0]]
	if job.Status != status.JobFailed || job.ErrorCategory == nil || *job.ErrorCategory != string(errorcat.InputNotReady) {
		t.Fatalf("job = %+v, want failed with INPUT_NOT_READY kept on the row", job)
	}
	me := credits(t, api)
	if me.Credits.Available != 10 || me.Credits.Reserved != 0 {
		t.Fatalf("credits = %+v: the failed job's reservation must be released", me.Credits)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
