// Command shotflow is the one binary of the service:
//
//	shotflow dev          everything on one machine: Temporal dev server, SQLite, API and worker
//	shotflow api          the HTTP API (production; configured by environment variables)
//	shotflow worker       the Temporal worker (production)
//	shotflow migrate      apply pending schema migrations (forward only)
//	shotflow admin …      operator commands: accounts, installations, credits, keys
//	shotflow healthcheck  exit 0 when the API's /readyz answers 200 (for container health checks)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `shotflow — AI product photography service

Usage:
  shotflow dev                 run everything locally (Temporal dev server, SQLite, API, worker)
  shotflow api                 run the HTTP API
  shotflow worker              run the Temporal worker
  shotflow migrate             apply pending database migrations (they only go forward)
  shotflow admin <command>     operator commands (shotflow admin help)
  shotflow healthcheck [URL]   check http://127.0.0.1:8080/readyz (or URL)

Configuration is read from environment variables; see README.md.
`

// errUsage marks a command-line mistake: the message is printed and the exit code is 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "dev":
		err = runDev(ctx, stdout)
	case "api":
		err = runAPI(ctx)
	case "worker":
		err = runWorker(ctx)
	case "migrate":
		err = runMigrate(ctx, args[1:], stdout)
	case "admin":
		err = runAdmin(ctx, args[1:], stdout)
	case "healthcheck":
		err = runHealthcheck(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "shotflow: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "shotflow %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}
