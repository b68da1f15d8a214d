package plugin_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
)

// Every route of the document that takes a JSON body refuses a value of the wrong type in any of
// its fields with 400 invalid_input whose message names the field and what it must be, in the
// client's terms (no Go types or decoder internals). The sessions of a batch are judged alike, in
// their own result.
func TestEveryJSONRouteExplainsWrongTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases, err := contract.Plugin.WrongTypes()
	require.NoError(t, err)
	for _, c := range cases {
		e.clock.Advance(2 * time.Second) // out of the rate limit's way: more cases than a minute's budget
		rec := e.do(c.Method, p(c.Path), e.key, c.Body, "Idempotency-Key", models.NewID())
		msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, c.Field+" must be "+c.Expected, "%s %s %s", c.Method, c.Path, c.Body)
		assert.Empty(t, contract.GoInternal(msg), "%s %s: %q", c.Method, c.Path, msg)
		if c.Path != "/jobs" {
			continue
		}
		rec = e.do(http.MethodPost, p("/jobs/batch"), e.key, `{"batches":[`+string(c.Body)+`]}`)
		require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
		var out struct {
			Results []struct {
				Status int                `json:"status"`
				Error  plugin.ErrorDetail `json:"error"`
			} `json:"results"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		require.Len(t, out.Results, 1)
		assert.Equal(t, http.StatusBadRequest, out.Results[0].Status)
		assert.Contains(t, out.Results[0].Error.MessageI18n["en"], "batches[0]: "+c.Field+" must be "+c.Expected)
	}
	e.noOrders()
}

// Every route of the document that takes a JSON body refuses null in any field the document does
// not mark nullable, with 400 invalid_input naming the field, and creates nothing: a null is not
// the field left out (it would quietly become the default). The sessions of a batch are judged
// alike, in their own result. PUT /alerts' low_balance_threshold, nullable, is not among them.
func TestEveryJSONRouteRefusesNull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.approved("x")
	cases, err := contract.Plugin.Nulls()
	require.NoError(t, err)
	for _, c := range cases {
		assert.NotEqual(t, "low_balance_threshold", c.Field, "the document marks it nullable")
		e.clock.Advance(2 * time.Second) // out of the rate limit's way: more cases than a minute's budget
		rec := e.do(c.Method, p(c.Path), e.key, c.Body, "Idempotency-Key", models.NewID())
		msg := e.requireError(rec, http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.Contains(t, msg, c.Field+" must not be null", "%s %s %s", c.Method, c.Path, c.Body)
		if c.Path != "/jobs" {
			continue
		}
		rec = e.do(http.MethodPost, p("/jobs/batch"), e.key, `{"batches":[`+string(c.Body)+`]}`)
		require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
		assert.Contains(t, rec.Body.String(), "batches[0]: "+c.Field+" must not be null")
	}
	e.noOrders()
}

// Every JSON route refuses a body that is not valid UTF-8 anywhere, even outside a string (where
// no text check of the values sees it), with 400 invalid_input.
func TestEveryJSONRouteRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	routes := []string{"/jobs", "/jobs/batch", "/orders/" + models.NewID() + "/clone", "/assets/upload", "/packshots", "/images",
		"/webhook-endpoints"}
	bodies := map[string]string{
		"in a string":          "{\"subjects\":[{\"product_ref\":\"a\xffb\"}]}",
		"in a key":             "{\"sub\xc3\x28jects\":[]}",
		"after the object":     "{} \xff",
		"an encoded surrogate": "{\"x\":\"\xed\xa0\x80\"}",
	}
	for _, r := range routes {
		for name, body := range bodies {
			msg := e.requireError(e.do(http.MethodPost, p(r), e.key, body, "Idempotency-Key", models.NewID()),
				http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.Contains(t, msg, "not valid UTF-8", "%s %s", r, name)
		}
	}
	e.noOrders()
}

// Every JSON route refuses a key in another case, a repeated key and an unknown key, naming it.
func TestEveryJSONRouteIsStrictAboutNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ route, body, want string }{
		{"/assets/upload", `{"mode":"presigned","filename":"a.png","content_type":"image/png","Size_bytes":10}`, "Size_bytes is not a field of this request; did you mean size_bytes?"},
		{"/assets/upload", `{"mode":"presigned","filename":"a.png","content_type":"image/png","size_bytes":10,"size_bytes":20}`, "size_bytes is given more than once"},
		{"/assets/upload", `{"mode":"presigned","filename":"a.png","content_type":"image/png","size_bytes":10,"checksum":"x"}`, "checksum is not a field of this request"},
		{"/packshots", `{"packshots":[{"asset_id":"a","product_ref":"p","Product_metadata":{}}]}`, "packshots[0].Product_metadata is not a field"},
		{"/packshots", `{"packshots":[{"asset_id":"a","product_ref":"p","product_metadata":{"display_name":"a","color":"red"}}]}`, "packshots[0].product_metadata.color is not a field"},
		{"/images", `{"images":[],"Images":[]}`, "Images is not a field of this request; did you mean images?"},
		{"/images", `{"images":[{"external_ref":"e","external_ref":"f","product_ref":"p","asset_id":"a"}]}`, "images[0].external_ref is given more than once"},
		{"/orders/" + models.NewID() + "/clone", `{"subjects":[{"product_ref":"p","images_count":1,"Ai_model":"x"}]}`, "subjects[0].Ai_model is not a field"},
		{"/jobs", `{"session_config":{"Style":"x"},"subjects":[]}`, "session_config.Style is not a field of this request; did you mean style?"},
	} {
		msg := e.requireError(e.do(http.MethodPost, p(c.route), e.key, c.body, "Idempotency-Key", models.NewID()),
			http.StatusBadRequest, plugin.CodeInvalidInput)
		assert.True(t, strings.Contains(msg, c.want), "%s %s: %q, want %q", c.route, c.body, msg, c.want)
	}
	e.noOrders()
}
