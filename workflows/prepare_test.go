package workflows_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

func newPrepareEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	checkActivityCalls(t, env)
	env.RegisterWorkflow(workflows.PrepareInputWorkflow)
	env.RegisterActivity(wa)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// A prepared upload wakes every job waiting for it.
func TestPreparationWakesTheWaitingJobs(t *testing.T) {
	t.Parallel()
	env := newPrepareEnv(t)
	env.OnActivity(wa.PrepareAsset, mock.Anything, "a1").Return(contract.PrepareResult{Status: status.AssetReady, Width: 768, Height: 1024}, nil).Once()
	env.OnActivity(wa.JobsWaitingFor, mock.Anything, "a1").Return([]contract.JobRunRef{{JobID: "j1", Run: 1}, {JobID: "j2", Run: 2}}, nil).Once()
	var signalled []string
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", workflows.SignalInputReady, nil).
		Run(func(args mock.Arguments) { signalled = append(signalled, args.String(1)) }).Return(nil).Times(2)
	env.ExecuteWorkflow(workflows.PrepareInputWorkflow, workflows.PrepareInput{AssetID: "a1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res contract.PrepareResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != status.AssetReady {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if len(signalled) != 2 || signalled[0] != workflows.JobWorkflowID("j1", 1) || signalled[1] != workflows.JobWorkflowID("j2", 2) {
		t.Fatalf("signalled %v", signalled)
	}
}

// A preparation that keeps failing for reasons of its own marks the upload invalid, and still
// wakes the waiting jobs so that they fail with INPUT_MISSING instead of waiting out their deadline.
func TestPreparationThatKeepsFailingInvalidatesTheUpload(t *testing.T) {
	t.Parallel()
	env := newPrepareEnv(t)
	env.OnActivity(wa.PrepareAsset, mock.Anything, "a1").Return(contract.PrepareResult{}, errors.New("blob store unreachable"))
	env.OnActivity(wa.InvalidateAsset, mock.Anything, "a1", mock.Anything).
		Return(contract.PrepareResult{Status: status.AssetInvalid, Problem: "the file could not be processed; upload it again"}, nil).Once()
	env.OnActivity(wa.JobsWaitingFor, mock.Anything, "a1").Return([]contract.JobRunRef{{JobID: "j1", Run: 1}}, nil).Once()
	env.OnSignalExternalWorkflow(mock.Anything, workflows.JobWorkflowID("j1", 1), "", workflows.SignalInputReady, nil).Return(nil).Once()
	env.ExecuteWorkflow(workflows.PrepareInputWorkflow, workflows.PrepareInput{AssetID: "a1"})
	var res contract.PrepareResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Status != status.AssetInvalid {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// An asset that no longer exists ends the preparation quietly, without retries or signals.
func TestPreparationOfAGoneAssetEnds(t *testing.T) {
	t.Parallel()
	env := newPrepareEnv(t)
	env.OnActivity(wa.PrepareAsset, mock.Anything, "a1").
		Return(contract.PrepareResult{}, temporal.NewNonRetryableApplicationError("gone", contract.ErrTypeAssetGone, nil)).Once()
	env.ExecuteWorkflow(workflows.PrepareInputWorkflow, workflows.PrepareInput{AssetID: "a1"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}
