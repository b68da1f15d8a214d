// Package e2e_test drives shotflow as a client would: HTTP only, against the real router, a real
// Temporal dev server, a real worker and PostgreSQL.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/internal/testenv"
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
