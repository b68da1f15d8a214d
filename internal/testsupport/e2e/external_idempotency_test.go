package e2e_test

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// TestExternalKeyedGenerationRunsOnce sends twenty identical keyed generation requests at once
// through the real service: one order is created, run and charged once, every answer names it,
// byte for byte, and a later repeat still replays it.
func TestExternalKeyedGenerationRunsOnce(t *testing.T) {
	t.Parallel()
	long(t)
	env := testenv.New(t, temporalServer, testenv.Options{})
	tenant := env.NewTenant(t, 100)
	ext := externalClient(t, env, tenant)
	body := map[string]any{"preferences": "tall man, grey suit", "count": 2}
	// Generation is refused until the worker's generate queue has a poller.
	testenv.Eventually(t, 30*time.Second, "the local generator to poll", func() bool {
		live, _ := env.App.Engine.Generation.GeneratorLive(t.Context(), "local")
		return live
	})

	const n = 20
	answers := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = ext.send(http.MethodPost, "/models/register-ideas", "models-once", body)
		})
	}
	close(start)
	wg.Wait()
	replayed := 0
	for i, a := range answers {
		if errs[i] != nil || a.status != http.StatusOK {
			t.Fatalf("answer %d: %v %d %s", i, errs[i], a.status, a.body)
		}
		if !bytes.Equal(a.body, answers[0].body) {
			t.Fatalf("answer %d differs: %s, first %s", i, a.body, answers[0].body)
		}
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Fatalf("%d answers replayed, want %d", replayed, n-1)
	}
	var orders []models.Order
	if err := env.DB.Where("account_id = ?", tenant.AccountID).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	if len(orders) != 1 {
		t.Fatalf("%d orders, want 1", len(orders))
	}
	if d := waitOrder(t, env, ext, orders[0].ID); d.Status != status.OrderCompleted || d.JobsCompleted != 2 {
		t.Fatalf("order %+v", d)
	}
	var acc models.Account
	if err := env.DB.Take(&acc, "id = ?", tenant.AccountID).Error; err != nil {
		t.Fatal(err)
	}
	var consumed int64
	env.DB.Model(&models.LedgerEntry{}).Where("account_id = ? AND kind = ?", tenant.AccountID, models.LedgerConsume).Count(&consumed)
	if acc.CreditBalance != 100-2 || acc.CreditsReserved != 0 || consumed != 2 {
		t.Fatalf("balance %d, reserved %d, %d consume entries; want 98, 0 and 2: charged once", acc.CreditBalance, acc.CreditsReserved, consumed)
	}
	assertCreditInvariants(t, env.DB, tenant.AccountID)

	later := ext.mustSend(http.MethodPost, "/models/register-ideas", "models-once", body, http.StatusOK, nil)
	if !bytes.Equal(later.body, answers[0].body) || later.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a later repeat: %s %v", later.body, later.header)
	}
}
