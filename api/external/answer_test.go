package external

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/engine"
)

// answer maps every kind of engine refusal to its status and the {error} body, field first, with
// Retry-After when the refusal names a delay; anything else is a 500 without detail.
func TestAnswerMapsEngineRefusals(t *testing.T) {
	// Not parallel: gin.SetMode changes gin's global mode.
	gin.SetMode(gin.TestMode)
	h := &Handler{Log: zap.NewNop()}
	for _, tc := range []struct {
		err        error
		status     int
		body       string
		retryAfter string
	}{
		{&engine.Error{Kind: engine.KindInvalid, Field: "config.x", Message: "bad."}, 400, "config.x: bad.", ""},
		{&engine.Error{Kind: engine.KindUnauthenticated, Message: "who?"}, 401, "who?", ""},
		{&engine.Error{Kind: engine.KindNotFound, Message: "gone."}, 404, "gone.", ""},
		{&engine.Error{Kind: engine.KindForbidden, Message: "not yours."}, 403, "not yours.", ""},
		{&engine.Error{Kind: engine.KindConflict, Message: "busy."}, 409, "busy.", ""},
		{&engine.Error{Kind: engine.KindInsufficientCredits, Message: "short."}, 402, "short.", ""},
		{&engine.Error{Kind: engine.KindPrerequisite, Message: "first."}, 422, "first.", ""},
		{&engine.Error{Kind: engine.KindUnavailable, Message: "later.", RetryAfter: 1500 * time.Millisecond}, 503, "later.", "2"},
		{&engine.Error{Kind: engine.KindRateLimited, Message: "slow.", RetryAfter: 7 * time.Second}, 429, "slow.", "7"},
		{refuse(http.StatusBadRequest, "count must be between 1 and 20."), 400, "count must be between 1 and 20.", ""},
		{errors.New("boom"), 500, "Internal error; retry after a short delay.", ""},
	} {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(http.MethodPost, "/", nil)
		h.answer(c, tc.err)
		var body map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tc.status || body["error"] != tc.body || w.Header().Get("Retry-After") != tc.retryAfter || body["errors"] != nil {
			t.Errorf("%v: %d %s (Retry-After %q), want %d %q (%q)", tc.err, w.Code, w.Body, w.Header().Get("Retry-After"), tc.status, tc.body, tc.retryAfter)
		}
	}
	for _, kind := range engine.Kinds {
		if _, ok := externalStatus[kind]; !ok {
			t.Errorf("engine kind %q has no status", kind)
		}
	}
}
