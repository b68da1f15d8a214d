package workflows_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/workflows"
)

// TestReplayRecordedHistories replays histories recorded from real runs (internal/e2e with
// SHOTFLOW_RECORD_HISTORIES=1). A change to workflow code that would break running workflows
// fails here: put it behind workflow.GetVersion, or re-record when no such workflow can exist.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d recorded histories in testdata/, want at least 5", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.OrderWorkflow)
			r.RegisterWorkflow(workflows.JobWorkflow)
			r.RegisterWorkflow(workflows.PrepareInputWorkflow)
			if err := r.ReplayWorkflowHistoryFromJSONFile(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
