package external

import (
	"net/http"
	"time"

	"github.com/shotflow/shotflow/api/idempotency"
)

// SetIdempotencyTiming changes how long a keyed request waits for the first request with its key,
// how long an unfinished claim is kept and how long an answer is replayed (0: 24 hours), until
// the returned function restores them.
func SetIdempotencyTiming(wait, lease, ttl time.Duration) (restore func()) {
	old := idempotencyTiming
	idempotencyTiming.Wait, idempotencyTiming.Lease, idempotencyTiming.TTL = wait, lease, ttl
	return func() { idempotencyTiming = old }
}

// RequestHash is the hash the Idempotency-Key of a POST of the JSON body to path (under Base) is
// bound to.
func RequestHash(path, body string) (string, error) {
	return idempotency.RequestHash(http.MethodPost, Base+path, []byte(body))
}
