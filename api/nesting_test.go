package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/api/inputcheck"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models"
)

// TestEveryBodyRefusesDeepNesting sends every route that takes a JSON body a body of almost its
// limit (at most 1 MiB) nested one object inside the other, and every multipart route a text field
// nested the same way, and checks the answer is 400 in the route's error body, in its contract,
// naming the nesting. The refusal comes as the bytes arrive, before any decoder sees them: a body
// like this once cost seconds of CPU per request.
func TestEveryBodyRefusesDeepNesting(t *testing.T) {
	s := newServer(t)
	ext, err := models.IssueKey(s.db, models.KeyKindExternal, s.inst.AccountID, nil, "k", models.ExternalScopes, nil)
	require.NoError(t, err)
	for name, body := range routeBodies {
		t.Run(name, func(t *testing.T) {
			method, path, _ := strings.Cut(name, " ")
			path = strings.ReplaceAll(path, ":id", models.NewID())
			size := min(body.limit, 1<<20) - 1024
			hostile := strings.Repeat(`{"a":`, int(size)/5)
			contentType, payload := "application/json", hostile
			if body.multipart {
				payload = "--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n" + hostile + "\r\n--b--\r\n"
				contentType = "multipart/form-data; boundary=b"
			}
			req := httptest.NewRequest(method, path, strings.NewReader(payload))
			req.Header.Set("Content-Type", contentType)
			isExternal := strings.HasPrefix(path, external.Base+"/")
			req.Header.Set("X-Api-Key", s.key)
			if isExternal {
				req.Header.Set("X-Api-Key", ext.Secret)
			}
			rec := httptest.NewRecorder()
			s.router.ServeHTTP(rec, req)
			want := "more than " + "32" + " levels deep"
			if isExternal {
				var got map[string]string
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got), rec.Body.String())
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				require.Contains(t, got["error"], want)
			} else {
				require.Contains(t, requireError(t, rec, http.StatusBadRequest, plugin.CodeInvalidInput), want)
			}
			doc := contract.Plugin
			if isExternal {
				doc = contract.External
			}
			res := rec.Result()
			require.NoError(t, doc.Validate(req, []byte{}, res.StatusCode, res.Header, rec.Body.Bytes()))
		})
	}
	require.Equal(t, 32, inputcheck.MaxDepth, "the OpenAPI documents state the limit")
}
