package prefer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/platform/ratelimit"
)

// leases records the lease of every slot asked for.
type leases struct {
	ratelimit.Slots
	asked []time.Duration
}

func (l *leases) Acquire(ctx context.Context, key string, limit int, lease time.Duration) (*ratelimit.Slot, bool, error) {
	l.asked = append(l.asked, lease)
	return l.Slots.Acquire(ctx, key, limit, lease)
}

// A held request keeps its slot for as long as it can last: its wait, then its work after it,
// which REQUEST_TIMEOUT bounds (up to 10 minutes). A lease that ended first would free the slot
// while the request still held it, and another request could take it past the key's cap.
func TestAHeldRequestsSlotOutlastsTheRequest(t *testing.T) {
	for _, timeout := range []time.Duration{0, 30 * time.Second, 10 * time.Minute} {
		slots := &leases{Slots: ratelimit.NewMemorySlots(nil)}
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodGet, "/jobs/x", nil)
		c.Request.Header.Set("Prefer", "wait=60")
		if timeout > 0 {
			reqctx.SetDeadlineExtender(c, func(time.Duration) {}, timeout)
		}
		held, busy := prefer.Take(c, slots, "plugin:k", nil)
		if busy || held == nil || len(slots.asked) != 1 {
			t.Fatalf("REQUEST_TIMEOUT %v: held %v, busy %v, %d slots asked", timeout, held, busy, len(slots.asked))
		}
		held.Release()
		if longest := 60*time.Second + max(timeout, 2*time.Minute); slots.asked[0] <= longest {
			t.Errorf("REQUEST_TIMEOUT %v: the slot's lease is %v, no longer than the request can hold it (%v)", timeout, slots.asked[0], longest)
		}
	}
}
