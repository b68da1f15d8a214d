package main

import (
	"context"
	"io"
	"math"
	"slices"
	"testing"
)

// roundRecorder stands in for both sides of a round and records, in order, what measureRound
// asked of them.
type roundRecorder struct {
	steps   []string
	phases  []phase // what each bare start phase measures, in turn
	started phase   // the start phases measured so far, joined as bareRun.starts joins them
	jobs    phase   // the bare orders' jobs
	s       shotflowResult
}

func (r *roundRecorder) starts(context.Context) error {
	r.steps = append(r.steps, "bare starts")
	r.started = r.started.join(r.phases[0])
	r.phases = r.phases[1:]
	return nil
}

func (r *roundRecorder) finish(context.Context) (bareResult, error) {
	r.steps = append(r.steps, "bare orders")
	return bareResult{starts: r.started, jobs: r.jobs, children: 50}, nil
}

func (r *roundRecorder) shotflow(_ context.Context, whilePaused func() error) (shotflowResult, error) {
	r.steps = append(r.steps, "sessions accepted")
	if err := whilePaused(); err != nil {
		return shotflowResult{}, err
	}
	r.steps = append(r.steps, "worker resumed, jobs done")
	return r.s, nil
}

// With -mode both -start-only a round is A-B-A: bare starts, shotflow's sessions accepted, bare
// starts again while shotflow's worker is still paused, then shotflow's jobs and the bare orders.
// The starts ratio is the sessions' rate over the rate of both start phases taken together, so a
// machine that speeds up or slows down during the round favours neither side.
func TestMeasureRoundOrderIsABA(t *testing.T) {
	t.Parallel()
	rec := &roundRecorder{
		phases: []phase{{count: 40, secs: 1}, {count: 40, secs: 3}}, // 40/s, then 13.3/s: 20/s together
		jobs:   phase{count: 300, secs: 10},
		s:      shotflowResult{accepted: phase{count: 40, secs: 4}, jobs: phase{count: 200, secs: 20}},
	}
	o := options{mode: modeBoth, startOnly: true}
	rs, err := measureRound(context.Background(), o, rec, rec.shotflow, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bare starts", "sessions accepted", "bare starts", "worker resumed, jobs done", "bare orders"}
	if !slices.Equal(rec.steps, want) {
		t.Fatalf("order of a -start-only round:\n got %q\nwant %q", rec.steps, want)
	}
	checkRatios(t, rs, map[string][2]float64{
		"jobs/s end to end vs bare child jobs/s": {10, 30}, // 200 in 20 s, 300 in 10 s
		"sessions accepted/s vs bare starts/s":   {10, 20}, // 40 in 4 s, 80 in 1+3 s
	})
}

// Without -start-only (or in one mode alone) nothing is measured between shotflow's acceptance
// and its jobs: shotflow first, then the whole baseline.
func TestMeasureRoundOtherModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o      options
		steps  []string
		ratios int
	}{
		{options{mode: modeBoth}, []string{"sessions accepted", "worker resumed, jobs done", "bare orders"}, 2},
		{options{mode: modeShotflow, startOnly: true}, []string{"sessions accepted", "worker resumed, jobs done"}, 0},
		{options{mode: modeBare, startOnly: true}, []string{"bare orders"}, 0},
	} {
		rec := &roundRecorder{
			jobs: phase{count: 100, secs: 10},
			s:    shotflowResult{accepted: phase{count: 10, secs: 1}, jobs: phase{count: 50, secs: 10}},
		}
		rs, err := measureRound(context.Background(), c.o, rec, rec.shotflow, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rec.steps, c.steps) || len(rs) != c.ratios {
			t.Errorf("%+v: steps %q and %d ratios, want %q and %d", c.o, rec.steps, len(rs), c.steps, c.ratios)
		}
	}
}

func checkRatios(t *testing.T, rs []ratio, want map[string][2]float64) {
	t.Helper()
	if len(rs) != len(want) {
		t.Fatalf("%d ratios, want %d: %+v", len(rs), len(want), rs)
	}
	for _, r := range rs {
		w, ok := want[r.name]
		if !ok || math.Abs(r.shotflow-w[0]) > 1e-9 || math.Abs(r.bare-w[1]) > 1e-9 {
			t.Errorf("ratio %q = %v / %v, want %v / %v", r.name, r.shotflow, r.bare, w[0], w[1])
		}
	}
}
