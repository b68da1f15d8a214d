package plugin_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// An empty string is a value, not an omission: the optional fields of a session, a batch's
// sessions and a clone's subjects that have a default (or name a record) refuse "" with 400
// invalid_input naming the field, and nothing is created or charged.
func TestEmptyStringsAreNotDefaults(t *testing.T) {
	e := newEnv(t)
	e.approved("ok")
	withSubject := func(field string) map[string]any {
		s := subject("ok")
		s[field] = ""
		return map[string]any{"session_config": map[string]any{}, "subjects": []any{s}}
	}
	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"job_type":          {map[string]any{"job_type": "", "session_config": map[string]any{}, "subjects": []any{subject("ok")}}, "job_type"},
		"aspect_ratio":      {withConfig(map[string]any{"aspect_ratio": ""}), "session_config.aspect_ratio"},
		"scenery_id":        {withConfig(map[string]any{"scenery_id": ""}), "session_config.scenery_id"},
		"model_id":          {withConfig(map[string]any{"model_id": ""}), "session_config.model_id"},
		"packshot_asset_id": {withSubject("packshot_asset_id"), "subjects[0].packshot_asset_id"},
		"product_label":     {withSubject("product_label"), "subjects[0].product_label"},
	} {
		t.Run(name, func(t *testing.T) {
			msg := e.requireError(e.do(http.MethodPost, p("/jobs"), e.key, tc.body), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Equal(t, tc.field+" must not be empty; omit it to use the default", msg)

			rec := e.do(http.MethodPost, p("/jobs/batch"), e.key, batch(tc.body))
			require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
			var out plugin.BatchResponse
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.Len(t, out.Results, 1)
			assert.Equal(t, http.StatusBadRequest, out.Results[0].Status)
			assert.Contains(t, out.Results[0].Error.MessageI18n["en"], tc.field+" must not be empty")
		})
	}
	e.noOrders()
}

// A clone's replacement subjects refuse "" for the fields they would otherwise take from the
// source order.
func TestCloneEmptyStringsAreNotDefaults(t *testing.T) {
	e := newEnv(t).committing()
	src := e.sourceOrder()
	for _, field := range []string{"product_label", "packshot_asset_id", "ai_model"} {
		code, body := e.clone(src.OrderID, "empty-"+field, map[string]any{"subjects": []any{
			map[string]any{"product_ref": "a", "images_count": 1, field: ""}}})
		require.Equal(t, http.StatusBadRequest, code, body)
		assert.Equal(t, "subjects[0]."+field+" must not be empty; omit it to use the default",
			body["error"].(map[string]any)["message_i18n"].(map[string]any)["en"])
	}
	assert.Equal(t, int64(1), e.count(&models.Order{}, "1 = 1"), "only the source order")
}
