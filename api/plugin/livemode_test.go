package plugin_test

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
)

// The isolation matrix of test mode (issue 26): a live key never sees a test record and a test key
// never sees a live one, on every route of the plugin API that takes an ID (404) and in every list
// (absent), and every record and list item says its mode as livemode. The table is keyed by the
// routes the router registers, so a new route without an entry fails the test.

// isolationCase is what the matrix does with one route.
type isolationCase struct {
	// resource is the record an ID-taking route names ("" for a route that takes none).
	resource string
	// body is the request body of an ID-taking route (nil: none), valid but for the ID.
	body any
	// list is the field of a list route's answer that holds its items; "" for a route that is not a list.
	list string
	// resources are the records a list shows.
	resources []string
	// exempt says why a route is neither: it creates in the key's own mode, is shared reference
	// data, or authenticates without a key.
	exempt string
}

const (
	exemptCreate    = "creates a record in the key's own mode; its answers are in the matrix through the lists"
	exemptShared    = "reference data shared by both modes"
	exemptNoKey     = "authenticated without an API key"
	exemptTaskMeOf  = "the key's own installation and balance (GET /me shows its mode)"
	exemptTestOnly  = "sets the test balance of the key's own test twin; a live key is refused 403 (test_credits_test.go)"
	exemptUsage     = "sums the key's own installation's ledger: a test key's usage is its twin's (usage_test.go)"
	exemptOwnLimit  = "the spend limit of the key's own installation, the test twin's for a test key (spend_limit_test.go)"
	exemptOwnAlerts = "the alert settings of the key's own installation, the test twin's for a test key (alerts_test.go)"
)

var isolationRoutes = map[string]isolationCase{
	"GET /me":                           {exempt: exemptTaskMeOf},
	"GET /usage":                        {exempt: exemptUsage},
	"PUT /test/credits":                 {exempt: exemptTestOnly},
	"GET /spend-limit":                  {exempt: exemptOwnLimit},
	"PUT /spend-limit":                  {exempt: exemptOwnLimit},
	"DELETE /spend-limit":               {exempt: exemptOwnLimit},
	"GET /alerts":                       {exempt: exemptOwnAlerts},
	"PUT /alerts":                       {exempt: exemptOwnAlerts},
	"GET /ai-models":                    {exempt: exemptShared},
	"GET /aspect-ratios":                {exempt: exemptShared},
	"GET /pricing":                      {exempt: exemptShared},
	"GET /openapi.yaml":                 {exempt: exemptNoKey},
	"PUT /uploads/:":                    {exempt: exemptNoKey},
	"POST /jobs":                        {exempt: exemptCreate},
	"POST /jobs/batch":                  {exempt: exemptCreate},
	"POST /assets/upload":               {exempt: exemptCreate},
	"POST /images":                      {exempt: exemptCreate},
	"POST /packshots":                   {exempt: exemptCreate},
	"POST /webhook-endpoints":           {exempt: exemptCreate},
	"GET /jobs/:":                       {resource: "job"},
	"DELETE /jobs/:":                    {resource: "job"},
	"POST /jobs/:/refresh-url":          {resource: "job"},
	"POST /jobs/:/accept":               {resource: "job"},
	"POST /jobs/:/reject":               {resource: "job"},
	"GET /orders/:":                     {resource: "order"},
	"GET /orders/:/events":              {resource: "order"},
	"POST /orders/:/clone":              {resource: "order", body: map[string]any{}},
	"GET /products/:":                   {resource: "product"},
	"DELETE /products/:":                {resource: "product"},
	"DELETE /packshots/:":               {resource: "packshot"},
	"GET /webhook-endpoints/:":          {resource: "endpoint"},
	"PATCH /webhook-endpoints/:":        {resource: "endpoint", body: map[string]any{"description": "renamed"}},
	"DELETE /webhook-endpoints/:":       {resource: "endpoint"},
	"POST /webhook-endpoints/:/test":    {resource: "endpoint", body: map[string]any{}},
	"POST /webhook-endpoints/:/recover": {resource: "endpoint", body: map[string]any{"since": "SINCE"}},
	"GET /webhook-deliveries/:":         {resource: "delivery"},
	"POST /webhooks/:/replay":           {resource: "delivery"},
	"GET /events/:":                     {resource: "event"},
	"POST /installations/:/rotate-hmac": {resource: "installation"},
	"GET /jobs":                         {list: "jobs", resources: []string{"job"}},
	"GET /products":                     {list: "products", resources: []string{"product"}},
	"GET /packshots":                    {list: "packshots", resources: []string{"packshot"}},
	"GET /webhook-endpoints":            {list: "webhook_endpoints", resources: []string{"endpoint"}},
	"GET /webhook-deliveries":           {list: "webhook_deliveries", resources: []string{"delivery"}},
	"GET /events":                       {list: "events", resources: []string{"event"}},
	"GET /presets":                      {list: "presets", resources: []string{"preset"}},
	"GET /models":                       {list: "models", resources: []string{"model"}},
	"GET /sceneries":                    {list: "sceneries", resources: []string{"scenery"}},
}

// modeWorld is one mode of the installation: its key and a record of every kind, by resource.
type modeWorld struct {
	name string
	live bool
	key  string
	ids  map[string]string
}

// world stores one record of every kind for inst, marked as of test mode unless live, and makes
// its webhook endpoint through the API with key.
func (e *env) world(name string, live bool, inst *models.Installation, key string) modeWorld {
	e.t.Helper()
	w := modeWorld{name: name, live: live, key: key, ids: map[string]string{"installation": inst.ID}}
	order, job, _ := e.storeJob(inst)
	require.NoError(e.t, e.db.Model(&models.Order{}).Where("id = ?", order.ID).Update("test_mode", !live).Error)
	require.NoError(e.t, e.db.Model(&models.Job{}).Where("id = ?", job.ID).Update("test_mode", !live).Error)
	w.ids["order"], w.ids["job"] = order.ID, job.ID
	product := e.product(inst, "SKU-"+name)
	w.ids["product"] = product.ID
	w.ids["packshot"] = e.packshot(inst, product.ID, e.readyAsset(inst).ID, models.VotingAccepted).ID
	endpoint := e.createEndpoint(key, map[string]any{"url": hookURL, "description": name})["id"].(string)
	ev, d := e.loggedEvent(inst, endpoint, "job.completed", time.Now().UTC().Add(-time.Minute), false)
	w.ids["endpoint"], w.ids["event"], w.ids["delivery"] = endpoint, ev.ID, d.ID
	now := time.Now().UTC()
	preset := models.Preset{ID: models.NewID(), AccountID: &inst.AccountID, Type: models.PresetTypeUser, Status: models.PresetPublished,
		Visibility: models.PresetPrivate, Name: "Preset " + name, QuantityGuidelines: "two photos", QualityGuidelines: "sharp",
		IsFree: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(e.t, e.db.Create(&preset).Error)
	w.ids["preset"] = preset.ID
	w.ids["model"] = e.ownItem(models.KindFashionModel, inst, "Model "+name, models.RefStatusDone, nil, false, 0).ID
	w.ids["scenery"] = e.ownItem(models.KindScenery, inst, "Scenery "+name, models.RefStatusDone, nil, false, 0).ID
	return w
}

func TestTestModeIsolationMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handler.Secrets = e.box // rotate-hmac under an Idempotency-Key seals its answer
	issued, err := e.handler.Engine.Accounts.IssueTestPluginKey(t.Context(), e.box, e.inst.ID, "test", nil, nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(issued.APIKey, models.PluginTestKeyPrefix), issued.APIKey)
	var twin models.Installation
	require.NoError(t, e.db.Take(&twin, "id = ?", issued.InstallationID).Error)
	require.True(t, twin.TestMode)

	live := e.world("live", true, e.inst, e.key)
	test := e.world("test", false, &twin, issued.APIKey)
	since := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)

	// Every route of the router has its entry, and every entry is a route.
	seen := map[string]bool{}
	var idRoutes, listRoutes []string
	for _, r := range e.router.Routes() {
		if !strings.HasPrefix(r.Path, plugin.Base+"/") {
			continue
		}
		norm := r.Method + " " + paramSegment.ReplaceAllString(strings.TrimPrefix(r.Path, plugin.Base), "/:")
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
		path := p(strings.TrimPrefix(norm, "GET "))
		for _, pair := range [][2]modeWorld{{live, test}, {test, live}} {
			own, other := pair[0], pair[1]
			rec := e.do(http.MethodGet, path, own.key, nil)
			require.Equal(t, http.StatusOK, rec.Code, "%s with the %s key: %s", norm, own.name, rec.Body.String())
			items, _ := decode(t, rec)[c.list].([]any)
			listed := map[string]bool{}
			for _, it := range items {
				item := it.(map[string]any)
				listed[item["id"].(string)] = true
				assert.Equal(t, own.live, item["livemode"], "%s with the %s key: livemode of %v", norm, own.name, item["id"])
			}
			for _, res := range c.resources {
				assert.True(t, listed[own.ids[res]], "%s with the %s key lacks its own %s", norm, own.name, res)
				assert.False(t, listed[other.ids[res]], "%s with the %s key shows the %s mode's %s", norm, own.name, other.name, res)
			}
		}
	}

	// ID-taking routes: the other mode's record is not found, whichever the direction.
	for _, norm := range idRoutes {
		c := isolationRoutes[norm]
		method, path, _ := strings.Cut(norm, " ")
		for _, pair := range [][2]modeWorld{{live, test}, {test, live}} {
			key, other := pair[0], pair[1]
			target := p(strings.Replace(path, ":", other.ids[c.resource], 1))
			var body any
			if c.body != nil {
				body = c.body
				if m, ok := c.body.(map[string]any); ok && m["since"] == "SINCE" {
					body = map[string]any{"since": since}
				}
			}
			rec := e.do(method, target, key.key, body, "Idempotency-Key", models.NewID())
			assert.Equal(t, http.StatusNotFound, rec.Code, "%s: the %s key on the %s mode's %s: %s",
				norm, key.name, other.name, c.resource, rec.Body.String())
		}
	}

	// The records are still there, each found by its own key and saying its mode: nothing above
	// reached them.
	for _, w := range []modeWorld{live, test} {
		for path, res := range map[string]string{"/jobs/": "job", "/orders/": "order", "/products/": "product",
			"/webhook-endpoints/": "endpoint", "/webhook-deliveries/": "delivery", "/events/": "event"} {
			got := e.getOK(p(path+w.ids[res]), w.key)
			assert.Equal(t, w.live, got["livemode"], "GET %s of the %s mode", path, w.name)
		}
		packshots := e.getOK(p("/packshots"), w.key)["packshots"].([]any)
		require.Len(t, packshots, 1)
		assert.Equal(t, w.ids["packshot"], packshots[0].(map[string]any)["id"])
	}

	// An upload says the mode of the key that declared it, and so does its signed PUT, which
	// carries no key.
	for _, w := range []modeWorld{live, test} {
		data := testimage.GradientPNG(t, 4, 4)
		rec := e.do(http.MethodPost, p("/assets/upload"), w.key, map[string]any{
			"mode": "presigned", "filename": "p.png", "content_type": "image/png", "size_bytes": len(data)})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		declared := decode(t, rec)
		assert.Equal(t, w.live, declared["livemode"], "POST /assets/upload with the %s key", w.name)
		put := e.put(declared["upload_url"].(string), "image/png", data, int64(len(data)))
		require.Equal(t, http.StatusOK, put.Code, put.Body.String())
		assert.Equal(t, w.live, decode(t, put)["livemode"], "PUT /uploads/{id} of the %s key's upload", w.name)
	}

	// And each ID-taking route finds the record with its own mode's key (the deletes last): the
	// 404s above are the mode's, not the request's. (Test sends and replays start deliveries; an
	// endpoint's deletion cancels the workflows of those it ends.)
	tc := e.withTemporal()
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(&mocks.WorkflowRun{}, nil).Maybe()
	tc.On("CancelWorkflow", mock.Anything, mock.Anything, "").Return(nil).Maybe()
	deleteLast := func(route string) int {
		if strings.HasPrefix(route, "DELETE ") {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(idRoutes, func(a, b string) int { return cmp.Compare(deleteLast(a), deleteLast(b)) })
	for _, norm := range idRoutes {
		c := isolationRoutes[norm]
		method, path, _ := strings.Cut(norm, " ")
		for _, w := range []modeWorld{live, test} {
			var body any
			if c.body != nil {
				body = c.body
				if m, ok := c.body.(map[string]any); ok && m["since"] == "SINCE" {
					body = map[string]any{"since": since}
				}
			}
			rec := e.do(method, p(strings.Replace(path, ":", w.ids[c.resource], 1)), w.key, body, "Idempotency-Key", models.NewID())
			assert.NotEqual(t, http.StatusNotFound, rec.Code, "%s: the %s key on its own %s: %s", norm, w.name, c.resource, rec.Body.String())
		}
	}
}
