package worker

import (
	"net/http"
	"sync/atomic"
)

// Health says whether a process's workers are polling their task queues; the zero value is not
// polling.
type Health struct {
	polling atomic.Bool
}

// SetPolling records whether the workers poll.
func (h *Health) SetPolling(polling bool) { h.polling.Store(polling) }

// Polling reports whether the workers poll.
func (h *Health) Polling() bool { return h.polling.Load() }

// ServeHTTP answers a health check: 200 {"status":"polling"} while the workers poll, 503
// {"status":"stopped"} before they start and once they have stopped.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if h.Polling() {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"polling"}` + "\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"status":"stopped"}` + "\n"))
}
