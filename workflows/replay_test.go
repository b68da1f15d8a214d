package workflows_test

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/workflows"
)

// TestReplayRecordedHistories replays histories recorded from real runs (internal/testsupport/e2e with
// SHOTFLOW_RECORD_HISTORIES=1). A change to workflow code that would break running workflows
// fails here: put it behind workflow.GetVersion, or re-record when no such workflow can exist.
func TestReplayRecordedHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	// The shapes every release must still replay, each recorded by the e2e test named.
	for _, want := range []string{
		// Recorded in the current shapes: JobShapeQuiet jobs, and orders of OrderInput.Version 3,
		// which launch every job a slot is free for at once and write no version marker, or (the
		// continued order and the handed-over one) of version 4, which continue as new without
		// waiting for their running jobs.
		"order_workflow_completed.json", // TestPluginPhotoSessionEndToEnd
		"job_workflow_completed.json",   // TestPluginPhotoSessionEndToEnd
		"order_workflow_cancel.json",    // TestCancelOnlyJobsThatHaveNotStarted
		"order_workflow_continued.json", // TestLargeOrderContinuesAsNew: a run that continued as new
		"job_workflow_cancelled.json",   // TestCancelReachesALaunchedRunBeforeItsFirstAttempt: a re-run cancelled by its own workflow
		"job_workflow_input_wait.json",  // TestJobWaitsForItsInputAndRunsWhenItIsReady
		"job_workflow_callback.json",    // TestWebhooksAreSignedRetriedAndReplayed: an installation with a callback URL
		"webhook_delivery_retried.json", // TestWebhooksAreSignedRetriedAndReplayed: a failed attempt and its retry timer
		"prepare_input_workflow.json",   // TestUploadsArePreparedBeforeJobsUseThem
		// An order of OrderInput.Version 4: a later run that took over a job waiting for its input
		// (OrderInput.Watching) and read its end with WatchJobs (TestOrderContinuesAsNewPastALongJob).
		"order_workflow_handed_over.json",
		// TestLargeOrderContinuesAsNew in an order of version 3: each run waits for its jobs.
		"order_workflow_continued_batch.json",
		// An order of lean-jobs version 3 read from its version marker (started without
		// OrderInput.Version).
		"order_workflow_completed_marker.json",
		// The same tests in lean-jobs version 2 orders, which launch one job at a time.
		"order_workflow_completed_quiet.json",
		"order_workflow_cancel_quiet.json",
		"order_workflow_continued_quiet.json",
		// The same tests before the quiet shape: lean-jobs version 1 orders and JobShapeLean jobs,
		// which signal their order.
		"order_workflow_completed_lean.json",
		"job_workflow_completed_lean.json",
		// Before issue 15 (no version marker): jobs in JobShapeOriginal, re-runs included.
		"order_workflow_completed_original.json",
		"job_workflow_completed_original.json",
		"order_workflow_cancel_original.json",
		"order_workflow_continued_original.json",
		"job_workflow_cancelled_original.json",
		"job_workflow_input_wait_original.json",
		"job_workflow_callback_original.json",
	} {
		if !slices.Contains(files, filepath.Join("testdata", want)) {
			t.Errorf("testdata/%s is missing", want)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.OrderWorkflow)
			r.RegisterWorkflow(workflows.JobWorkflow)
			r.RegisterWorkflow(workflows.PrepareInputWorkflow)
			r.RegisterWorkflow(workflows.WebhookDeliveryWorkflow)
			if err := r.ReplayWorkflowHistoryFromJSONFile(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), f); err != nil {
				t.Fatalf("replay %s: %v", f, err)
			}
		})
	}
}
