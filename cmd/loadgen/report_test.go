package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRatiosOf(t *testing.T) {
	s := shotflowResult{accepted: phase{count: 40, secs: 1}, jobs: phase{count: 200, secs: 40}}
	b := bareResult{starts: phase{count: 40, secs: 0.5}, jobs: phase{count: 250, secs: 25}}
	rs := ratiosOf(s, b)
	assert.Len(t, rs, 2)

	jobs, sessions := rs[0], rs[1]
	assert.InDelta(t, 5.0/10.0, jobs.share(), 1e-9)
	assert.False(t, jobs.met(), "50% of the bare jobs/s is below the 60% goal")
	assert.InDelta(t, 40.0/80.0, sessions.share(), 1e-9)
	assert.False(t, sessions.met())

	s.jobs.secs, s.accepted.secs = 16, 0.7
	rs = ratiosOf(s, b)
	assert.True(t, rs[0].met(), "12.5 of 10 jobs/s")
	assert.True(t, rs[1].met(), "57 of 80 sessions/s is 71%")
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
