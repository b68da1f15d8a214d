package e2e_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/internal/platform/metrics/metricstest"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
)

// sessionCharge starts a session of images local jobs of ref and returns its charge headers; a
// refused one returns its status and zeros.
func sessionCharge(t *testing.T, api *client, ref string, images int) (status int, reserved, remaining int64) {
	t.Helper()
	resp := api.do(http.MethodPost, "/jobs", map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []map[string]any{{"product_ref": ref, "images_count": images, "ai_model": "local/studio-v1"}},
	}, nil)
	if resp.StatusCode != http.StatusCreated {
		return resp.StatusCode, 0, 0
	}
	reserved, err := strconv.ParseInt(resp.Header.Get("X-Credits-Reserved"), 10, 64)
	if err != nil {
		t.Fatalf("X-Credits-Reserved %q", resp.Header.Get("X-Credits-Reserved"))
	}
	remaining, err = strconv.ParseInt(resp.Header.Get("X-Credits-Remaining"), 10, 64)
	if err != nil {
		t.Fatalf("X-Credits-Remaining %q", resp.Header.Get("X-Credits-Remaining"))
	}
	return resp.StatusCode, reserved, remaining
}

// eventsOf counts the recorded events of a type in the installation's (or the account's own,
// installationID "") scope.
func eventsOf(t *testing.T, env *testenv.Env, accountID, installationID, event string) int64 {
	t.Helper()
	q := env.DB.Model(&models.WebhookEvent{}).Where("account_id = ? AND type = ? AND NOT test", accountID, event)
	if installationID == "" {
		q = q.Where("installation_id IS NULL")
	} else {
		q = q.Where("installation_id = ?", installationID)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// A merchant's sessions drain its account: credits.low reaches the installation's endpoint once
// when the balance first falls below its threshold, and the account's own endpoint (external API)
// once for the account's threshold, crossed by the same plugin sessions; spend_limit.alert once when
// the month's spend reaches the alert percentage; spend_limit.reached once however many sessions the
// limit refuses. Each is signed, matches its document, is counted in shotflow_alerts_sent_total and
// goes nowhere else. After a top-up a new crossing sends credits.low again, and a new limit re-arms
// spend_limit.reached.
func TestAlertsReachTheReceiverOncePerCrossing(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivateNetworks = true }})
	tenant := env.NewTenant(t, 20)
	api := &client{t: t, base: env.BaseURL + "/api/v1/plugin", key: tenant.PluginKey}
	ext := externalClient(t, env, tenant)
	shop, team, jobs := newEventReceiver(t), newEventReceiver(t), newEventReceiver(t)
	alertEvents := []string{"credits.low", "spend_limit.alert", "spend_limit.reached"}
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": shop.URL + "/alerts", "events": alertEvents}, nil), http.StatusCreated)
	expect(t, api.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": jobs.URL + "/jobs"}, nil), http.StatusCreated) // the default events
	var teamEP struct {
		Secret string `json:"secret"`
	}
	expect(t, ext.do(http.MethodPost, "/webhook-endpoints", map[string]any{"url": team.URL + "/team", "events": []string{"credits.low"}}, &teamEP), http.StatusCreated)

	expect(t, api.do(http.MethodPut, "/alerts", map[string]any{"low_balance_threshold": 15}, nil), http.StatusOK)
	expect(t, ext.do(http.MethodPut, "/alerts", map[string]any{"low_balance_threshold": 10}, nil), http.StatusOK)
	expect(t, api.do(http.MethodPut, "/spend-limit", map[string]any{"monthly_credits": 12, "alert_at_percent": 50}, nil), http.StatusOK)
	metricsBefore := metricstest.Get(t, env.WorkerMetricsURL+"/metrics")

	registerPackshot(t, env, api, "mug", packshotPNG(t))
	balance, spent := int64(20), int64(0)
	crossedLow, crossedTeam, crossedSpend := 0, 0, 0
	refusals := 0
	for refusals < 3 {
		status, reserved, remaining := sessionCharge(t, api, "mug", 1)
		if status == http.StatusPaymentRequired {
			refusals++
			continue
		}
		if status != http.StatusCreated {
			t.Fatalf("session answered %d", status)
		}
		if remaining != balance-reserved {
			t.Fatalf("X-Credits-Remaining %d after reserving %d of %d", remaining, reserved, balance)
		}
		if balance >= 15 && remaining < 15 {
			crossedLow++
		}
		if balance >= 10 && remaining < 10 {
			crossedTeam++
		}
		if spent*100 < 50*12 && (spent+reserved)*100 >= 50*12 {
			crossedSpend++
		}
		balance, spent = remaining, spent+reserved
	}
	if crossedLow != 1 || crossedTeam != 1 || crossedSpend != 1 {
		t.Fatalf("the sessions crossed the thresholds %d, %d and %d times (balance %d, spent %d)", crossedLow, crossedTeam, crossedSpend, balance, spent)
	}

	verify(t, tenant.WebhookSecret, shop.wait(t, "credits.low", 1)[0])
	alert := shop.wait(t, "spend_limit.alert", 1)[0]
	verify(t, tenant.WebhookSecret, alert)
	reached := shop.wait(t, "spend_limit.reached", 1)[0]
	verify(t, tenant.WebhookSecret, reached)
	teamLow := verifyExternal(t, team.wait(t, "credits.low", 1)[0], teamEP.Secret)
	if c := teamLow["credits"].(map[string]any); c["threshold"] != float64(10) || c["available"].(float64) >= 10 {
		t.Fatalf("the account's credits.low = %v", teamLow)
	}
	lowBody := jsonOf(t, shop.of("credits.low")[0].body)
	if c := lowBody["credits"].(map[string]any); c["threshold"] != float64(15) || c["available"].(float64) >= 15 || lowBody["livemode"] != true {
		t.Fatalf("credits.low = %v", lowBody)
	}
	if sl := jsonOf(t, reached.body)["spend_limit"].(map[string]any); sl["monthly_credits"] != float64(12) || sl["alert_at_percent"] != float64(50) {
		t.Fatalf("spend_limit.reached = %s", reached.body)
	}
	// Exactly once: one event each in the installation's and the account's log, and nothing of
	// them at the endpoint of the default events.
	for event, want := range map[string]int64{"credits.low": 1, "spend_limit.alert": 1, "spend_limit.reached": 1} {
		if n := eventsOf(t, env, tenant.AccountID, tenant.InstallationID, event); n != want {
			t.Fatalf("%d %s events recorded for the installation, want %d", n, event, want)
		}
	}
	if n := eventsOf(t, env, tenant.AccountID, "", "credits.low"); n != 1 {
		t.Fatalf("%d credits.low events recorded for the account, want 1", n)
	}
	for _, e := range alertEvents {
		if len(jobs.of(e)) != 0 {
			t.Fatalf("%s reached an endpoint that did not subscribe to it", e)
		}
	}
	expectDeltas(t, env.WorkerMetricsURL+"/metrics", metricsBefore, []delta{
		{metrics.AlertsSent, map[string]string{"event": "credits.low", "livemode": "true"}, 2},
		{metrics.AlertsSent, map[string]string{"event": "spend_limit.alert", "livemode": "true"}, 1},
		{metrics.AlertsSent, map[string]string{"event": "spend_limit.reached", "livemode": "true"}, 1},
	})

	// A top-up above the threshold and a session that falls below it again: a new crossing. A new
	// limit re-arms spend_limit.reached.
	if err := models.GrantCredits(env.DB, tenant.AccountID, 20, "top-up"); err != nil {
		t.Fatal(err)
	}
	expect(t, api.do(http.MethodPut, "/spend-limit", map[string]any{"monthly_credits": spent + 1000}, nil), http.StatusOK)
	balance += 20
	for balance >= 15 {
		status, _, remaining := sessionCharge(t, api, "mug", 1)
		if status != http.StatusCreated {
			t.Fatalf("session after the top-up answered %d", status)
		}
		balance = remaining
	}
	shop.wait(t, "credits.low", 2)
	expect(t, api.do(http.MethodPut, "/spend-limit", map[string]any{"monthly_credits": 1}, nil), http.StatusOK)
	for range 2 {
		if status, _, _ := sessionCharge(t, api, "mug", 1); status != http.StatusPaymentRequired {
			t.Fatalf("session past the lowered limit answered %d", status)
		}
	}
	shop.wait(t, "spend_limit.reached", 2)
	time.Sleep(time.Second) // a duplicate would come with its first attempt
	if n := len(shop.of("credits.low")); n != 2 {
		t.Fatalf("%d credits.low webhooks, want 2", n)
	}
	if n := len(shop.of("spend_limit.reached")); n != 2 {
		t.Fatalf("%d spend_limit.reached webhooks, want 2", n)
	}
}

// jsonOf decodes a JSON object.
func jsonOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return m
}
