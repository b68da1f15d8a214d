package external_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/testsupport/contract"
	"github.com/shotflow/shotflow/models/testdb"
)

// strictEnv is an env on SQLite with an account that may use every route, whose balance is 100.
// Its keys may send strictRateLimit requests a minute: the tests send one request per case, more
// than the default limit's 60 (every member of every JSON route with a wrong type).
func strictEnv(t *testing.T) (e *env, account, key string) {
	e = newEnv(t, testdb.Open(t, testdb.SQLiteURL(t)), strictRateLimit)
	account, key = e.newAccount(external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks, external.ScopeBilling)
	return e, account, key
}

// strictRateLimit is the per-minute request limit of strictEnv's keys.
const strictRateLimit = 1000

// Every route of the document that takes a JSON body refuses a value of the wrong type in any of
// its fields with 400 whose message names the field and what it must be, in the client's terms
// (no Go types or decoder internals), and creates nothing.
func TestEveryJSONRouteExplainsWrongTypes(t *testing.T) {
	t.Parallel()
	e, account, key := strictEnv(t)
	cases, err := contract.External.WrongTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		code, out, _ := e.send(key, c.Method, c.Path, string(c.Body))
		msg := errorOf(t, out)
		if want := c.Field + " must be " + c.Expected; code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("%s %s: %d %q, want 400 containing %q", c.Path, c.Body, code, msg, want)
		}
		if frag := contract.GoInternal(msg); frag != "" {
			t.Errorf("%s %s: %q shows %q", c.Path, c.Body, msg, frag)
		}
	}
	e.nothingCreated(account, 100)
}

// Every route of the document that takes a JSON body refuses null in any field the document does
// not mark nullable, with 400 naming the field, and creates nothing: a null is not the field left
// out (register-ideas' "count": null reserved the default 10 jobs before).
func TestEveryJSONRouteRefusesNull(t *testing.T) {
	t.Parallel()
	e, account, key := strictEnv(t)
	cases, err := contract.External.Nulls()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no case")
	}
	for _, c := range cases {
		code, out, _ := e.send(key, c.Method, c.Path, string(c.Body))
		msg := errorOf(t, out)
		if want := c.Field + " must not be null"; code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("%s %s %s: %d %q, want 400 containing %q", c.Method, c.Path, c.Body, code, msg, want)
		}
	}
	e.nothingCreated(account, 100)
}

// Keys match the spec's field names exactly: a key in another case is an unknown field, named
// (with the field it may mean), also when it repeats a field in another case; a key given twice
// is refused. Nothing is created.
func TestJSONKeysMatchExactlyAndOnce(t *testing.T) {
	t.Parallel()
	e, account, key := strictEnv(t)
	photo := "0b8a3c2e-5d0f-4a0e-9c3b-6f1e2d4c8a71"
	for _, c := range []struct{ path, body, want string }{
		{"/models/register-ideas", `{"preferences":"x","Count":3}`, "Count is not a field of this request; did you mean count?"},
		{"/sceneries/register-ideas", `{"Preferences":"x"}`, "Preferences is not a field of this request; did you mean preferences?"},
		{"/models/register-ideas", `{"preferences":"x","count":3,"COUNT":30}`, "COUNT is not a field"},
		{"/models/register-ideas", `{"preferences":"x","count":3,"count":30}`, "count is given more than once"},
		{"/packshots/register-ideas", `{"config":{"product":{"Id":"` + photo + `"}}}`, "config.product.Id is not a field of this request; did you mean id?"},
		{"/image-picker/register-ideas", `{"Config":{"product":{"id":"` + photo + `"}}}`, "Config is not a field"},
		{"/image-picker/register-ideas", `{"config":{"product":{"id":"` + photo + `","id":"` + photo + `"}}}`, "config.product.id is given more than once"},
		{"/reel/register-reel", `{"ImagesIds":["` + photo + `"]}`, "ImagesIds is not a field of this request; did you mean imagesIds?"},
		{"/video-picker/register-videos", `{"imageID":"` + photo + `"}`, "imageID is not a field of this request; did you mean imageId?"},
		{"/video-picker/register-videos", `{"imageId":"` + photo + `","imageId":"` + photo + `"}`, "imageId is given more than once"},
		{"/packshots/update-packshot", `{"recordId":"` + photo + `","Voting":"APPROVED","Voting":"REJECTED"}`, "Voting is given more than once"},
		{"/image-picker/review", `{"recordId":"` + photo + `","verdict":"accepted","verdict":"rejected"}`, "verdict is given more than once"},
		{"/image-picker/review", `{"RecordId":"` + photo + `","verdict":"accepted"}`, "Did you mean recordId?"},
		{"/models/register-ideas", `{"preferences":"x"} {"count":2}`, "The body must be a single JSON object"},
		{"/models/register-ideas", `null`, "The body must be a JSON object, not null"},
	} {
		code, out := e.post(key, c.path, c.body)
		if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %q, want 400 containing %q", c.path, c.body, code, msg, c.want)
		}
	}
	e.nothingCreated(account, 100)
}

// Every JSON route refuses a body that is not valid UTF-8 anywhere, even outside its strings.
func TestEveryJSONRouteRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	e, account, key := strictEnv(t)
	routes := []string{"/models/register-ideas", "/sceneries/register-ideas", "/packshots/register-ideas", "/image-picker/register-ideas",
		"/video-picker/register-videos", "/reel/register-reel", "/packshots/update-packshot", "/image-picker/review"}
	for _, r := range routes {
		for _, body := range []string{"{\"preferences\":\"a\xffb\"}", "{\"pref\xc3\x28\":1}", "{} \xff", "{\"x\":\xfe}"} {
			code, out := e.post(key, r, body)
			if msg := errorOf(t, out); code != http.StatusBadRequest || !strings.Contains(msg, "not valid UTF-8") {
				t.Errorf("%s %q: %d %q, want 400 not valid UTF-8", r, body, code, msg)
			}
		}
	}
	e.nothingCreated(account, 100)
}
