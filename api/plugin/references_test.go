package plugin_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// referenceItem stores a scenery or fashion model of the account (nil: the marketplace's).
func (e *env) referenceItem(kind models.ReferenceKind, accountID *string, status string) string {
	e.t.Helper()
	it := models.ReferenceItem{AccountID: accountID, Name: "item", Status: status}
	require.NoError(e.t, models.CreateReferenceItem(e.db, kind, &it))
	return it.ID
}

// withConfig is a session of one approved product with the given session_config.
func withConfig(config map[string]any) map[string]any {
	return map[string]any{"session_config": config, "subjects": []any{subject("ok")}}
}

// A session_config's scenery_id and model_id must name a scenery and a fashion model the account
// may use. Not a UUID, unknown, not usable or another account's: 400 invalid_input naming the
// field, alike, with nothing created or charged, on POST /jobs and within POST /jobs/batch.
func TestSessionReferencesMustBeUsable(t *testing.T) {
	e := newEnv(t)
	e.approved("ok")
	otherInst, _ := e.otherInstallation()
	foreignScenery := e.referenceItem(models.KindScenery, &otherInst.AccountID, models.RefStatusDone)
	foreignModel := e.referenceItem(models.KindFashionModel, &otherInst.AccountID, models.RefStatusDone)
	ownScenery := e.referenceItem(models.KindScenery, &e.account.ID, models.RefStatusDone)
	failedScenery := e.referenceItem(models.KindScenery, &e.account.ID, models.RefStatusFailed)

	for _, tc := range []struct {
		field, id string
	}{
		{"scenery_id", "white-marble"}, {"scenery_id", models.NewID()}, {"scenery_id", foreignScenery},
		{"scenery_id", failedScenery},
		{"model_id", "7"}, {"model_id", models.NewID()}, {"model_id", foreignModel}, {"model_id", ownScenery},
	} {
		msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, withConfig(map[string]any{tc.field: tc.id})),
			http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, "session_config."+tc.field, tc.id)
		assert.Contains(t, msg, tc.id)
	}

	rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(withConfig(map[string]any{"scenery_id": foreignScenery})))
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	var out plugin.BatchResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.Len(t, out.Results, 1)
	assert.Equal(t, http.StatusBadRequest, out.Results[0].Status)
	assert.Contains(t, out.Results[0].Error.MessageI18n["en"], "session_config.scenery_id")
	e.noOrders()
}

// A usable scenery and fashion model are accepted, in either case, and stored as the catalog
// spells them; a clone checks them again, so one rejected since is refused.
func TestSessionReferencesAccepted(t *testing.T) {
	e := newEnv(t).committing()
	e.approved("ok")
	scenery := e.referenceItem(models.KindScenery, &e.account.ID, models.RefStatusDone)
	model := e.referenceItem(models.KindFashionModel, nil, models.RefStatusDone)

	rec := e.do(http.MethodPost, p("/jobs"), e.key, withConfig(map[string]any{"scenery_id": strings.ToUpper(scenery), "model_id": model}))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var s plugin.SessionResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	var order models.Order
	require.NoError(t, e.db.Take(&order, "id = ?", s.OrderID).Error)
	assert.JSONEq(t, `{"aspect_ratio":"1:1","scenery_id":"`+scenery+`","model_id":"`+model+`"}`, string(order.SessionConfig))

	require.NoError(t, e.db.Table("sceneries").Where("id = ?", scenery).Update("voting", models.RefVotingRejected).Error)
	code, body := e.clone(s.OrderID, "clone-rejected-scenery", nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body["error"].(map[string]any)["message_i18n"].(map[string]any)["en"], "session_config.scenery_id")
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"))
}
