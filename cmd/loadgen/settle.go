package main

import (
	"context"
	"fmt"
	"time"
)

// quietShare is how much of one core the watched processes may spend, together, for the machine
// to count as quiet before a measured window (an idle Temporal server, PostgreSQL and worker
// spend a few percent: their timers, polls and sweeps).
const quietShare = 0.15

// settleEvery is how often settle samples the watched processes.
const settleEvery = time.Second

// settleBefore waits up to maxWait (-settle; 0 does not wait) until the watched processes are
// quiet (settle) and prints how long that took, naming the window about to start.
func (m meter) settleBefore(ctx context.Context, maxWait time.Duration, window string) error {
	if maxWait <= 0 {
		return nil
	}
	waited, quiet, err := settle(ctx, m.sample, settleEvery, maxWait)
	if err != nil {
		return err
	}
	if quiet {
		fmt.Printf("quiet after %.0f s before %s\n", waited.Seconds(), window)
	} else {
		fmt.Printf("not quiet after %.0f s before %s; measuring anyway\n", waited.Seconds(), window)
	}
	return nil
}

// settle waits, before a measured window, until the watched processes have done what an earlier
// phase left them: Temporal's visibility and transfer tasks of the workflows just run,
// PostgreSQL's autovacuum of their rows, the worker's sweeps. It samples them every interval and
// returns once they spent less than quietShare of a core over one interval, or once maxWait has
// passed, with how long it waited and whether they went quiet. Each window then measures its own
// work, not what the phase before it (shotflow's or the baseline's) left running.
func settle(ctx context.Context, sample func() (cpuSample, error), interval, maxWait time.Duration) (time.Duration, bool, error) {
	start := time.Now()
	prev, err := sample()
	if err != nil {
		return 0, false, err
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start), false, ctx.Err()
		case <-time.After(interval):
		}
		cur, err := sample()
		if err != nil {
			return time.Since(start), false, err
		}
		spent := cpuSample{}
		spent.add(prev, cur)
		var ticks uint64
		for _, t := range spent {
			ticks += t
		}
		if float64(ticks)/clockTicks < quietShare*interval.Seconds() {
			return time.Since(start), true, nil
		}
		if time.Since(start) >= maxWait {
			return time.Since(start), false, nil
		}
		prev = cur
	}
}
