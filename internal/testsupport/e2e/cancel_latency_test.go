package e2e_test

import (
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
)

// benchSetting reads an integer setting of TestCancelLatencyUnderABacklog from the environment.
func benchSetting(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive integer", name, v)
	}
	return n
}

// TestCancelLatencyUnderABacklog (issue 23, item 11a) measures DELETE /jobs/{id} while many
// sessions of local renders keep the worker and every order workflow busy launching: one client
// cancels queued jobs one at a time (the last job of each session in turn, going backwards) for
// SHOTFLOW_CANCEL_BENCH_SECONDS, and reports the answers and their p50, p99 and maximum latency.
// Every answer must be 200 or 409; a cancel must not depend on the order's backlog. It loads the
// machine for minutes, so it runs only with SHOTFLOW_CANCEL_BENCH=1 (figures in
// docs/benchmarks.md); SHOTFLOW_CANCEL_BENCH_SESSIONS and _IMAGES size the load.
func TestCancelLatencyUnderABacklog(t *testing.T) {
	if os.Getenv("SHOTFLOW_CANCEL_BENCH") != "1" {
		t.Skip("a load measurement; set SHOTFLOW_CANCEL_BENCH=1 to run it")
	}
	sessions := benchSetting(t, "SHOTFLOW_CANCEL_BENCH_SESSIONS", 20)
	images := benchSetting(t, "SHOTFLOW_CANCEL_BENCH_IMAGES", 50)
	length := time.Duration(benchSetting(t, "SHOTFLOW_CANCEL_BENCH_SECONDS", 90)) * time.Second
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, int64(sessions*images))
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	// A subject has at most 20 images: a session of more has several products.
	var subjects []map[string]any
	for left, p := images, 0; left > 0; left, p = left-20, p+1 {
		ref := "product-" + strconv.Itoa(p)
		registerPackshot(t, env, api, ref, packshotPNG(t))
		subjects = append(subjects, map[string]any{"product_ref": ref, "images_count": min(left, 20), "ai_model": "local/studio-v1"})
	}
	ids := make([][]string, sessions)
	for i := range ids {
		var session plugin.SessionResponse
		expect(t, api.do(http.MethodPost, "/jobs", map[string]any{
			"session_config": map[string]any{"aspect_ratio": "1:1"}, "subjects": subjects,
		}, &session), http.StatusCreated)
		for _, sub := range session.Subjects {
			ids[i] = append(ids[i], sub.JobIDs...)
		}
	}

	answers := map[int]int{}
	var took []time.Duration
	end := time.Now().Add(length)
	for back := 1; back <= images && time.Now().Before(end); back++ {
		for s := 0; s < sessions && time.Now().Before(end); s++ {
			began := time.Now()
			res, err := api.send(http.MethodDelete, "/jobs/"+ids[s][images-back], "", nil)
			if err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(began))
			answers[res.status]++
		}
	}
	slices.Sort(took)
	at := func(q float64) time.Duration { return took[min(len(took)-1, int(q*float64(len(took))))] }
	t.Logf("%d sessions of %d local renders: %d DELETEs in %v, answers %v; p50 %v, p99 %v, max %v",
		sessions, images, len(took), length, answers, at(0.50).Round(time.Millisecond), at(0.99).Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond))
	for code, n := range answers {
		if code != http.StatusOK && code != http.StatusConflict {
			t.Errorf("%d DELETEs answered %d", n, code)
		}
	}
	// The sessions' remaining jobs are left to the worker, which stops with the test.
}
