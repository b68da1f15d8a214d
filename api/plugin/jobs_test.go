package plugin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/files"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// subject is a valid subject entry for product ref.
func subject(ref string) map[string]any {
	return map[string]any{"product_ref": ref, "images_count": 2, "ai_model": "local/studio-v1"}
}

func session(subjects ...map[string]any) map[string]any {
	list := make([]any, len(subjects))
	for i, s := range subjects {
		list[i] = s
	}
	return map[string]any{"session_config": map[string]any{"style": "studio"}, "subjects": list}
}

// noOrders asserts that nothing was created and nothing was charged.
func (e *env) noOrders() {
	e.t.Helper()
	assert.Zero(e.t, e.count(&models.Order{}, "1 = 1"), "orders")
	assert.Zero(e.t, e.count(&models.Job{}, "1 = 1"), "jobs")
	acc, err := models.GetAccount(e.db, e.account.ID)
	require.NoError(e.t, err)
	assert.Equal(e.t, int64(500), acc.CreditBalance)
	assert.Zero(e.t, acc.CreditsReserved)
}

func TestCreateSessionValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	many := make([]map[string]any, plugin.MaxSubjectsPerSession+1)
	for i := range many {
		many[i] = subject("p" + string(rune('a'+i%26)) + strings.Repeat("x", i/26))
	}
	cases := []struct {
		name string
		body any
		want []string // substrings of the message
	}{
		{"invalid JSON", `{"session_config":`, []string{"JSON"}},
		{"empty body", "", []string{"empty"}},
		{"array body", `[]`, nil},
		{"null body", `null`, []string{"must be a JSON object, not null"}},
		{"missing session_config", map[string]any{"subjects": []any{subject("p1")}}, []string{"session_config"}},
		{"null session_config", map[string]any{"session_config": nil, "subjects": []any{subject("p1")}}, []string{"session_config"}},
		{"missing subjects", map[string]any{"session_config": map[string]any{}}, []string{"subjects"}},
		{"empty subjects", session(), []string{"subjects"}},
		{"too many subjects", session(many...), []string{"subjects"}},
		{"images_count 0", session(map[string]any{"product_ref": "p1", "images_count": 0, "ai_model": "local/studio-v1"}),
			[]string{"subjects[0].images_count"}},
		{"images_count 21", session(subject("p0"), map[string]any{"product_ref": "p1", "images_count": 21, "ai_model": "local/studio-v1"}),
			[]string{"subjects[1].images_count"}},
		{"images_count first subject 21", session(map[string]any{"product_ref": "p1", "images_count": 21, "ai_model": "local/studio-v1"}),
			[]string{"subjects[0].images_count"}},
		{"images_count negative", session(map[string]any{"product_ref": "p1", "images_count": -1, "ai_model": "local/studio-v1"}),
			[]string{"subjects[0].images_count"}},
		{"images_count string", session(map[string]any{"product_ref": "p1", "images_count": "2", "ai_model": "local/studio-v1"}),
			[]string{"images_count"}},
		{"missing product_ref", session(map[string]any{"images_count": 1, "ai_model": "local/studio-v1"}),
			[]string{"subjects[0].product_ref"}},
		{"missing ai_model", session(map[string]any{"product_ref": "p1", "images_count": 1}),
			[]string{"subjects[0].ai_model"}},
		{"unknown ai_model", session(map[string]any{"product_ref": "p1", "images_count": 1, "ai_model": "acme/unknown"}),
			[]string{"subjects[0].ai_model", "acme/unknown"}},
		{"ai_model without provider", session(map[string]any{"product_ref": "p1", "images_count": 1, "ai_model": "studio-v1"}),
			[]string{"subjects[0].ai_model"}},
		{"unsupported aspect ratio", map[string]any{"session_config": map[string]any{"aspect_ratio": "5:7"}, "subjects": []any{subject("p1")}},
			[]string{"aspect_ratio", "5:7"}},
		{"aspect ratio too long", map[string]any{"session_config": map[string]any{"aspect_ratio": "1234567:8901"}, "subjects": []any{subject("p1")}},
			[]string{"session_config.aspect_ratio"}},
		{"unknown job_type", map[string]any{"job_type": "video", "session_config": map[string]any{}, "subjects": []any{subject("p1")}},
			[]string{"job_type"}},
		{"model of an unconfigured provider", map[string]any{"session_config": map[string]any{},
			"subjects": []any{map[string]any{"product_ref": "p1", "images_count": 1, "ai_model": "openai/gpt-image-1"}}},
			[]string{"subjects[0].ai_model", "openai/gpt-image-1", "GET /ai-models"}},
		{"model makes no plugin job type", map[string]any{"job_type": "packshot", "session_config": map[string]any{},
			"subjects": []any{map[string]any{"product_ref": "p1", "images_count": 1, "ai_model": "local/motion-v1",
				"auto_register_packshot": true, "packshot_asset_id": models.NewID()}}},
			[]string{"subjects[0].ai_model", "local/motion-v1"}},
		{"duplicate product_ref", session(subject("p1"), subject("p1")), []string{"subjects[1].product_ref", "p1"}},
		{"retired single-job body", map[string]any{"job_type": "photo_shoot", "provider": "x", "model": "y", "unit_cost": 1, "settings": map[string]any{}},
			[]string{"subjects", "session_config"}},
		{"retired body, only provider", map[string]any{"provider": "local"}, []string{"subjects", "session_config"}},
		{"retired body, settings only", map[string]any{"settings": map[string]any{"style": "x"}, "session_config": map[string]any{}},
			[]string{"subjects", "session_config"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			for _, w := range c.want {
				assert.Contains(t, msg, w)
			}
		})
	}
	e.noOrders()
}

func TestCreateSessionBoundsAreInclusive(t *testing.T) {
	t.Parallel()
	// images_count 1 and 20 and 100 subjects pass validation: with no catalog, they reach the
	// packshot check (422), never a 400.
	e := newEnv(t)
	many := make([]map[string]any, plugin.MaxSubjectsPerSession)
	for i := range many {
		many[i] = map[string]any{"product_ref": "ref-" + models.NewID()[:8], "images_count": 20, "ai_model": "local/studio-v1"}
	}
	many[0]["images_count"] = 1
	_, details := e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, session(many...)),
		http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	assert.Len(t, details["product_refs"], plugin.MaxSubjectsPerSession)
	e.noOrders()
}

func TestCreateSessionNeedsApprovedPackshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, _ := e.otherInstallation()

	// ok: approved packshot. pending/rejected: only unapproved ones. deleted: approved but
	// deleted. foreign: the same ref exists with an approved packshot in another installation.
	ok := e.product(e.inst, "ok")
	e.packshot(e.inst, ok.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	pending := e.product(e.inst, "pending")
	e.packshot(e.inst, pending.ID, e.readyAsset(e.inst).ID, models.VotingPending)
	rejected := e.product(e.inst, "rejected")
	e.packshot(e.inst, rejected.ID, e.readyAsset(e.inst).ID, models.VotingRejected)
	deleted := e.product(e.inst, "deleted")
	ps := e.packshot(e.inst, deleted.ID, e.readyAsset(e.inst).ID, models.VotingAccepted)
	require.NoError(t, e.db.Model(&ps).Update("deleted_at", time.Now().UTC()).Error)
	foreign := e.product(otherInst, "foreign")
	e.packshot(otherInst, foreign.ID, e.readyAsset(otherInst).ID, models.VotingAccepted)

	body := session(subject("rejected"), subject("ok"), subject("pending"), subject("missing"), subject("deleted"), subject("foreign"))
	msg, details := e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, body),
		http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	assert.Equal(t, []any{"deleted", "foreign", "missing", "pending", "rejected"}, details["product_refs"])
	assert.Contains(t, msg, "deleted, foreign, missing, pending, rejected")

	// A given packshot_asset_id must be an approved packshot of that very product.
	okOther := e.readyAsset(e.inst)
	s := subject("ok")
	s["packshot_asset_id"] = okOther.ID
	_, details = e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, session(s)),
		http.StatusUnprocessableEntity, plugin.CodePackshotNotApproved)
	assert.Equal(t, []any{"ok"}, details["product_refs"])

	e.noOrders()
}

func TestCreateSessionRefusesRetiredFieldsNextToSubjects(t *testing.T) {
	t.Parallel()
	// A session body that also carries a field of the retired single-job body is refused, naming
	// the retired fields it carries (and only those), even though the session itself would pass
	// validation and reach the packshot check.
	e := newEnv(t)
	cases := map[string][]string{
		"provider":  {"provider"},
		"model":     {"model"},
		"unit_cost": {"unit_cost"},
		"settings":  {"settings"},
		"all":       {"provider", "model", "unit_cost", "settings"},
	}
	for name, fields := range cases {
		t.Run(name, func(t *testing.T) {
			body := session(subject("p1"))
			for _, f := range fields {
				body[f] = "x"
			}
			msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, body), http.StatusBadRequest, plugin.CodeInvalidInput)
			named, _, _ := strings.Cut(msg, ":")
			assert.Equal(t, strings.Join(fields, ", "), named, msg)
			assert.Contains(t, msg, "retired")
			assert.Contains(t, msg, "ai_model replaces provider")
		})
	}
	e.noOrders()
}

func TestCreateSessionBodyIsStrict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"unknown top-level field", `{"session_config":{},"subjects":[{"product_ref":"p1","images_count":1,"ai_model":"local/studio-v1"}],"priority":1}`,
			[]string{"priority is not a field of this request", "job_type, session_config, subjects"}},
		{"unknown subject field", `{"session_config":{},"subjects":[{"product_ref":"p1","images_count":1,"ai_model":"local/studio-v1","sku":"x"}]}`,
			[]string{"subjects[0].sku is not a field of this request"}},
		{"key in another case", `{"session_config":{},"Subjects":[{"product_ref":"p1","images_count":1,"ai_model":"local/studio-v1"}]}`,
			[]string{"Subjects is not a field of this request", "did you mean subjects?"}},
		{"duplicate key", `{"session_config":{},"subjects":[{"product_ref":"p1","images_count":1,"images_count":2,"ai_model":"local/studio-v1"}]}`,
			[]string{"subjects[0].images_count is given more than once"}},
		{"wrong type", `{"session_config":{"style":3},"subjects":[]}`, []string{"session_config.style must be a string, not a number"}},
		{"two objects", `{"session_config":{},"subjects":[{"product_ref":"p1","images_count":1,"ai_model":"local/studio-v1"}]}{}`,
			[]string{"single JSON object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, c.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			for _, w := range c.want {
				assert.Contains(t, msg, w)
			}
		})
	}
	e.noOrders()
}

func TestCreateSessionBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"session_config":{"style":"` + strings.Repeat("a", 1<<20) + `"},"subjects":[]}`
	e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, body), http.StatusRequestEntityTooLarge, plugin.CodePayloadTooLarge)
	e.noOrders()
}

// storeJob creates an order with one completed job of inst, with one output asset.
func (e *env) storeJob(inst *models.Installation) (models.Order, models.Job, models.Asset) {
	e.t.Helper()
	now := time.Now().UTC()
	o := models.Order{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{"aspect_ratio":"1:1"}`), Status: status.OrderCompleted,
		JobsTotal: 1, JobsCompleted: 1, CreditsReserved: 1, CreditsConsumed: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&o).Error)
	j := models.Job{ID: models.NewID(), OrderID: o.ID, AccountID: inst.AccountID, InstallationID: &inst.ID,
		JobType: jobtype.PhotoShoot, ProductRef: "SHOE", ProductLabel: "Shoe", AIModel: "local/studio-v1",
		AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: status.JobCompleted, Voting: models.VotingPending,
		CreatedAt: now, UpdatedAt: now, CompletedAt: &now}
	require.NoError(e.t, e.db.Create(&j).Error)
	a := models.Asset{ID: models.NewID(), AccountID: inst.AccountID, InstallationID: &inst.ID, Kind: models.AssetKindOutput,
		Status: status.AssetReady, ContentType: "image/png", SizeBytes: 3, BlobKey: "outputs/" + j.ID, Width: 2, Height: 2,
		JobID: &j.ID, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&a).Error)
	return o, j, a
}

func TestGetJobAndOrderAreScopedToTheInstallation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	otherInst, otherKey := e.otherInstallation()
	siblingInst, siblingKey := e.addInstallation(e.account.ID, 0)
	myOrder, myJob, myAsset := e.storeJob(e.inst)
	theirOrder, theirJob, _ := e.storeJob(otherInst)
	sibOrder, sibJob, _ := e.storeJob(siblingInst)

	// Own records are found.
	rec := e.do(http.MethodGet, p("/jobs/"+myJob.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	job := decode(t, rec)
	assert.Equal(t, myJob.ID, job["id"])
	assert.Equal(t, myOrder.ID, job["order_id"])
	assert.Equal(t, status.JobCompleted, job["status"])
	assert.Equal(t, "SHOE", job["product_ref"])
	outs := job["outputs"].([]any)
	require.Len(t, outs, 1)
	out := outs[0].(map[string]any)
	assert.Equal(t, myAsset.ID, out["asset_id"])
	u, err := url.Parse(out["url"].(string))
	require.NoError(t, err)
	assert.Equal(t, files.Path(myAsset.ID), u.Path)
	require.NoError(t, e.signer.Verify(http.MethodGet, u.Path, u.Query(), time.Now()))
	assert.True(t, time.Until(time.Unix(mustInt(t, u.Query().Get("expires")), 0)) >= 168*time.Hour, "download URLs last at least 7 days")

	rec = e.do(http.MethodGet, p("/orders/"+myOrder.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	order := decode(t, rec)
	assert.Equal(t, myOrder.ID, order["id"])
	assert.Equal(t, float64(1), order["jobs_total"])
	assert.Equal(t, map[string]any{"aspect_ratio": "1:1"}, order["session_config"])
	assert.Len(t, order["images"], 1)

	// Other installations' records are 404, whatever the account.
	for _, id := range []string{theirJob.ID, sibJob.ID} {
		e.requireError(e.do(http.MethodGet, p("/jobs/"+id), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	for _, id := range []string{theirOrder.ID, sibOrder.ID} {
		e.requireError(e.do(http.MethodGet, p("/orders/"+id), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	}
	// And the other way round.
	e.requireError(e.do(http.MethodGet, p("/jobs/"+myJob.ID), otherKey, nil), http.StatusNotFound, plugin.CodeNotFound)
	e.requireError(e.do(http.MethodGet, p("/orders/"+myOrder.ID), siblingKey, nil), http.StatusNotFound, plugin.CodeNotFound)
	// An order ID is not a job ID and vice versa.
	e.requireError(e.do(http.MethodGet, p("/jobs/"+myOrder.ID), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
	e.requireError(e.do(http.MethodGet, p("/orders/"+myJob.ID), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
}

func TestGetJobAndOrderMalformedIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, j, _ := e.storeJob(e.inst)
	for _, id := range []string{"not-a-uuid", "123", "%27%20OR%201=1--", j.ID + "0", j.ID[:35], strings.Repeat("f", 300)} {
		for _, route := range []string{"/jobs/", "/orders/"} {
			e.requireError(e.do(http.MethodGet, p(route+id), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
		}
	}
	// Text PostgreSQL cannot store is refused at the edge (input_test.go has every route).
	for _, route := range []string{"/jobs/", "/orders/"} {
		msg := e.requireError(e.do(http.MethodGet, p(route+"%00"), e.key, nil), http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "path parameter id")
	}
}

func TestGetJobWithoutOutputsUntilCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, j, _ := e.storeJob(e.inst)
	require.NoError(t, e.db.Model(&j).Update("status", status.JobInProgress).Error)
	rec := e.do(http.MethodGet, p("/jobs/"+j.ID), e.key, nil)
	require.Equal(t, http.StatusOK, rec.Code)
	outs, ok := decode(t, rec)["outputs"].([]any)
	require.True(t, ok, "outputs is an array: %s", rec.Body.String())
	assert.Empty(t, outs)
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	var n int64
	for _, r := range s {
		require.True(t, r >= '0' && r <= '9', "not a number: %q", s)
		n = n*10 + int64(r-'0')
	}
	return n
}
