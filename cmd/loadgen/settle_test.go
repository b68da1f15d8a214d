package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// scripted returns samples whose processes spend the given ticks between one sample and the next.
func scripted(spent ...uint64) func() (cpuSample, error) {
	total := uint64(0)
	i := -1
	return func() (cpuSample, error) {
		if i >= 0 && i < len(spent) {
			total += spent[i]
		} else if i >= len(spent) {
			total += spent[len(spent)-1]
		}
		i++
		return cpuSample{"temporal": total, "postgres": total / 2}, nil
	}
}

func TestSettleWaitsUntilTheProcessesAreQuiet(t *testing.T) {
	interval := 10 * time.Millisecond
	// 15% of a core over 10 ms is 0.15 ticks: any tick in an interval is busy here.
	waited, quiet, err := settle(context.Background(), scripted(4, 2, 0), interval, time.Minute)
	if err != nil || !quiet {
		t.Fatalf("settle = %v, %v, %v; want quiet", waited, quiet, err)
	}
	if waited < 3*interval {
		t.Errorf("settle returned after %v, before the third interval (the first quiet one)", waited)
	}
}

func TestSettleGivesUpAfterMaxWait(t *testing.T) {
	interval := 5 * time.Millisecond
	waited, quiet, err := settle(context.Background(), scripted(3), interval, 30*time.Millisecond)
	if err != nil || quiet {
		t.Fatalf("settle = %v, %v, %v; want not quiet", waited, quiet, err)
	}
	if waited < 30*time.Millisecond || waited > time.Second {
		t.Errorf("settle gave up after %v, want about 30ms", waited)
	}
}

func TestSettleCountsEveryProcessAndStopsOnErrors(t *testing.T) {
	// Over 100 ms, 15% of a core is 1.5 ticks: each process's tick is under it, their sum is not.
	calls := 0
	sample := func() (cpuSample, error) {
		calls++
		return cpuSample{"temporal": uint64(calls), "postgres": uint64(calls)}, nil
	}
	if _, quiet, _ := settle(context.Background(), sample, time.Second/10, 250*time.Millisecond); quiet {
		t.Error("a tick of each of two processes per 100 ms (20% of a core) is not quiet")
	}
	// 1 tick per second, under 15% of a core: quiet.
	calls = 0
	slow := func() (cpuSample, error) { calls++; return cpuSample{"temporal": uint64(calls) / 10}, nil }
	if _, quiet, err := settle(context.Background(), slow, time.Second/10, time.Second); err != nil || !quiet {
		t.Errorf("a tick a second: quiet %v, err %v", quiet, err)
	}
	boom := errors.New("gone")
	failing := func() (cpuSample, error) { return nil, boom }
	if _, _, err := settle(context.Background(), failing, time.Millisecond, time.Second); !errors.Is(err, boom) {
		t.Errorf("settle with a failing sample: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, quiet, err := settle(ctx, scripted(5), time.Millisecond, time.Minute); quiet || !errors.Is(err, context.Canceled) {
		t.Errorf("settle with a cancelled context: quiet %v, err %v", quiet, err)
	}
}
