package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/webhooks"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// delivery stores a webhook delivery of a completed job of inst to the installation's endpoint
// (endpoint).
func (e *env) delivery(inst *models.Installation) models.WebhookDelivery {
	e.t.Helper()
	ep := e.endpoint(inst)
	return e.deliveryTo(inst, &ep.ID)
}

// deliveryTo stores a webhook delivery of a completed job of inst to the endpoint endpointID; nil
// is a delivery recorded before endpoints (migration 0016) for an installation without a callback
// URL.
func (e *env) deliveryTo(inst *models.Installation, endpointID *string) models.WebhookDelivery {
	e.t.Helper()
	o, j, _ := e.storeJob(inst)
	d := models.WebhookDelivery{
		ID: models.WebhookDeliveryID(j.ID, 1, webhooks.EventJobCompleted), AccountID: inst.AccountID, InstallationID: &inst.ID,
		OrderID: &o.ID, JobID: &j.ID, Run: 1, Event: webhooks.EventJobCompleted, Payload: models.JSON(`{}`),
		CallbackURL: "https://shop.example/hook", EndpointID: endpointID,
	}
	created, err := models.CreateWebhookDelivery(e.db, &d)
	require.NoError(e.t, err)
	require.True(e.t, created)
	return d
}

// endpoint is the live webhook endpoint of inst at https://shop.example/hook, created the first
// time it is asked for.
func (e *env) endpoint(inst *models.Installation) models.WebhookEndpoint {
	e.t.Helper()
	var ep models.WebhookEndpoint
	err := e.db.Where("installation_id = ? AND url = ? AND deleted_at IS NULL", inst.ID, "https://shop.example/hook").Take(&ep).Error
	if err == nil {
		return ep
	}
	require.ErrorIs(e.t, err, gorm.ErrRecordNotFound)
	ep = models.WebhookEndpoint{AccountID: inst.AccountID, InstallationID: &inst.ID, URL: "https://shop.example/hook",
		Events: models.StringList{webhooks.EventJobCompleted}}
	require.NoError(e.t, models.NewStore(e.db).CreateWebhookEndpoint(context.Background(), &ep))
	return ep
}

// withTemporal gives the handler a mocked Temporal client and task queue.
func (e *env) withTemporal() *mocks.Client {
	m := &mocks.Client{}
	e.withEngine(func(c *engine.Config) { c.Temporal, c.TaskQueue = m, "tq-test" })
	e.t.Cleanup(func() { m.AssertExpectations(e.t) })
	return m
}

func TestReplayWebhookStartsANewRunOfTheDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.withTemporal()
	d := e.delivery(e.inst)
	m.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		sa := o.TypedSearchAttributes
		acc, _ := sa.GetKeyword(workflows.SAAccountID)
		inst, _ := sa.GetKeyword(workflows.SAInstallationID)
		order, _ := sa.GetKeyword(workflows.SAOrderID)
		live, liveSet := sa.GetBool(workflows.SALivemode)
		return o.ID == "webhook/"+d.ID && o.TaskQueue == "tq-test" && live && liveSet &&
			o.WorkflowIDReusePolicy == enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE &&
			o.WorkflowIDConflictPolicy == enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING &&
			acc == d.AccountID && inst == d.Installation() && order == d.Order()
	}), mock.MatchedBy(func(fn any) bool {
		return reflect.ValueOf(fn).Pointer() == reflect.ValueOf(workflows.WebhookDeliveryWorkflow).Pointer()
	}), workflows.WebhookDeliveryInput{DeliveryID: d.ID, Replay: true}).Return(&mocks.WorkflowRun{}, nil).Once()

	rec := e.do(http.MethodPost, p("/webhooks/"+d.ID+"/replay"), e.key, nil)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	body := decode(t, rec)
	assert.Equal(t, map[string]any{"delivery_id": d.ID, "status": "queued"}, body)
}

func TestReplayWebhookErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.withTemporal()
	otherInst, otherKey := e.otherInstallation()
	sibling, _ := e.addInstallation(e.account.ID, 0)
	theirs := e.delivery(otherInst)
	siblings := e.delivery(sibling)
	mine := e.delivery(e.inst)

	// Another installation's delivery, even of the same account, is not found; nothing starts.
	for _, id := range []string{theirs.ID, siblings.ID, models.NewID(), "not-a-uuid"} {
		e.requireError(e.do(http.MethodPost, p("/webhooks/"+id+"/replay"), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	e.requireError(e.do(http.MethodPost, p("/webhooks/"+mine.ID+"/replay"), otherKey, nil), http.StatusNotFound, plugin.CodeNotFound)

	// A key without plugin.webhooks:manage is forbidden.
	for _, scopes := range [][]string{{"plugin.jobs:read"}, {"plugin.installations.manage", "plugin.jobs:write"}} {
		e.requireError(e.do(http.MethodPost, p("/webhooks/"+mine.ID+"/replay"), e.issueKey(scopes...), nil), http.StatusForbidden, plugin.CodeForbidden)
	}
	// The permission's own name works as a scope.
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(nil, errors.New("temporal is down")).Once()
	e.requireError(e.do(http.MethodPost, p("/webhooks/"+mine.ID+"/replay"), e.issueKey(plugin.PermWebhooksManage), nil),
		http.StatusServiceUnavailable, plugin.CodeUnavailable)
	e.requireError(e.do(http.MethodPost, p("/webhooks/"+mine.ID+"/replay"), "", nil), http.StatusUnauthorized, plugin.CodeUnauthorized)
}

// A delivery recorded before endpoints existed for an installation without a callback URL has no
// endpoint: nothing can receive it, so its replay is refused 409 conflict, as one to a disabled or
// deleted endpoint is, and nothing is started (it answered 202 and then failed every attempt).
func TestReplayOfADeliveryWithoutEndpointIsAConflict(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]envOption{"sqlite": nil, "postgres": {onPostgres()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, opts...)
			e.withTemporal() // its expectations: no ExecuteWorkflow at all
			legacy := e.deliveryTo(e.inst, nil)
			msg := e.requireError(e.do(http.MethodPost, p("/webhooks/"+legacy.ID+"/replay"), e.key, nil), http.StatusConflict, plugin.CodeConflict)
			assert.Contains(t, msg, "no endpoint")
			d, err := models.GetWebhookDelivery(e.db, legacy.ID)
			require.NoError(t, err)
			assert.Equal(t, legacy.Status, d.Status, "a refused replay changes nothing")
			assert.Zero(t, d.Attempts)
		})
	}
}

func TestRotateHMAC(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handler.Secrets = e.box
	before := time.Now()
	rec := e.do(http.MethodPost, p("/installations/"+e.inst.ID+"/rotate-hmac"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	body := decode(t, rec)
	assert.Equal(t, []string{"installation_id", "previous_secret_valid_until", "webhook_secret"}, keysOf(body))
	assert.Equal(t, e.inst.ID, body["installation_id"])
	secret, _ := body["webhook_secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "secret %q", secret)
	until, err := time.Parse(time.RFC3339Nano, body["previous_secret_valid_until"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, before.Add(48*time.Hour), until, 5*time.Second)

	// Both secrets sign for 48 hours, then only the new one; the new one is stored encrypted.
	inst, err := models.GetInstallation(e.db, e.inst.ID)
	require.NoError(t, err)
	assert.NotContains(t, inst.WebhookSecretEnc, strings.TrimPrefix(secret, "whsec_"))
	got, err := models.WebhookSecrets(e.box, inst, time.Now())
	require.NoError(t, err)
	assert.Equal(t, []string{secret, "whsec"}, got)
	got, err = models.WebhookSecrets(e.box, inst, until)
	require.NoError(t, err)
	assert.Equal(t, []string{secret}, got)

	// A second rotation shows a different secret, once.
	rec = e.do(http.MethodPost, p("/installations/"+e.inst.ID+"/rotate-hmac"), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.NotEqual(t, secret, decode(t, rec)["webhook_secret"])
}

func TestRotateHMACErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handler.Secrets = e.box
	otherInst, _ := e.otherInstallation()
	sibling, _ := e.addInstallation(e.account.ID, 0)
	for _, id := range []string{otherInst.ID, sibling.ID, models.NewID()} {
		e.requireError(e.do(http.MethodPost, p("/installations/"+id+"/rotate-hmac"), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	e.requireError(e.do(http.MethodPost, p("/installations/"+e.inst.ID+"/rotate-hmac"), e.issueKey("plugin.webhooks:manage", "plugin.jobs:read"), nil),
		http.StatusForbidden, plugin.CodeForbidden)
	// Nothing was rotated.
	for _, inst := range []*models.Installation{e.inst, otherInst, sibling} {
		got, err := models.GetInstallation(e.db, inst.ID)
		require.NoError(t, err)
		assert.Empty(t, got.PreviousWebhookSecretEnc)
		assert.Equal(t, inst.WebhookSecretEnc, got.WebhookSecretEnc)
	}
}

// The webhook's body is the job as GET /jobs/{id} shows it, at its top level: same fields, same
// values, and beside them only the notification's event, delivery ID and creation time.
func TestWebhookPayloadIsTheJobAsTheAPIShowsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, j, asset := e.storeJob(e.inst)
	rec := e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	apiJob := decode(t, rec)

	stored, err := models.GetJob(e.db, j.ID)
	require.NoError(t, err)
	created := time.Now().UTC().Truncate(time.Second)
	body, err := webhooks.BuildJobPayload(webhooks.JobPayload{
		DeliveryID: "d", Event: webhooks.EventJobCompleted, CreatedAt: created, Job: stored,
		Outputs: []models.Asset{e.asset(asset.ID)}, Signer: e.signer, DownloadTTL: 168 * time.Hour,
	})
	require.NoError(t, err)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(body, &payload))
	assert.Equal(t, map[string]any{"event": "job.completed", "delivery_id": "d", "delivery_created_at": created.Format(time.RFC3339)},
		map[string]any{"event": payload["event"], "delivery_id": payload["delivery_id"], "delivery_created_at": payload["delivery_created_at"]})
	for _, k := range []string{"event", "delivery_id", "delivery_created_at"} {
		delete(payload, k)
	}

	apiOuts, hookOuts := apiJob["outputs"].([]any), payload["outputs"].([]any)
	delete(apiJob, "outputs")
	delete(payload, "outputs")
	assert.Equal(t, apiJob, payload)
	require.Len(t, hookOuts, 1)
	require.Len(t, apiOuts, 1)
	apiOut, hookOut := apiOuts[0].(map[string]any), hookOuts[0].(map[string]any)
	u, err := url.Parse(hookOut["url"].(string))
	require.NoError(t, err)
	assert.Equal(t, files.Path(asset.ID), u.Path, "the webhook links the API's download route")
	require.NoError(t, e.signer.Verify(http.MethodGet, u.Path, u.Query(), time.Now().Add(7*24*time.Hour)))
	for _, k := range []string{"url", "expires_at"} {
		delete(apiOut, k)
		delete(hookOut, k)
	}
	assert.Equal(t, apiOut, hookOut)
}
