package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRatiosOf(t *testing.T) {
	s := shotflowResult{accepted: phase{count: 40, secs: 1}, jobs: phase{count: 200, secs: 40}}
	b := bareResult{starts: phase{count: 40, secs: 0.5}, jobs: phase{count: 250, secs: 25}}
	rs := ratiosOf(s, b)
	assert.Len(t, rs, 2)

	jobs, sessions := rs[0], rs[1]
	assert.InDelta(t, 5.0/10.0, jobs.share(), 1e-9)
	assert.False(t, jobs.met(), "50% of the bare jobs/s is below the 80% goal")
	assert.InDelta(t, 40.0/80.0, sessions.share(), 1e-9)
	assert.False(t, sessions.met())

	s.jobs.secs, s.accepted.secs = 24, 0.58
	rs = ratiosOf(s, b)
	assert.True(t, rs[0].met(), "8.3 of 10 jobs/s is 83%")
	assert.True(t, rs[1].met(), "69 of 80 sessions/s is 86%")
	s.jobs.secs, s.accepted.secs = 26, 0.6
	rs = ratiosOf(s, b)
	assert.False(t, rs[0].met(), "7.7 of 10 jobs/s is 77%")
	assert.False(t, rs[1].met(), "66.7 of 80 sessions/s is 83%")
}

func TestRatioWithoutABaselineIsZero(t *testing.T) {
	r := ratio{shotflow: 5, bare: 0, goal: 0.6}
	assert.Zero(t, r.share())
	assert.False(t, r.met())
	assert.Zero(t, phase{count: 3}.rate())
}

func TestPrintRatios(t *testing.T) {
	var buf bytes.Buffer
	printRatios(&buf, []ratio{{name: "jobs/s", shotflow: 6, bare: 10, goal: 0.6}})
	assert.Contains(t, buf.String(), "6.0 / 10.0 = 60% (meets the goal of 60%)")
}

func TestMedianRatiosTakesEachRatiosMiddleRound(t *testing.T) {
	round := func(jobs, sessions float64) []ratio {
		return []ratio{
			{name: "jobs", shotflow: jobs, bare: 100, goal: 0.6},
			{name: "sessions", shotflow: sessions, bare: 200, goal: 0.7},
		}
	}
	// Each ratio's median comes from its own middle round: jobs 65% (round 3), sessions 70% (round 1).
	got := medianRatios([][]ratio{round(50, 140), round(90, 100), round(65, 160)})
	assert.Equal(t, []ratio{
		{name: "jobs", shotflow: 65, bare: 100, goal: 0.6},
		{name: "sessions", shotflow: 140, bare: 200, goal: 0.7},
	}, got)
	// An even count takes the lower middle round.
	got = medianRatios([][]ratio{round(50, 140), round(90, 100), round(65, 160), round(70, 180)})
	assert.InDelta(t, 0.65, got[0].share(), 1e-9)
	assert.InDelta(t, 0.7, got[1].share(), 1e-9)
	assert.Nil(t, medianRatios(nil))
}

func TestJoinedPhasesRateIsAllTheirCountOverAllTheirSeconds(t *testing.T) {
	a := phase{count: 200, secs: 1, latency: []time.Duration{3, 5}}
	b := phase{count: 200, secs: 3, latency: []time.Duration{1, 4}}
	j := phase{}.join(a).join(b)
	assert.Equal(t, 400, j.count)
	assert.InDelta(t, 100.0, j.rate(), 1e-9) // not the mean of 200/s and 66.7/s
	assert.Equal(t, []time.Duration{1, 3, 4, 5}, j.latency)
}
