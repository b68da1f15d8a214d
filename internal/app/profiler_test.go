package app

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/config"
)

func TestProfilerServesOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	off := &App{Config: config.Config{}, Log: zap.NewNop()}
	addr, stop, err := off.StartProfiler()
	if err != nil || addr != nil {
		t.Fatalf("PPROF_ADDR empty: listening on %v (err %v), want nothing", addr, err)
	}
	stop()

	on := &App{Config: config.Config{PprofAddr: "127.0.0.1:0"}, Log: zap.NewNop()}
	addr, stop, err = on.StartProfiler()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr.String() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("GET /debug/pprof/goroutine: %d %.200s", resp.StatusCode, body)
	}
	stop()
	if _, err := http.Get("http://" + addr.String() + "/debug/pprof/"); err == nil {
		t.Fatal("the profiler still answers after stop")
	}
}
