package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/shotflow/shotflow/workflows"
)

// generatorLiveFor is how long a provider seen with an active generator is taken to still have one.
const generatorLiveFor = 15 * time.Second

// pollerFreshFor is how recently a worker must have polled to count as a generator. Temporal lists
// a poller for about 5 minutes after its last poll, so a worker that stopped would count that long;
// a live one polls again at least every long-poll timeout (about 70 s), even when idle.
const pollerFreshFor = 2 * time.Minute

// liveness remembers when each provider was last seen with a worker polling its generate queue.
type liveness struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// GeneratorLive reports whether a worker polls the provider's generate task queue right now (one
// that polled within pollerFreshFor), so a request that would only wait in the queue can be
// refused up front. A positive answer is
// remembered for generatorLiveFor, so busy clients cost Temporal one call per provider and
// interval. An error (Temporal unreachable) comes with false.
func (e *Generation) GeneratorLive(ctx context.Context, provider string) (bool, error) {
	e.live.mu.Lock()
	seen, ok := e.live.seen[provider]
	e.live.mu.Unlock()
	if ok && time.Since(seen) < generatorLiveFor {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	queue := workflows.GenerateTaskQueue(e.cfg.TaskQueue, provider)
	res, err := e.cfg.Temporal.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return false, fmt.Errorf("describe task queue %s: %w", queue, err)
	}
	live := false
	for _, p := range res.GetPollers() {
		// A poller without a time is taken at its word.
		if at := p.GetLastAccessTime(); at == nil || time.Since(at.AsTime()) < pollerFreshFor {
			live = true
			break
		}
	}
	if !live {
		return false, nil
	}
	e.live.mu.Lock()
	if e.live.seen == nil {
		e.live.seen = map[string]time.Time{}
	}
	e.live.seen[provider] = time.Now()
	e.live.mu.Unlock()
	return true, nil
}
