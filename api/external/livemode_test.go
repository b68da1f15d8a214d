package external_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/api/external"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// The isolation matrix of test mode (issue 26): a live key never sees a test record and a test key
// never sees a live one, on every route of the external API that names a record (by path or in its
// body: 404) and in every list (absent), and every record and list item says its mode as
// livemode. The table is keyed by the routes the router registers, so a new route without an entry
// fails the test.

// isolationCase is what the matrix does with one route.
type isolationCase struct {
	// resource is the record the route names: in its path (":"), or in its body (body, where the
	// string "ID" stands for it).
	resource string
	body     map[string]any
	// refused is the status of a record the key cannot see; 0 is 404. A generation request names
	// its inputs in its body and refuses an unknown one as invalid input (400), alike for a record
	// of the other mode, another account's and none.
	refused int
	// list is the field of a list route's answer that holds its items, idField their ID's name
	// ("" is "id"), resources the records it shows.
	list      string
	idField   string
	resources []string
	// exempt says why a route is neither.
	exempt string
}

const (
	exemptCreate    = "creates a record in the key's own mode from no other record; its answers are in the matrix through the lists"
	exemptAccount   = "the key's own account and balance (GET /account shows its mode)"
	exemptTestOnly  = "sets the test balance of the key's own test twin; a live key is refused 403"
	exemptUsage     = "sums the key's own account's ledger: a test key's usage is its twin's (usage_test.go)"
	exemptOwnLimit  = "the spend limit of the key's own account, the test twin's for a test key (spend_limit_test.go)"
	exemptOwnAlerts = "the alert settings of the key's own account, the test twin's for a test key (alerts_test.go)"
)

var isolationRoutes = map[string]isolationCase{
	"GET /account":                            {exempt: exemptAccount},
	"GET /usage":                              {exempt: exemptUsage},
	"PUT /test/credits":                       {exempt: exemptTestOnly},
	"GET /spend-limit":                        {exempt: exemptOwnLimit},
	"PUT /spend-limit":                        {exempt: exemptOwnLimit},
	"DELETE /spend-limit":                     {exempt: exemptOwnLimit},
	"GET /alerts":                             {exempt: exemptOwnAlerts},
	"PUT /alerts":                             {exempt: exemptOwnAlerts},
	"POST /products":                          {exempt: exemptCreate},
	"POST /presets":                           {exempt: exemptCreate},
	"POST /webhook-endpoints":                 {exempt: exemptCreate},
	"POST /models/register-ideas":             {exempt: exemptCreate},
	"POST /sceneries/register-ideas":          {exempt: exemptCreate},
	"PUT /presets":                            {resource: "preset"}, // multipart: presetId
	"GET /orders/:":                           {resource: "order"},
	"GET /orders/:/events":                    {resource: "order"},
	"DELETE /orders/:":                        {resource: "order"},
	"GET /webhook-endpoints/:":                {resource: "endpoint"},
	"PATCH /webhook-endpoints/:":              {resource: "endpoint", body: map[string]any{"description": "renamed"}},
	"DELETE /webhook-endpoints/:":             {resource: "endpoint"},
	"POST /webhook-endpoints/:/rotate-secret": {resource: "endpoint"},
	"POST /webhook-endpoints/:/test":          {resource: "endpoint", body: map[string]any{}},
	"POST /webhook-endpoints/:/recover":       {resource: "endpoint", body: map[string]any{"since": "SINCE"}},
	"GET /webhook-deliveries/:":               {resource: "delivery"},
	"POST /webhook-deliveries/:/replay":       {resource: "delivery"},
	"GET /events/:":                           {resource: "event"},
	"POST /packshots/update-packshot":         {resource: "packshot", body: map[string]any{"recordId": "ID", "Voting": "APPROVED"}},
	"POST /image-picker/review":               {resource: "image", body: map[string]any{"recordId": "ID", "verdict": "accepted"}},
	"POST /packshots/register-ideas":          {resource: "photo", refused: http.StatusBadRequest, body: map[string]any{"config": map[string]any{"product": map[string]any{"id": "ID"}}, "count": 1}},
	"POST /image-picker/register-ideas":       {resource: "photo", refused: http.StatusBadRequest, body: map[string]any{"config": map[string]any{"product": map[string]any{"id": "ID"}}, "count": 1}},
	"POST /video-picker/register-videos":      {resource: "image", refused: http.StatusBadRequest, body: map[string]any{"generatedImageId": "ID"}},
	"POST /reel/register-reel":                {resource: "image", refused: http.StatusBadRequest, body: map[string]any{"imagesIds": []any{"ID", "ID"}}},
	"GET /orders":                             {list: "orders", idField: "orderId", resources: []string{"order"}},
	"GET /products":                           {list: "products", resources: []string{"photo"}},
	"GET /presets":                            {list: "presets", resources: []string{"preset"}},
	"GET /models":                             {list: "models", resources: []string{"model"}},
	"GET /sceneries":                          {list: "sceneries", resources: []string{"scenery"}},
	"GET /packshots":                          {list: "packshots", resources: []string{"packshot"}},
	"GET /image-picker":                       {list: "images", resources: []string{"image"}},
	"GET /videos":                             {list: "videos", resources: []string{"video"}},
	"GET /webhook-endpoints":                  {list: "webhook_endpoints", resources: []string{"endpoint"}},
	"GET /webhook-deliveries":                 {list: "webhook_deliveries", resources: []string{"delivery"}},
	"GET /events":                             {list: "events", resources: []string{"event"}},
}

// modeWorld is one mode of the account: its key and a record of every kind, by resource.
type modeWorld struct {
	name string
	live bool
	key  string
	ids  map[string]string
}

// world stores one record of every kind for the account, marked as of test mode unless live, and
// makes its preset and webhook endpoint through the API with key.
func (e *env) world(name string, live bool, accountID, key string) modeWorld {
	e.t.Helper()
	w := modeWorld{name: name, live: live, key: key, ids: map[string]string{}}
	f := newRecFix(e)
	photo, _ := e.photoFixture(accountID, "Lamp "+name)
	w.ids["photo"] = photo
	w.ids["packshot"] = e.packshotFixture(accountID, photo, models.VotingAccepted)
	w.ids["image"], _ = e.completedShoot(accountID, status.JobCompleted)
	w.ids["video"] = f.job(accountID, jobtype.Video, status.JobCompleted, 1, nil).ID
	for _, job := range []string{w.ids["image"], w.ids["video"]} {
		var j models.Job
		e.must(e.db.Take(&j, "id = ?", job).Error)
		e.must(e.db.Model(&models.Job{}).Where("id = ?", j.ID).Update("test_mode", !live).Error)
		e.must(e.db.Model(&models.Order{}).Where("id = ?", j.OrderID).Update("test_mode", !live).Error)
		if job == w.ids["image"] {
			w.ids["order"] = j.OrderID
		}
	}
	w.ids["model"] = f.refItem(models.KindFashionModel, &accountID, "Model "+name, models.RefStatusDone, nil, "").ID
	w.ids["scenery"] = f.refItem(models.KindScenery, &accountID, "Scenery "+name, models.RefStatusDone, nil, "").ID
	w.ids["preset"] = e.createPreset(key, requiredFields("Preset "+name))["id"].(string)
	endpoint := e.createEndpoint(key, map[string]any{"url": hookURL, "description": name})["id"].(string)
	at := time.Now().UTC().Add(-time.Minute)
	evID, mode := models.NewID(), strconv.FormatBool(live)
	ev := models.WebhookEvent{ID: evID, AccountID: accountID, Type: "record.done", CreatedAt: at,
		Payload: models.JSON(`{"event":"record.done","delivery_id":"` + evID + `","delivery_created_at":"` + at.Format(time.RFC3339Nano) +
			`","order_id":"` + w.ids["order"] + `","record":{"id":"` + w.ids["image"] + `","kind":"image","name":"Lamp","thumbnail":"",` +
			`"status":"DONE","voting":null,"createdAt":"` + at.Format(time.RFC3339Nano) + `","cancelReason":null,"livemode":` + mode +
			`},"livemode":` + mode + `}`)}
	d := models.WebhookDelivery{ID: models.NewID(), EventID: ev.ID, EndpointID: &endpoint, AccountID: accountID, Run: 1,
		Event: ev.Type, CallbackURL: hookURL, Status: models.WebhookFailed, CreatedAt: at, UpdatedAt: at}
	e.must(e.db.Create(&ev).Error)
	_, err := models.CreateWebhookDelivery(e.db, &d) // in its account's mode, as RecordEvents stores it
	e.must(err)
	w.ids["endpoint"], w.ids["event"], w.ids["delivery"] = endpoint, ev.ID, d.ID
	return w
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// withID is the body of a case with the record's ID in place of "ID" (and since in place of "SINCE").
func withID(v any, id, since string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			out[k] = withID(val, id, since)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = withID(val, id, since)
		}
		return out
	case string:
		switch x {
		case "ID":
			return id
		case "SINCE":
			return since
		}
	}
	return v
}

var routeParam = regexp.MustCompile(`/[:*][^/]*`)

func TestTestModeIsolationMatrix(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, 0)
		issued, err := e.handler.Engine.Accounts.IssueTestAccountKey(t.Context(), engine.AccountKeyRequest{AccountID: e.account,
			Name: "test", Scopes: []string{external.ScopeRegister, external.ScopeRead, external.ScopeWebhooks}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(issued.APIKey, models.ExternalTestKeyPrefix) || issued.AccountID == e.account {
			t.Fatalf("test key %+v", issued)
		}
		live := e.world("live", true, e.account, e.key)
		test := e.world("test", false, issued.AccountID, issued.APIKey)
		since := e.now.Add(-time.Hour).Format(time.RFC3339)

		// Every route of the router has its entry, and every entry is a route.
		seen := map[string]bool{}
		var idRoutes, listRoutes []string
		for _, r := range e.router.Routes() {
			if !strings.HasPrefix(r.Path, external.Base+"/") || r.Path == external.Base+"/openapi.yaml" {
				continue
			}
			norm := r.Method + " " + routeParam.ReplaceAllString(strings.TrimPrefix(r.Path, external.Base), "/:")
			c, ok := isolationRoutes[norm]
			if !ok {
				t.Errorf("route %s has no entry in isolationRoutes: say what a key of the other mode gets from it", norm)
				continue
			}
			seen[norm] = true
			switch {
			case c.resource != "":
				idRoutes = append(idRoutes, norm)
			case c.list != "":
				listRoutes = append(listRoutes, norm)
			case c.exempt == "":
				t.Errorf("route %s: an entry needs a resource, a list or why it is exempt", norm)
			}
		}
		for norm := range isolationRoutes {
			if !seen[norm] {
				t.Errorf("isolationRoutes has %s, which the router does not serve", norm)
			}
		}

		// Lists: each key sees its own mode's records, each saying its mode, and none of the other's.
		for _, norm := range listRoutes {
			c := isolationRoutes[norm]
			idField := c.idField
			if idField == "" {
				idField = "id"
			}
			for _, pair := range [][2]modeWorld{{live, test}, {test, live}} {
				own, other := pair[0], pair[1]
				code, body := e.getAs(own.key, strings.TrimPrefix(norm, "GET "))
				if code != http.StatusOK {
					t.Fatalf("%s with the %s key: %d %v", norm, own.name, code, body)
				}
				items, _ := body[c.list].([]any)
				listed := map[string]bool{}
				for _, it := range items {
					item := it.(map[string]any)
					listed[item[idField].(string)] = true
					if item["livemode"] != own.live {
						t.Errorf("%s with the %s key: livemode of %v is %v", norm, own.name, item[idField], item["livemode"])
					}
				}
				for _, res := range c.resources {
					if !listed[own.ids[res]] {
						t.Errorf("%s with the %s key lacks its own %s: %v", norm, own.name, res, body)
					}
					if listed[other.ids[res]] {
						t.Errorf("%s with the %s key shows the %s mode's %s", norm, own.name, other.name, res)
					}
				}
			}
		}

		// Routes that name a record: the other mode's is not found, whichever the direction.
		call := func(norm string, key modeWorld, id string) (int, map[string]any) {
			c := isolationRoutes[norm]
			method, path, _ := strings.Cut(norm, " ")
			if norm == "PUT /presets" {
				return e.multipart(key.key, method, path, append(requiredFields("Renamed"), "presetId", id))
			}
			var body any
			if c.body != nil {
				body = withID(c.body, id, since)
			}
			code, out, _ := e.send(key.key, method, strings.Replace(path, ":", id, 1), body)
			return code, out
		}
		for _, norm := range idRoutes {
			c := isolationRoutes[norm]
			refused := c.refused
			if refused == 0 {
				refused = http.StatusNotFound
			}
			for _, pair := range [][2]modeWorld{{live, test}, {test, live}} {
				key, other := pair[0], pair[1]
				if code, out := call(norm, key, other.ids[c.resource]); code != refused {
					t.Errorf("%s: the %s key on the %s mode's %s: %d %v, want %d", norm, key.name, other.name, c.resource, code, out, refused)
				}
				if code, out := call(norm, key, models.NewID()); code != refused {
					t.Errorf("%s: the %s key on an unknown %s: %d %v, want %d as for the other mode's", norm, key.name, c.resource, code, out, refused)
				}
			}
		}

		// The records are still there, each found by its own key and saying its mode.
		for _, w := range []modeWorld{live, test} {
			for path, res := range map[string]string{"/orders/": "order", "/webhook-endpoints/": "endpoint",
				"/webhook-deliveries/": "delivery", "/events/": "event"} {
				code, got := e.getAs(w.key, path+w.ids[res])
				if code != http.StatusOK || got["livemode"] != w.live {
					t.Errorf("GET %s of the %s mode: %d %v", path, w.name, code, got)
				}
			}
		}
		// And each route that names a record finds it with its own mode's key (the deletes last):
		// the 404s above are the mode's, not the request's.
		for _, last := range []bool{false, true} {
			for _, norm := range idRoutes {
				if strings.HasPrefix(norm, "DELETE ") != last || norm == "GET /orders/:/events" {
					continue
				}
				c := isolationRoutes[norm]
				for _, w := range []modeWorld{live, test} {
					if code, out := call(norm, w, w.ids[c.resource]); code == http.StatusNotFound {
						t.Errorf("%s: the %s key on its own %s: 404 %v", norm, w.name, c.resource, out)
					}
				}
			}
		}
	})
}
