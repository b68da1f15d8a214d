package contract

// ErrTypeAssetGone is the ApplicationError type PrepareAsset returns for an asset that no longer
// exists: there is nothing to prepare, and retrying will not change that.
const ErrTypeAssetGone = "ASSET_GONE"

// PrepareResult is how the preparation of an upload ended.
type PrepareResult struct {
	Status        string // ready or invalid
	Problem       string // why an invalid upload cannot be used
	Width, Height int    // of the prepared image
}

// JobRunRef names one run of a job.
type JobRunRef struct {
	JobID string
	Run   int
}
