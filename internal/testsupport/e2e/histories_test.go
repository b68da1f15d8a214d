package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/platform/historycost"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
)

// recordHistory writes the history of a workflow's latest run as JSON under workflows/testdata
// when SHOTFLOW_RECORD_HISTORIES=1, for the replay tests that guard workflow determinism.
func recordHistory(t *testing.T, c temporalclient.Client, workflowID, name string) {
	t.Helper()
	recordRunHistory(t, c, workflowID, "", name)
}

// recordRunHistory is recordHistory for one run of the workflow ("" for the latest).
func recordRunHistory(t *testing.T, c temporalclient.Client, workflowID, runID, name string) {
	t.Helper()
	if os.Getenv("SHOTFLOW_RECORD_HISTORIES") != "1" {
		return
	}
	events, err := historycost.Read(context.Background(), c, workflowID, runID)
	if err != nil {
		t.Fatal(err)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "workflows", "testdata", name)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events)", path, len(events))
}
