package plugin

import "time"

// RequestHash exposes requestHash to the tests of package plugin_test.
var RequestHash = requestHash

// SetIdempotencyTiming changes how long a request waits for the first request with its key and
// how long an unfinished claim is kept, until the returned function restores them.
func SetIdempotencyTiming(wait, lease time.Duration) (restore func()) {
	oldWait, oldLease := idempotencyWait, idempotencyLease
	idempotencyWait, idempotencyLease = wait, lease
	return func() { idempotencyWait, idempotencyLease = oldWait, oldLease }
}

// SetBatchStartTimeout changes how long a batch waits for its workflow starts, until the returned
// function restores it.
func SetBatchStartTimeout(d time.Duration) (restore func()) {
	old := batchStartTimeout
	batchStartTimeout = d
	return func() { batchStartTimeout = old }
}
