package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/activities/contract"
)

// PrepareInputWorkflowID is the workflow ID of the preparation of an upload.
func PrepareInputWorkflowID(assetID string) string { return "prepare-input/" + assetID }

// PrepareInput starts a PrepareInputWorkflow.
type PrepareInput struct {
	AssetID   string
	AccountID string
}

// prepareRetry retries a preparation that fails for reasons of its own (the blob store or the
// database unreachable); an unusable file is not a failure but an invalid asset.
var prepareRetry = &temporal.RetryPolicy{
	InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8,
	NonRetryableErrorTypes: []string{contract.ErrTypeAssetGone},
}

// PrepareInputWorkflow prepares an upload once its bytes are stored: PrepareAsset checks it,
// applies its EXIF orientation, upscales it when small and thumbnails it, and the asset becomes
// ready, or invalid when the file cannot be used. Every unfinished job that reads the asset is then
// signalled, so a job waiting with INPUT_NOT_READY runs again at once: it generates from the
// prepared image, or fails with INPUT_MISSING when the upload was unusable.
func PrepareInputWorkflow(ctx workflow.Context, in PrepareInput) (contract.PrepareResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         prepareRetry,
	})
	var res contract.PrepareResult
	err := runActivity(ctx, actx, contract.PrepareAsset, &res, in.AssetID)
	if isType(err, contract.ErrTypeAssetGone) {
		return res, nil
	}
	if err != nil {
		if temporal.IsCanceledError(err) {
			return res, err
		}
		workflow.GetLogger(ctx).Error("upload could not be prepared", "asset_id", in.AssetID, "error", err)
		if err := project(ctx, contract.InvalidateAsset, &res, in.AssetID, "the file could not be processed; upload it again"); err != nil {
			return res, err
		}
	}
	var waiting []contract.JobRunRef
	if err := project(ctx, contract.JobsWaitingFor, &waiting, in.AssetID); err != nil {
		return res, err
	}
	signals := make([]workflow.Future, 0, len(waiting))
	for _, j := range waiting {
		signals = append(signals, workflow.SignalExternalWorkflow(ctx, JobWorkflowID(j.JobID, j.Run), "", SignalInputReady, nil))
	}
	for i, f := range signals {
		// A job whose workflow has not started yet, or has ended, needs no signal.
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Info("job not signalled", "job_id", waiting[i].JobID, "error", err)
		}
	}
	return res, nil
}
