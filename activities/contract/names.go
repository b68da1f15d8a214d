package contract

// The activity names. The worker registers *activities.Activities, so each name is that of the
// method that runs the activity; the workflows execute activities and local activities by these
// names, and the histories they record hold them. This file holds nothing else: the worker's
// TestContractNamesAreRegistered checks every constant here against what the worker registers.
// Each comment gives the arguments after the context and the result.
const (
	// BeginAttempt moves a job to in_progress for an attempt (local; AttemptInput).
	BeginAttempt = "BeginAttempt"
	// Generate runs one generation attempt (AttemptInput → GenerateResult). A failed attempt is
	// an ApplicationError typed with its errorcat category whose details are the provider's
	// Retry-After in seconds (float64) and when the attempt began running (time.Time, after its
	// wait in the provider's task queue; absent from the failures recorded before it was reported).
	// Each of its heartbeats records, as its first detail, the worker's time when it was recorded
	// (time.Time): a timeout that arrives long after the last heartbeat recorded was due tells the
	// workflow that Temporal, not the attempt, stopped (workflows/outage.go, lateTimeout).
	Generate = "Generate"
	// CompleteJob settles a successful run of the original shape (local; CompleteInput).
	CompleteJob = "CompleteJob"
	// EndJob settles a run that ended without output, in the older shapes (local; EndInput).
	EndJob = "EndJob"
	// MarkRetryPending shows a job as retry_pending (local; RetryPendingInput).
	MarkRetryPending = "MarkRetryPending"
	// FinishJob settles a run and records its webhook in one transaction (local; FinishJobInput → RecordWebhookResult).
	FinishJob = "FinishJob"
	// RecordJobWebhook records the webhook of a terminal run (local; RecordWebhookInput → RecordWebhookResult).
	RecordJobWebhook = "RecordJobWebhook"
	// DeliverWebhook makes one attempt of a webhook delivery (DeliverInput → DeliverResult).
	DeliverWebhook = "DeliverWebhook"
	// MarkWebhookFailed records that a delivery run gave up (local; delivery ID string).
	MarkWebhookFailed = "MarkWebhookFailed"
	// PrepareAsset checks and prepares an upload (asset ID string → PrepareResult).
	PrepareAsset = "PrepareAsset"
	// InvalidateAsset marks an upload in processing invalid (local; asset ID, problem string → PrepareResult).
	InvalidateAsset = "InvalidateAsset"
	// JobsWaitingFor lists the unfinished jobs that read an asset (local; asset ID string → []JobRunRef).
	JobsWaitingFor = "JobsWaitingFor"
	// WatchJobs waits until at least one of an order's job runs has ended and returns those that
	// have, polling the read model with heartbeats (WatchJobsInput → []JobRunEnd).
	WatchJobs = "WatchJobs"
)
