package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	outage "github.com/shotflow/shotflow/internal/platform/unavailable"
)

// DefaultStartTimeout is how long a request tries the workflow start of what it committed (an
// order, an upload's preparation) before leaving it to the outbox sweep (Config.StartTimeout).
const DefaultStartTimeout = 10 * time.Second

// startGatePause is how long the requests of a process leave their workflow starts to the outbox
// sweep after one found Temporal unavailable, before one of them tries again.
const startGatePause = 5 * time.Second

// errStartDeferred is the answer of a start the gate did not try: Temporal was found unavailable
// moments ago, and the committed work waits for the outbox sweep.
var errStartDeferred = errors.New("temporal is unavailable: the start is left to the outbox sweep")

// startGate keeps the requests of a process from each waiting on a Temporal that is down. The
// outbox makes a request's workflow start optional (what it committed is started by the sweep
// otherwise), yet every start against an unreachable frontend waits out its timeout: without the
// gate, each session accepted during an outage would take StartTimeout longer, and a client whose
// own timeout is shorter would see an error for an order that exists. Once a start finds Temporal
// unavailable (or too slow), the process's starts are deferred to the sweep; every startGatePause
// one request tries again (the probe), and the first start Temporal answers, whatever it answers,
// lets every request try again.
type startGate struct {
	mu      sync.Mutex
	open    bool      // Temporal was found unavailable: starts are deferred
	retryAt time.Time // when a request may probe
	probing bool      // a request is probing
}

// admit reports whether a start should be tried now: always while Temporal answers; while it does
// not, by one request once the pause is over.
func (g *startGate) admit(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return true
	}
	if g.probing || now.Before(g.retryAt) {
		return false
	}
	g.probing = true
	return true
}

// done records the outcome of a start that admit let through: whether Temporal is unavailable
// (opened) or available again (closed) after it, for the log.
func (g *startGate) done(now time.Time, err error) (opened, closed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wasOpen := g.open
	g.probing = false
	if err != nil && outage.Is(err) {
		g.open, g.retryAt = true, now.Add(startGatePause)
		return !wasOpen, false
	}
	g.open = false
	return false, wasOpen
}

// gatedStart runs start, a request's workflow start of work it has committed, with ctx, unless
// the gate defers it (errStartDeferred). A start that fails or is deferred is left to the outbox
// sweep: it is logged as left, a warning when it failed and a debug line when deferred (the gate
// logged the outage once), with the item's field, and its error returned.
func (c *core) gatedStart(ctx context.Context, left string, item zap.Field, start func(ctx context.Context) error) error {
	if !c.gate.admit(time.Now()) {
		c.logger().Debug(left, item, zap.Error(errStartDeferred))
		return errStartDeferred
	}
	err := start(ctx)
	switch opened, closed := c.gate.done(time.Now(), err); {
	case opened:
		c.logger().Warn("temporal unavailable: workflow starts of accepted requests are left to the outbox sweep; one request tries again every pause",
			zap.Duration("pause", startGatePause), zap.Error(err))
	case closed:
		c.logger().Info("temporal available again: requests start their workflows themselves")
	}
	if err != nil {
		c.logger().Warn(left, item, zap.Error(err))
	}
	return err
}

// startContext is the context of a request's workflow start of work it has committed: from the
// commit on a failure only delays the start, so the client hanging up must not cancel it, and it
// lasts Config.StartTimeout.
func (c *core) startContext(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := c.cfg.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}
