package plugin

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
)

// Every kind of engine refusal has its plugin status and code, so no refusal can surface as a
// 500; the typed details travel into the envelope without parsing.
func TestEngineFailureMapsEveryKind(t *testing.T) {
	// Not parallel: gin.SetMode changes gin's global mode.
	gin.SetMode(gin.TestMode)
	want := map[engine.Kind]struct {
		status int
		code   string
	}{
		engine.KindInvalid:             {http.StatusBadRequest, CodeInvalidInput},
		engine.KindUnauthenticated:     {http.StatusUnauthorized, CodeUnauthorized},
		engine.KindNotFound:            {http.StatusNotFound, CodeNotFound},
		engine.KindForbidden:           {http.StatusForbidden, CodeForbidden},
		engine.KindConflict:            {http.StatusConflict, CodeConflict},
		engine.KindInsufficientCredits: {http.StatusPaymentRequired, CodeInsufficientCredits},
		engine.KindPrerequisite:        {http.StatusUnprocessableEntity, CodePackshotNotApproved},
		engine.KindUnavailable:         {http.StatusServiceUnavailable, CodeUnavailable},
		engine.KindRateLimited:         {http.StatusTooManyRequests, CodeRateLimited},
	}
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	for _, kind := range engine.Kinds {
		f := engineFailure(c, &engine.Error{Kind: kind, Message: "m", RetryAfter: time.Second})
		w, ok := want[kind]
		if !ok || f.status != w.status || f.code != w.code {
			t.Errorf("kind %q answers %d %s, want %d %s", kind, f.status, f.code, w.status, w.code)
		}
		if _, documented := ErrorDocs[f.code]; !documented {
			t.Errorf("kind %q answers the undocumented code %s", kind, f.code)
		}
	}

	f := engineFailure(c, &engine.Error{Kind: engine.KindInsufficientCredits, Message: "short", CreditsRequired: 12})
	if d, _ := f.details.(gin.H); d["credits_required"] != int64(12) {
		t.Errorf("insufficient credits details %#v, want credits_required 12", f.details)
	}
	f = engineFailure(c, &engine.Error{Kind: engine.KindPrerequisite, Reason: engine.ReasonPackshotNotApproved, Message: "m",
		Subjects: []string{"a", "b"}})
	if d, _ := f.details.(gin.H); f.code != CodePackshotNotApproved || len(d["product_refs"].([]string)) != 2 {
		t.Errorf("packshot refusal %#v", f)
	}
}

// The Retry-After of an engine refusal is its delay in whole seconds rounded up, never earlier
// than the engine said (nor 0).
func TestEngineRetryAfterRoundsUp(t *testing.T) {
	// Not parallel: gin.SetMode changes gin's global mode.
	gin.SetMode(gin.TestMode)
	h := &Handler{}
	for delay, want := range map[time.Duration]string{400 * time.Millisecond: "1", 1400 * time.Millisecond: "2", 30 * time.Second: "30"} {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
		h.fail(c, &engine.Error{Kind: engine.KindUnavailable, Message: "later", RetryAfter: delay})
		if got := rec.Header().Get("Retry-After"); got != want {
			t.Errorf("RetryAfter %s: Retry-After %q, want %q", delay, got, want)
		}
	}
}
