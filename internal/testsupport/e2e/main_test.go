// Package e2e_test drives shotflow as a client would: HTTP only, against the real router, a real
// Temporal dev server, a real worker and PostgreSQL.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
)

var temporalServer *testsuite.DevServer

func TestMain(m *testing.M) {
	ts, err := testenv.StartTemporal(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	temporalServer = ts
	code := m.Run()
	if err := ts.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stop dev server:", err)
	}
	os.Exit(code)
}

// long skips a test under -short (make test-short): every end-to-end test but the plugin photo
// session smoke test is long, and the process crash, restart and outage tests longest.
func long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long end-to-end test; skipped by -short")
	}
}
