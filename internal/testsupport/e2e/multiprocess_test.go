package e2e_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/eventstream"
	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// startAPI runs `shotflow api` in its own process on a free port below the kernel's outgoing
// range (32768 and up here), trying another port when the one picked was taken meanwhile, and
// returns it with its base URL once it is ready.
func startAPI(t *testing.T, env *testenv.Env, extraEnv ...string) (*testenv.Process, string) {
	t.Helper()
	for range 10 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		proc := env.StartProcess(t, "api", append([]string{"HTTP_ADDR=" + addr}, extraEnv...)...)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-proc.Exited():
				deadline = time.Time{} // the port was taken after all: try another
				continue
			default:
			}
			if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return proc, "http://" + addr
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		proc.Kill()
	}
	t.Fatal("no api process could start")
	return nil, ""
}

// Two API processes and two workers over one database and task queue: a session created through
// one API is waited on and streamed through the other and completes; the stream, cut by a SIGKILL
// of its API and resumed on the other with Last-Event-ID, loses and repeats nothing; a session
// created with Prefer: wait through the restarted API is answered when it has ended.
func TestTwoAPIsAndTwoWorkersShareWaitsAndStreams(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true})
	env.StartWorkerProcess(t)
	env.StartWorkerProcess(t)
	// One job at a time per order, so that the stream is cut while the order still runs.
	apiA, baseA := startAPI(t, env, "ORDER_MAX_CONCURRENT_JOBS=1")
	apiB, baseB := startAPI(t, env, "ORDER_MAX_CONCURRENT_JOBS=1")
	_ = apiA
	tenant := env.NewTenant(t, 100)
	a := &client{t: t, base: baseA + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, a, "mug", packshotPNG(t))
	session := map[string]any{
		"session_config": map[string]any{"aspect_ratio": "1:1"},
		"subjects":       []any{map[string]any{"product_ref": "mug", "images_count": 4, "ai_model": "local/studio-v1"}},
	}
	var s plugin.SessionResponse
	expect(t, a.do(http.MethodPost, "/jobs", session, &s), http.StatusCreated)

	// Held on A, streamed on B.
	held := make(chan plugin.OrderResponse, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, baseA+plugin.Base+"/orders/"+s.OrderID, nil)
		req.Header.Set("X-Api-Key", tenant.PluginKey)
		req.Header.Set(prefer.HeaderPrefer, "wait=60")
		var o plugin.OrderResponse
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&o)
			resp.Body.Close()
		}
		held <- o
	}()
	stream := apitest.OpenSSE(t, baseB+plugin.Base+"/orders/"+s.OrderID+"/events", "X-Api-Key", tenant.PluginKey)
	if stream.Response.StatusCode != http.StatusOK {
		t.Fatalf("stream on B: %d", stream.Response.StatusCode)
	}
	var ids []string
	first, ok := stream.Next(t, 60*time.Second)
	if !ok || first.Name == "" {
		t.Fatalf("no first event on B: %+v", first)
	}
	ids = append(ids, first.ID)
	apiB.Kill()
	// What B had sent before it died: the client resumes after the last event it got.
	for ev, ok := stream.Next(t, 10*time.Second); ok; ev, ok = stream.Next(t, 10*time.Second) {
		if ev.ID != "" {
			ids = append(ids, ev.ID)
		}
	}

	t.Logf("B was killed after event %s", ids[len(ids)-1])
	resumed := apitest.OpenSSE(t, baseA+plugin.Base+"/orders/"+s.OrderID+"/events", "X-Api-Key", tenant.PluginKey,
		eventstream.HeaderLastEventID, ids[len(ids)-1])
	if resumed.Response.StatusCode != http.StatusOK {
		t.Fatalf("resumed stream on A: %d", resumed.Response.StatusCode)
	}
	var last apitest.SSEEvent
	for ev, ok := resumed.Next(t, 90*time.Second); ok; ev, ok = resumed.Next(t, 90*time.Second) {
		if ev.ID != "" {
			ids = append(ids, ev.ID)
			last = ev
		}
	}
	if last.Name != eventstream.OrderCompletedEvent {
		t.Fatalf("the resumed stream ended with %+v, want order.completed", last)
	}
	var stored int64
	if err := env.DB.Model(&models.OrderEvent{}).Where("order_id = ?", s.OrderID).Count(&stored).Error; err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id != strconv.Itoa(i+1) {
			t.Fatalf("event ids across the restart %v: want 1..%d, each once", ids, stored)
		}
	}
	if int64(len(ids)) != stored {
		t.Fatalf("the client got %d events of the order's %d", len(ids), stored)
	}
	select {
	case o := <-held:
		if o.Status != status.OrderCompleted || o.JobsCompleted != 4 {
			t.Fatalf("the request held on A answered %+v, want the completed order", o)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request held on A was not answered when the order completed")
	}

	// B again: a session created with Prefer: wait is answered once it has ended.
	_, baseB = startAPI(t, env, "ORDER_MAX_CONCURRENT_JOBS=1")
	b := &client{t: t, base: baseB + plugin.Base, key: tenant.PluginKey}
	body, err := json.Marshal(session)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, b.base+"/jobs", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", tenant.PluginKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(prefer.HeaderPrefer, "wait=60")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b.t.Log("session held on the restarted B answered")
	var waited plugin.SessionResponse
	if err := json.NewDecoder(resp.Body).Decode(&waited); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || waited.Status != status.OrderCompleted ||
		resp.Header.Get(prefer.HeaderPreferenceApplied) != "wait=60" {
		t.Fatalf("waited session on B: %d %+v %q", resp.StatusCode, waited, resp.Header.Get(prefer.HeaderPreferenceApplied))
	}
}
