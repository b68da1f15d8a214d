package contract

// WatchJobsInput names job runs of one order whose ends an order workflow run awaits without a
// child workflow future: jobs an earlier run of the order launched (WatchJobs).
type WatchJobsInput struct {
	OrderID string
	Jobs    []JobRunRef
}

// JobRunEnd is how one watched job run ended: its terminal status in the read model.
type JobRunEnd struct {
	JobID  string
	Run    int
	Status string
}
