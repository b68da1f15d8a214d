package plugin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
)

// A reference holding "/", "%", "?", "#" and spaces (all allowed at registration) addresses its
// product and packshot when percent-encoded in {id_or_ref}: read and deleted.
func TestRefsWithReservedCharactersCanBeAddressed(t *testing.T) {
	e := newEnv(t)
	const ref = "a/b c%d?e#f"
	asset := e.readyAsset(e.inst)
	img := e.registerImages(e.key, map[string]any{"external_ref": "img/" + ref, "product_ref": ref, "asset_id": asset.ID,
		"product_metadata": map[string]any{"display_name": "Slash"}})[0]
	require.Equal(t, "created", img["status"], img)
	shot := e.registerPackshots(e.key, map[string]any{"asset_id": e.readyAsset(e.inst).ID, "product_ref": ref,
		"external_ref": "ps/" + ref})[0]
	require.Equal(t, "created", shot["status"], shot)

	path := p("/products/" + url.PathEscape(ref))
	got := e.getOK(path, e.key)
	assert.Equal(t, ref, got["external_ref"])
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, p("/packshots/"+url.PathEscape("ps/"+ref)), e.key, nil).Code)
	require.Equal(t, http.StatusNoContent, e.do(http.MethodDelete, path, e.key, nil).Code)
	e.requireError(e.do(http.MethodGet, path, e.key, nil), http.StatusNotFound, plugin.CodeNotFound)

	// The route still needs its segments: an unencoded "/" is another path.
	e.requireError(e.do(http.MethodGet, p("/products/a/b"), e.key, nil), http.StatusNotFound, plugin.CodeNotFound)
}

// References that could not be addressed or read back are refused at registration with 400
// invalid_input naming the field, and nothing is registered.
func TestUnaddressableRefsAreRefused(t *testing.T) {
	e := newEnv(t)
	asset := e.readyAsset(e.inst).ID
	for bad, want := range map[string]string{
		"a\tb": "not U+0009", "line\nbreak": "not U+000A", "zero\u200bwidth": "not U+200B",
		".": `must not be "." or ".."`, "..": `must not be "." or ".."`, " padded": "must not start or end with a space",
	} {
		for _, tc := range []struct {
			route, list, field string
			item               map[string]any
		}{
			{"/images", "images", "external_ref", map[string]any{"external_ref": bad, "product_ref": "ok", "asset_id": asset}},
			{"/images", "images", "product_ref", map[string]any{"external_ref": "ok", "product_ref": bad, "asset_id": asset}},
			{"/packshots", "packshots", "product_ref", map[string]any{"product_ref": bad, "asset_id": asset}},
			{"/packshots", "packshots", "external_ref", map[string]any{"external_ref": bad, "product_ref": "ok", "asset_id": asset}},
		} {
			body := map[string]any{tc.list: []any{map[string]any{"external_ref": "fine", "product_ref": "ok", "asset_id": asset}, tc.item}}
			msg := e.requireError(e.do(http.MethodPost, p(tc.route), e.key, body), http.StatusBadRequest, plugin.CodeInvalidInput)
			assert.True(t, strings.HasPrefix(msg, tc.list+"[1]."+tc.field+" "), "%s %q: %s", tc.route, bad, msg)
			assert.Contains(t, msg, want)
		}
	}
	assert.Zero(t, e.count(&models.Product{}, "1 = 1"))
	assert.Zero(t, e.count(&models.ProductImage{}, "1 = 1"))
	assert.Zero(t, e.count(&models.Packshot{}, "1 = 1"))
}
