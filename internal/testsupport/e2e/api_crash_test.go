package e2e_test

import (
	"bytes"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestAPIKilledBetweenCommitAndStartStrandsNothing runs `shotflow api` as its own process, kills
// it (SIGKILL) right after a session's order and reservation commit and before the workflow
// start, and shows a worker's outbox sweep starting and finishing that order.
func TestAPIKilledBetweenCommitAndStartStrandsNothing(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{Configure: func(c *config.Config) {
		c.OutboxSweepInterval = 500 * time.Millisecond
		c.OutboxStartAfter = 2 * time.Second
	}})
	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "mug", packshotPNG(t))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	proc := env.StartProcess(t, "api", "HTTP_ADDR="+addr, "PUBLIC_BASE_URL=http://"+addr, "SHOTFLOW_TEST_CRASH_AFTER_COMMIT=1")
	testenv.Eventually(t, 30*time.Second, "the api process to be ready", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	body := []byte(`{"session_config":{"aspect_ratio":"1:1"},"subjects":[{"product_ref":"mug","images_count":2,"ai_model":"local/studio-v1"}]}`)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+plugin.Base+"/jobs", bytes.NewReader(body))
	req.Header.Set("X-Api-Key", tenant.PluginKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the api answered %d; it should have died mid-request", resp.StatusCode)
	}
	select {
	case <-proc.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the api process did not die")
	}

	// The order and its reservation were committed; no workflow was started by the dead process.
	var order models.Order
	if err := env.DB.Where("account_id = ?", tenant.AccountID).Take(&order).Error; err != nil {
		t.Fatalf("no order after the crash: %v", err)
	}
	if order.CreditsReserved != 2 {
		t.Fatalf("order credits_reserved = %d", order.CreditsReserved)
	}
	// A worker's sweep starts it, and it finishes.
	testenv.Eventually(t, 60*time.Second, "the stranded order to finish", func() bool {
		env.DB.Take(&order, "id = ?", order.ID)
		return order.Status != status.OrderInProgress
	})
	if order.Status != status.OrderCompleted || order.JobsCompleted != 2 || order.WorkflowStartedAt == nil {
		t.Fatalf("order = %+v", order)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)
}
