// Package e2e_test drives shotflow as a client would: HTTP only, against the real router, a real
// Temporal dev server, a real worker and PostgreSQL.
package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
)

// temporalServer is the dev server every test shares. Each test otherwise owns what it uses
// (testenv.New: a database, a task queue, the API and a worker; its own tenants and processes),
// so the tests run with t.Parallel and their waits overlap; one that restarts a server on a fixed
// address stays serial.
var temporalServer *testsuite.DevServer

// parallelTests is how many tests run at once unless -parallel says otherwise. The tests mostly
// wait (for jobs to finish, a timeout to pass, an outage to end), so many more of them than the
// cores (go test's default) overlap well: on two cores the package takes little more than half
// as long with 6 as with 2.
const parallelTests = 6

func TestMain(m *testing.M) {
	flag.Parse()
	if !flagGiven("test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
	}
	ts, err := testenv.StartTemporal(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	temporalServer = ts
	code := m.Run()
	testenv.RemoveBinary()
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

// flagGiven reports whether the command line set the named flag.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
