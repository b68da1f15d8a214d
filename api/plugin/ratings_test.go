package plugin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/retention"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// notCompleted are the statuses in which a job cannot be rated nor get download URLs.
var notCompleted = []string{status.JobPending, status.JobInProgress, status.JobRetryPending, status.JobFailed,
	status.JobCancelled, status.JobExpired}

// storedOutputJob is storeJob with the output's bytes in the blob store.
func (e *env) storedOutputJob(inst *models.Installation) (models.Job, models.Asset, []byte) {
	e.t.Helper()
	_, j, a := e.storeJob(inst)
	data := testimage.GradientPNG(e.t, 2, 2)
	require.NoError(e.t, e.blobs.Put(context.Background(), a.BlobKey, data, a.ContentType))
	return j, a, data
}

// post sends a POST without a body, moving the rate limiter's clock on so tests never hit 429.
func (e *env) post(key, path string) *httptest.ResponseRecorder {
	e.t.Helper()
	e.clock.Advance(time.Minute)
	return e.do(http.MethodPost, p(path), key, nil)
}

func (e *env) jobRow(id string) models.Job {
	e.t.Helper()
	var j models.Job
	require.NoError(e.t, e.db.Take(&j, "id = ?", id).Error)
	return j
}

// download fetches a signed URL through the router.
func (e *env) download(rawURL string) *httptest.ResponseRecorder {
	e.t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(e.t, err)
	rec := httptest.NewRecorder()
	e.router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	return rec
}

func TestRefreshURLSignsFreshDownloadURLs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j, a, data := e.storedOutputJob(e.inst)

	rec := e.post(e.key, "/jobs/"+j.ID+"/refresh-url")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	body := decode(t, rec)
	assert.Equal(t, []string{"job_id", "livemode", "outputs"}, keysOf(body))
	assert.Equal(t, j.ID, body["job_id"])
	outs := body["outputs"].([]any)
	require.Len(t, outs, 1)
	out := outs[0].(map[string]any)
	assert.Equal(t, a.ID, out["asset_id"])
	assert.Equal(t, "image/png", out["content_type"])
	expires, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	require.NoError(t, err)
	assert.True(t, time.Until(expires) >= 168*time.Hour, "expires_at %v is less than 7 days away", expires)
	u, err := url.Parse(out["url"].(string))
	require.NoError(t, err)
	assert.Equal(t, files.Path(a.ID), u.Path)
	require.NoError(t, e.signer.Verify(http.MethodGet, u.Path, u.Query(), time.Now().Add(168*time.Hour-time.Minute)),
		"the URL is still valid just under 7 days from now")
	dl := e.download(out["url"].(string))
	require.Equal(t, http.StatusOK, dl.Code, dl.Body.String())
	assert.Equal(t, data, dl.Body.Bytes())
	// Refreshing does not change the job.
	assert.Equal(t, j.Status, e.jobRow(j.ID).Status)
	assert.Equal(t, models.VotingPending, e.jobRow(j.ID).Voting)
}

func TestRefreshURLNeedsACompletedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j, _, _ := e.storedOutputJob(e.inst)
	for _, status := range notCompleted {
		require.NoError(t, e.db.Model(&models.Job{}).Where("id = ?", j.ID).Update("status", status).Error)
		msg := e.requireError(e.post(e.key, "/jobs/"+j.ID+"/refresh-url"), http.StatusConflict, plugin.CodeJobNotCompleted)
		assert.Contains(t, msg, status)
	}
}

func TestRefreshURLAnswers410OnceRetentionPurgedTheFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j, a, _ := e.storedOutputJob(e.inst)
	kept, _, _ := e.storedOutputJob(e.inst)
	rec := e.post(e.key, "/jobs/"+j.ID+"/refresh-url")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	oldURL := decode(t, rec)["outputs"].([]any)[0].(map[string]any)["url"].(string)

	// The real sweep, with the file made older than the retention period.
	old := time.Now().UTC().Add(-91 * 24 * time.Hour)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", a.ID).Update("created_at", old).Error)
	n, err := (&retention.Purger{Store: models.NewStore(e.db), Blobs: e.blobs, Log: zap.NewNop(), Retention: 90 * 24 * time.Hour}).Purge(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	e.requireError(e.post(e.key, "/jobs/"+j.ID+"/refresh-url"), http.StatusGone, plugin.CodeOutputsPurged)
	e.requireError(e.download(oldURL), http.StatusGone, plugin.CodeOutputsPurged)
	// GET /jobs/{id} no longer lists the file; the job itself stays completed.
	got := decode(t, e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil))
	assert.Equal(t, status.JobCompleted, got["status"])
	assert.Equal(t, []any{}, got["outputs"])
	// A younger job is untouched.
	assert.Equal(t, http.StatusOK, e.post(e.key, "/jobs/"+kept.ID+"/refresh-url").Code)
	// A job with one of several files purged answers 410 too, rather than a shorter list.
	second := models.Asset{ID: models.NewID(), AccountID: e.account.ID, InstallationID: &e.inst.ID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: "image/png", BlobKey: "outputs/second", JobID: &kept.ID, Position: 1,
		PurgedAt: &old, CreatedAt: old, UpdatedAt: old}
	require.NoError(t, e.db.Create(&second).Error)
	e.requireError(e.post(e.key, "/jobs/"+kept.ID+"/refresh-url"), http.StatusGone, plugin.CodeOutputsPurged)
}

// Another installation's job, of another account or of the same one, is a 404 on every job
// route, and is left unchanged.
func TestJobActionsOnAnotherInstallationsJobAre404(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, otherKey := e.otherInstallation()
	siblingInst, siblingKey := e.addInstallation(e.account.ID, 0)
	theirs, _, _ := e.storedOutputJob(otherInst)
	sibling, _, _ := e.storedOutputJob(siblingInst)
	mine, _, _ := e.storedOutputJob(e.inst)
	for _, action := range []string{"refresh-url", "accept", "reject"} {
		for _, id := range []string{theirs.ID, sibling.ID, models.NewID(), "not-a-uuid"} {
			e.requireError(e.post(e.key, "/jobs/"+id+"/"+action), http.StatusNotFound, plugin.CodeNotFound)
		}
		for _, key := range []string{otherKey, siblingKey} {
			e.requireError(e.post(key, "/jobs/"+mine.ID+"/"+action), http.StatusNotFound, plugin.CodeNotFound)
		}
	}
	for _, id := range []string{theirs.ID, sibling.ID, mine.ID} {
		j := e.jobRow(id)
		assert.Equal(t, models.VotingPending, j.Voting)
		assert.Nil(t, j.VotingAt)
	}
}

func TestAcceptAndRejectAPhotoShootJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j, a, _ := e.storedOutputJob(e.inst)
	product := e.product(e.inst, "SHOE")
	e.packshot(e.inst, product.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	accountBefore, err := models.GetAccount(e.db, e.account.ID)
	require.NoError(t, err)
	packshotsBefore := e.count(&models.Packshot{}, "1 = 1")

	rate := func(action, want string) time.Time {
		t.Helper()
		rec := e.post(e.key, "/jobs/"+j.ID+"/"+action)
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		assert.Empty(t, rec.Body.String())
		got := decode(t, e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil))
		assert.Equal(t, want, got["voting"])
		require.NotNil(t, got["voting_at"])
		at, err := time.Parse(time.RFC3339Nano, got["voting_at"].(string))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), at, 5*time.Second)
		return at
	}
	first := rate("accept", models.VotingAccepted)
	second := rate("reject", models.VotingRejected) // a later rating overwrites
	assert.False(t, second.Before(first))
	rate("reject", models.VotingRejected) // rating again is fine
	third := rate("accept", models.VotingAccepted)
	assert.False(t, third.Before(second))

	// Feedback only: credits, catalog and files are as they were.
	accountAfter, err := models.GetAccount(e.db, e.account.ID)
	require.NoError(t, err)
	assert.Equal(t, accountBefore.CreditBalance, accountAfter.CreditBalance)
	assert.Equal(t, accountBefore.CreditsReserved, accountAfter.CreditsReserved)
	assert.Equal(t, packshotsBefore, e.count(&models.Packshot{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Packshot{}, "voting = ? AND asset_id = ?", models.VotingAccepted, a.ID))
	assert.Nil(t, e.asset(a.ID).PurgedAt)
	row := e.jobRow(j.ID)
	assert.Equal(t, status.JobCompleted, row.Status)
}

func TestRatingNeedsACompletedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j, _, _ := e.storedOutputJob(e.inst)
	for _, status := range notCompleted {
		require.NoError(t, e.db.Model(&models.Job{}).Where("id = ?", j.ID).Update("status", status).Error)
		for _, action := range []string{"accept", "reject"} {
			msg := e.requireError(e.post(e.key, "/jobs/"+j.ID+"/"+action), http.StatusConflict, plugin.CodeJobNotCompleted)
			assert.Contains(t, msg, status)
		}
		row := e.jobRow(j.ID)
		assert.Equal(t, models.VotingPending, row.Voting)
		assert.Nil(t, row.VotingAt)
	}
}

// packshotJob completes a packshot job of the product through models.CompleteJob, which adds its
// candidate, and returns the job with its output.
func (e *env) packshotJob(product models.Product) (models.Job, models.Asset) {
	e.t.Helper()
	now := time.Now().UTC()
	o := models.Order{ID: models.NewID(), AccountID: e.account.ID, InstallationID: &e.inst.ID, API: models.APIPlugin,
		JobType: jobtype.Packshot, SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&o).Error)
	input := e.readyAsset(e.inst)
	j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: e.account.ID, InstallationID: &e.inst.ID,
		JobType: jobtype.Packshot, ProductID: &product.ID, ProductRef: product.ExternalRef, InputAssetID: &input.ID,
		AIModel: "local/packshot-test", AspectRatio: "1:1", Run: 1, Status: status.JobInProgress, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&j).Error)
	out := models.Asset{ID: models.OutputAssetID(j.ID, 1, 0), AccountID: e.account.ID, InstallationID: &e.inst.ID,
		Kind: models.AssetKindOutput, Status: status.AssetReady, ContentType: "image/png", SizeBytes: 4,
		BlobKey: models.OutputBlobKey(&j, 0, ".png"), Width: 2, Height: 2, JobID: &j.ID, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.blobs.Put(context.Background(), out.BlobKey, testimage.GradientPNG(e.t, 2, 2), "image/png"))
	_, err := models.CompleteJob(e.db, j.ID, 1, []models.Asset{out})
	require.NoError(e.t, err)
	return e.jobRow(j.ID), out
}

func (e *env) candidateOf(j models.Job) models.Packshot {
	e.t.Helper()
	var ps models.Packshot
	require.NoError(e.t, e.db.Take(&ps, "job_id = ?", j.ID).Error)
	return ps
}

// resolved is the packshot a photo session of the product starts from (nil: none), as the engine
// plans it, with packshot_asset_id given when assetID is not empty.
func (e *env) resolved(ref, assetID string) *models.ApprovedPackshot {
	e.t.Helper()
	var named []string
	if assetID != "" {
		named = []string{assetID}
	}
	approved, err := models.LiveProductsWithApprovedPackshots(e.db, e.inst.ID, []string{ref}, named)
	require.NoError(e.t, err)
	if approved[ref] == nil {
		return nil
	}
	return approved[ref].Approved(assetID)
}

// sessionStatus posts a photo session of one image of the product. The account has no credits,
// so a session whose packshot is approved stops at 402 and one without at 422.
func (e *env) sessionStatus(ref, assetID string) int {
	e.t.Helper()
	s := map[string]any{"product_ref": ref, "images_count": 1, "ai_model": "local/studio-v1"}
	if assetID != "" {
		s["packshot_asset_id"] = assetID
	}
	e.clock.Advance(time.Minute)
	rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"}, "subjects": []any{s}})
	require.Contains(e.t, []int{http.StatusPaymentRequired, http.StatusUnprocessableEntity}, rec.Code, rec.Body.String())
	return rec.Code
}

func TestAcceptingAPackshotJobMakesItsPacksotTheApprovedOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "mug")
	earlier := e.packshot(e.inst, product.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	hourAgo := time.Now().UTC().Add(-time.Hour)
	require.NoError(t, e.db.Model(&earlier).Updates(map[string]any{"voting_at": hourAgo, "created_at": hourAgo}).Error)
	j, out := e.packshotJob(product)

	// Completed, the job's packshot is a pending candidate of the product: not used yet.
	candidate := e.candidateOf(j)
	assert.Equal(t, models.VotingPending, candidate.Voting)
	assert.Equal(t, out.ID, candidate.AssetID)
	assert.Equal(t, product.ID, candidate.ProductID)
	assert.Equal(t, earlier.ID, e.resolved("mug", "").ID)
	assert.Nil(t, e.resolved("mug", out.ID))
	assert.Equal(t, http.StatusUnprocessableEntity, e.sessionStatus("mug", out.ID))

	// Accepted: it is the product's approved packshot, the one sessions start from.
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	candidate = e.candidateOf(j)
	assert.Equal(t, models.VotingAccepted, candidate.Voting)
	require.NotNil(t, candidate.VotingAt)
	assert.Equal(t, e.jobRow(j.ID).VotingAt.UTC(), candidate.VotingAt.UTC(), "job and packshot carry the same decision time")
	assert.Equal(t, candidate.ID, e.resolved("mug", "").ID)
	assert.Equal(t, candidate.ID, e.resolved("mug", out.ID).ID)
	assert.Equal(t, http.StatusPaymentRequired, e.sessionStatus("mug", out.ID))
	assert.Equal(t, int64(2), e.count(&models.Packshot{}, "product_id = ?", product.ID), "accepting adds no second row")

	// Rejected later: the rating overwrites, and the candidate is never used again.
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/reject").Code)
	assert.Equal(t, models.VotingRejected, e.candidateOf(j).Voting)
	assert.Equal(t, models.VotingRejected, e.jobRow(j.ID).Voting)
	assert.Equal(t, earlier.ID, e.resolved("mug", "").ID)
	assert.Nil(t, e.resolved("mug", out.ID))
	assert.Equal(t, http.StatusUnprocessableEntity, e.sessionStatus("mug", out.ID))

	// And accepted again: approved again, and newest.
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	assert.Equal(t, candidate.ID, e.resolved("mug", "").ID)
}

func TestARejectedCandidateIsNeverUsedInPhotoSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "lamp")
	j, out := e.packshotJob(product)
	// Its only packshot is the pending candidate: no approved packshot yet.
	assert.Equal(t, http.StatusUnprocessableEntity, e.sessionStatus("lamp", ""))

	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/reject").Code)
	assert.Equal(t, models.VotingRejected, e.candidateOf(j).Voting)
	assert.Nil(t, e.resolved("lamp", ""))
	assert.Nil(t, e.resolved("lamp", out.ID))
	assert.Equal(t, http.StatusUnprocessableEntity, e.sessionStatus("lamp", ""))
	assert.Equal(t, http.StatusUnprocessableEntity, e.sessionStatus("lamp", out.ID))

	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	assert.Equal(t, http.StatusPaymentRequired, e.sessionStatus("lamp", ""))
}

// A packshot job that completed before candidates were recorded gets its candidate when rated.
func TestRatingAPackshotJobWithoutCandidateAddsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "vase")
	j, out := e.packshotJob(product)
	require.NoError(t, e.db.Where("job_id = ?", j.ID).Delete(&models.Packshot{}).Error)

	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	c := e.candidateOf(j)
	assert.Equal(t, models.VotingAccepted, c.Voting)
	assert.Equal(t, out.ID, c.AssetID)
	assert.Equal(t, c.ID, e.resolved("vase", "").ID)
}

// A candidate removed from the catalog (DELETE /packshots) is not brought back by a rating.
func TestRatingLeavesADeletedCandidateDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "cup")
	j, _ := e.packshotJob(product)
	now := time.Now().UTC()
	require.NoError(t, e.db.Model(&models.Packshot{}).Where("job_id = ?", j.ID).Update("deleted_at", now).Error)

	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	assert.Equal(t, models.VotingAccepted, e.jobRow(j.ID).Voting)
	c := e.candidateOf(j)
	assert.NotNil(t, c.DeletedAt)
	assert.Equal(t, models.VotingPending, c.Voting)
	assert.Nil(t, e.resolved("cup", ""))
	assert.Equal(t, int64(1), e.count(&models.Packshot{}, "job_id = ?", j.ID))
}

// A packshot whose file retention removed cannot become the approved packshot; rejecting it is fine.
func TestAcceptingAPurgedPackshotIs410(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "bowl")
	j, out := e.packshotJob(product)
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/reject").Code)
	// Rejected candidates are purged like any output once past retention.
	old := time.Now().UTC().Add(-100 * 24 * time.Hour)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", out.ID).Update("created_at", old).Error)
	n, err := (&retention.Purger{Store: models.NewStore(e.db), Blobs: e.blobs, Log: zap.NewNop(), Retention: 90 * 24 * time.Hour}).Purge(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	e.requireError(e.post(e.key, "/jobs/"+j.ID+"/accept"), http.StatusGone, plugin.CodeOutputsPurged)
	assert.Equal(t, models.VotingRejected, e.jobRow(j.ID).Voting, "the refused accept changed nothing")
	assert.Equal(t, models.VotingRejected, e.candidateOf(j).Voting)
	assert.Nil(t, e.resolved("bowl", ""))
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/reject").Code)
	e.requireError(e.post(e.key, "/jobs/"+j.ID+"/refresh-url"), http.StatusGone, plugin.CodeOutputsPurged)
}

// An accepted candidate's file outlives the retention period: it feeds photo sessions.
func TestRetentionKeepsTheFileOfAnAcceptedPackshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCatalog(packshotCatalog(t)), withCredits(0))
	product := e.product(e.inst, "jar")
	j, out := e.packshotJob(product)
	require.Equal(t, http.StatusNoContent, e.post(e.key, "/jobs/"+j.ID+"/accept").Code)
	old := time.Now().UTC().Add(-100 * 24 * time.Hour)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", out.ID).Update("created_at", old).Error)
	n, err := (&retention.Purger{Store: models.NewStore(e.db), Blobs: e.blobs, Log: zap.NewNop(), Retention: 90 * 24 * time.Hour}).Purge(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)
	rec := e.post(e.key, "/jobs/"+j.ID+"/refresh-url")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	dl := e.download(decode(t, rec)["outputs"].([]any)[0].(map[string]any)["url"].(string))
	require.Equal(t, http.StatusOK, dl.Code)
	data, _ := io.ReadAll(dl.Body)
	assert.NotEmpty(t, data)
	assert.Equal(t, http.StatusPaymentRequired, e.sessionStatus("jar", ""))
}

// POST /packshots refuses an output that retention removed, as accepting its job answers 410
// outputs_purged: a packshot without a file would become the product's approved one, and every
// photo session from it would fail INPUT_MISSING after its credits were reserved.
func TestRegisteringAPurgedOutputAsAPackshotIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, a, _ := e.storedOutputJob(e.inst)
	old := time.Now().UTC().Add(-91 * 24 * time.Hour)
	require.NoError(t, e.db.Model(&models.Asset{}).Where("id = ?", a.ID).Update("created_at", old).Error)
	n, err := (&retention.Purger{Store: models.NewStore(e.db), Blobs: e.blobs, Log: zap.NewNop(), Retention: 90 * 24 * time.Hour}).Purge(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res := e.registerPackshots(e.key, map[string]any{
		"asset_id": a.ID, "product_ref": "SHOE-P", "product_metadata": map[string]any{"display_name": "Shoe"},
	})
	require.Equal(t, "error", res[0]["status"], "%v", res[0])
	assert.Contains(t, res[0]["error"].(map[string]any)["message_i18n"].(map[string]any)["en"], "removed by the retention policy")
	assert.Zero(t, e.count(&models.Packshot{}, "asset_id = ?", a.ID))
}
