package plugin

import (
	"time"

	"github.com/shotflow/shotflow/api/idempotency"
)

// requestHash and payloadHash are the shared mechanism's hashes (api/idempotency), as the tests
// of package plugin call them.
var (
	requestHash = idempotency.RequestHash
	payloadHash = idempotency.PayloadHash
)

// RequestHash exposes requestHash to the tests of package plugin_test.
var RequestHash = requestHash

// SetIdempotencyTiming changes how long a request waits for the first request with its key and
// how long an unfinished claim is kept, until the returned function restores them.
func SetIdempotencyTiming(wait, lease time.Duration) (restore func()) {
	old := idempotencyTiming
	idempotencyTiming.Wait, idempotencyTiming.Lease = wait, lease
	return func() { idempotencyTiming = old }
}

// SetBatchStartTimeout changes how long a batch waits for its workflow starts, until the returned
// function restores it.
func SetBatchStartTimeout(d time.Duration) (restore func()) {
	old := batchStartTimeout
	batchStartTimeout = d
	return func() { batchStartTimeout = old }
}
