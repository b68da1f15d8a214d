package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// An unknown path reaches serveAsteriskTarget on every 404: it lists the router's routes only for
// OPTIONS * (gin builds that list anew on each call). Another method with "*" is refused in the
// plugin API's envelope without the list (TestAsteriskTargetOfAnotherMethodIsABadRequest, internal/app).
func TestAsteriskTargetListsRoutesOnlyForTheAsterisk(t *testing.T) {
	listed := 0
	routes := func() gin.RoutesInfo { listed++; return gin.RoutesInfo{{Method: http.MethodGet, Path: "/x"}} }
	for _, tc := range []struct {
		method, target string
		served         bool
		listed         int
	}{
		{http.MethodGet, "/no-such-path", false, 0},
		{http.MethodOptions, "/no-such-path", false, 0},
		{http.MethodOptions, "*", true, 1},
	} {
		listed = 0
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest(tc.method, "/", nil)
		c.Request.RequestURI = tc.target
		if served := serveAsteriskTarget(c, routes, nil); served != tc.served {
			t.Errorf("%s %s: served %v, want %v", tc.method, tc.target, served, tc.served)
		}
		if listed != tc.listed {
			t.Errorf("%s %s: the routes were listed %d times, want %d", tc.method, tc.target, listed, tc.listed)
		}
	}
}
