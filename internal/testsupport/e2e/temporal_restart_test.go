package e2e_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/status"
)

// TestOrderFinishesAcrossATemporalRestart stops the Temporal server in the middle of an order and
// starts it again on the same address and database: the order still finishes.
// It is not parallel (Go runs it before the parallel tests): its server's address is free for two
// seconds between the stop and the start, and a parallel test's listener could take it.
func TestOrderFinishesAcrossATemporalRestart(t *testing.T) {
	long(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	ts, err := testenv.StartTemporalAt(context.Background(), addr, dbFile)
	if err != nil {
		t.Fatal(err)
	}
	running := ts
	t.Cleanup(func() {
		if running != nil {
			running.Stop()
		}
	})

	env := testenv.New(t, ts, testenv.Options{Configure: func(c *config.Config) {
		c.SimProvider = true
		c.OrderMaxConcurrentJobs = 1
	}})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "clock", packshotPNG(t))
	session := startSlowSession(t, api, "clock", 3, 1500*time.Millisecond)
	testenv.Eventually(t, 30*time.Second, "the first job to be generating", func() bool {
		return generating(t, env, session.Subjects[0].JobIDs) > 0
	})

	if err := ts.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	running = nil
	time.Sleep(2 * time.Second)
	// On a busy machine the old server may hold its port a little longer: try a few times.
	for attempt := 1; ; attempt++ {
		running, err = testenv.StartTemporalAt(context.Background(), addr, dbFile)
		if err == nil {
			break
		}
		if attempt == 5 {
			t.Fatalf("restart Temporal: %v", err)
		}
		time.Sleep(2 * time.Second)
	}

	for id, j := range waitTerminal(t, api, session.Subjects[0].JobIDs) {
		if j.Status != status.JobCompleted {
			t.Errorf("job %s ended %s after the restart", id, j.Status)
		}
	}
	var order plugin.OrderResponse
	testenv.Eventually(t, 30*time.Second, "the order to complete", func() bool {
		expect(t, api.do(http.MethodGet, "/orders/"+session.OrderID, nil, &order), http.StatusOK)
		return order.Status == status.OrderCompleted
	})
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
