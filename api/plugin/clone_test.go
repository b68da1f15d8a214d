package plugin_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// sourceOrder creates, through POST /jobs, a session of a (2 images, labelled) and b (1 image)
// with a style and an aspect ratio, rates one of its jobs, and returns its response.
func (e *env) sourceOrder() plugin.SessionResponse {
	e.t.Helper()
	e.approved("a")
	e.approved("b")
	rec := e.do(http.MethodPost, p("/jobs"), e.key, map[string]any{
		"session_config": map[string]any{"style": "marble", "aspect_ratio": "4:5"},
		"subjects": []any{
			map[string]any{"product_ref": "a", "product_label": "Mug A", "images_count": 2, "ai_model": "local/studio-v1"},
			map[string]any{"product_ref": "b", "images_count": 1, "ai_model": "local/studio-v1"},
		},
	})
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	var s plugin.SessionResponse
	require.NoError(e.t, json.Unmarshal(rec.Body.Bytes(), &s))
	now := time.Now().UTC()
	require.NoError(e.t, e.db.Model(&models.Job{}).Where("id = ?", s.Subjects[0].JobIDs[0]).
		Updates(map[string]any{"voting": models.VotingAccepted, "voting_at": now}).Error)
	return s
}

func (e *env) clone(orderID, key string, body any) (int, map[string]any) {
	e.t.Helper()
	rec := e.do(http.MethodPost, p("/orders/"+orderID+"/clone"), e.key, body, keyHeader, key)
	return rec.Code, decode(e.t, rec)
}

func (e *env) jobsOf(orderID string) []models.Job {
	e.t.Helper()
	var jobs []models.Job
	require.NoError(e.t, e.db.Where("order_id = ?", orderID).Order("position").Find(&jobs).Error)
	return jobs
}

func TestCloneReusesTheSubjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	src := e.sourceOrder()
	availBefore, _ := e.credits()

	rec := e.do(http.MethodPost, p("/orders/"+src.OrderID+"/clone"), e.key, nil, keyHeader, "clone-1")
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var s plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	require.NotEqual(t, src.OrderID, s.OrderID)
	require.Len(t, s.Subjects, 2)
	assert.Equal(t, "a", s.Subjects[0].ProductRef)
	assert.Len(t, s.Subjects[0].JobIDs, 2)
	assert.Equal(t, "b", s.Subjects[1].ProductRef)
	assert.Len(t, s.Subjects[1].JobIDs, 1)
	assert.Equal(t, int64(3), s.CreditsReserved)

	// Charged anew, from the same session_config, with the source recorded; ratings not carried over.
	avail, reserved := e.credits()
	assert.Equal(t, availBefore-3, avail)
	assert.Equal(t, int64(6), reserved)
	var o, so models.Order
	require.NoError(t, e.db.Take(&o, "id = ?", s.OrderID).Error)
	require.NoError(t, e.db.Take(&so, "id = ?", src.OrderID).Error)
	require.NotNil(t, o.SourceOrderID)
	assert.Equal(t, src.OrderID, *o.SourceOrderID)
	assert.JSONEq(t, string(so.SessionConfig), string(o.SessionConfig))
	assert.Equal(t, so.JobType, o.JobType)
	srcJobs, jobs := e.jobsOf(src.OrderID), e.jobsOf(s.OrderID)
	require.Len(t, jobs, 3)
	for i, j := range jobs {
		assert.Equal(t, srcJobs[i].ProductRef, j.ProductRef)
		assert.Equal(t, srcJobs[i].ProductLabel, j.ProductLabel)
		assert.Equal(t, srcJobs[i].AIModel, j.AIModel)
		assert.Equal(t, "4:5", j.AspectRatio)
		assert.Equal(t, srcJobs[i].PackshotID, j.PackshotID)
		assert.Equal(t, models.VotingPending, j.Voting)
		assert.Nil(t, j.VotingAt)
	}
	assert.Equal(t, "Mug A", jobs[0].ProductLabel)
	order := decode(t, e.do(http.MethodGet, p("/orders/"+s.OrderID), e.key, nil))
	assert.Equal(t, src.OrderID, order["source_order_id"])

	// The same key replays (200, same answer, nothing charged); with another body it conflicts.
	again := e.do(http.MethodPost, p("/orders/"+src.OrderID+"/clone"), e.key, nil, keyHeader, "clone-1")
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, rec.Body.String(), again.Body.String())
	again = e.do(http.MethodPost, p("/orders/"+src.OrderID+"/clone"), e.key, map[string]any{}, keyHeader, "clone-1")
	require.Equal(t, http.StatusOK, again.Code, "{} is the empty body: %s", again.Body.String())
	e.requireError(e.do(http.MethodPost, p("/orders/"+src.OrderID+"/clone"), e.key,
		map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 1}}}, keyHeader, "clone-1"),
		http.StatusConflict, plugin.CodeIdempotencyConflict)
	avail2, _ := e.credits()
	assert.Equal(t, avail, avail2)
	assert.Equal(t, int64(2), e.count(&models.Order{}, "1 = 1"))

	// A new key clones again; a clone can be cloned.
	code, body := e.clone(s.OrderID, "clone-2", nil)
	require.Equal(t, http.StatusCreated, code, body)
	var c2 models.Order
	require.NoError(t, e.db.Take(&c2, "id = ?", body["order_id"]).Error)
	assert.Equal(t, s.OrderID, *c2.SourceOrderID)
}

func TestCloneWithReplacementSubjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t).committing()
	src := e.sourceOrder()
	e.approved("c")
	code, body := e.clone(src.OrderID, "k", map[string]any{"subjects": []any{
		map[string]any{"product_ref": "b", "images_count": 3},                                                      // from the source: its model
		map[string]any{"product_ref": "c", "images_count": 1, "ai_model": "local/studio-v1", "product_label": "C"}, // new
	}})
	require.Equal(t, http.StatusCreated, code, body)
	assert.Equal(t, float64(4), body["credits_reserved"])
	subjects := body["subjects"].([]any)
	require.Len(t, subjects, 2, "the list is replaced: a is gone")
	assert.Equal(t, "b", subjects[0].(map[string]any)["product_ref"])
	assert.Len(t, subjects[0].(map[string]any)["job_ids"], 3)
	assert.Equal(t, "c", subjects[1].(map[string]any)["product_ref"])
	jobs := e.jobsOf(body["order_id"].(string))
	require.Len(t, jobs, 4)
	assert.Equal(t, "local/studio-v1", jobs[0].AIModel)
	assert.Equal(t, "Product b", jobs[0].ProductLabel)
	assert.Equal(t, "C", jobs[3].ProductLabel)
	assert.Equal(t, "4:5", jobs[3].AspectRatio)
}

func TestCloneRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCredits(4)).committing()
	src := e.sourceOrder() // 3 credits: 1 left
	theirInst, _ := e.otherInstallation()
	theirOrder, _, _ := e.storeJob(theirInst)
	siblingInst, _ := e.addInstallation(e.account.ID, 0)
	siblingOrder, _, _ := e.storeJob(siblingInst)

	// Unknown order, another installation's order (same account or not), a malformed ID: 404.
	for _, id := range []string{models.NewID(), theirOrder.ID, siblingOrder.ID, "nope"} {
		code, body := e.clone(id, "k404", nil)
		require.Equal(t, http.StatusNotFound, code, body)
		assert.Equal(t, plugin.CodeNotFound, body["error"].(map[string]any)["code"])
	}
	// Bad bodies: 400.
	for name, b := range map[string]any{
		"empty subjects":        map[string]any{"subjects": []any{}},
		"session_config":        map[string]any{"session_config": map[string]any{"style": "x"}},
		"not JSON":              `{"subjects":`,
		"images_count 0":        map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 0}}},
		"images_count 21":       map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 21}}},
		"new product, no model": map[string]any{"subjects": []any{map[string]any{"product_ref": "zzz", "images_count": 1}}},
		"duplicate product":     map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 1}, map[string]any{"product_ref": "a", "images_count": 1}}},
		"unknown model":         map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 1, "ai_model": "x/y"}}},
		"subjects not an array": map[string]any{"subjects": "a"},
		"missing images_count":  map[string]any{"subjects": []any{map[string]any{"product_ref": "a"}}},
		"missing product_ref":   map[string]any{"subjects": []any{map[string]any{"images_count": 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := e.clone(src.OrderID, "k400", b)
			require.Equal(t, http.StatusBadRequest, code, body)
			assert.Equal(t, plugin.CodeInvalidInput, body["error"].(map[string]any)["code"])
		})
	}
	code, body := e.clone(src.OrderID, "k400", map[string]any{"subjects": []any{}})
	require.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["error"].(map[string]any)["message_i18n"].(map[string]any)["en"], "omit it")
	code, body = e.clone(src.OrderID, "k400", map[string]any{"subjects": []any{map[string]any{"product_ref": "zzz", "images_count": 1}}})
	require.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["error"].(map[string]any)["message_i18n"].(map[string]any)["en"], "subjects[0].ai_model")

	// 402: the clone costs 3, 1 credit is left.
	code, body = e.clone(src.OrderID, "k402", nil)
	require.Equal(t, http.StatusPaymentRequired, code, body)
	assert.Equal(t, plugin.CodeInsufficientCredits, body["error"].(map[string]any)["code"])
	assert.Equal(t, map[string]any{"credits_required": float64(3)}, body["error"].(map[string]any)["details"])

	// 422: b's packshot is no longer approved, so resolution fails.
	require.NoError(t, e.db.Exec(`UPDATE packshots SET voting = ? WHERE product_id = (SELECT id FROM products WHERE external_ref = 'b')`,
		models.VotingRejected).Error)
	code, body = e.clone(src.OrderID, "k422", map[string]any{"subjects": []any{map[string]any{"product_ref": "b", "images_count": 1}}})
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Equal(t, plugin.CodePackshotNotApproved, body["error"].(map[string]any)["code"])
	assert.Equal(t, map[string]any{"product_refs": []any{"b"}}, body["error"].(map[string]any)["details"])

	// Nothing was created, nothing charged, no key kept: the keys are free for a corrected retry.
	assert.Equal(t, int64(1), e.count(&models.Order{}, "installation_id = ?", e.inst.ID))
	avail, reserved := e.credits()
	assert.Equal(t, int64(1), avail)
	assert.Equal(t, int64(3), reserved)
	assert.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	code, body = e.clone(src.OrderID, "k402", map[string]any{"subjects": []any{map[string]any{"product_ref": "a", "images_count": 1}}})
	require.Equal(t, http.StatusCreated, code, body)
}
