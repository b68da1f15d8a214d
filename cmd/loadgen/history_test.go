package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPerJobCostAddsTheParentsShare(t *testing.T) {
	c := perJobCost{
		job:           historySample{workflows: 50, events: 8, actions: 1},
		parent:        historySample{workflows: 2, events: 400, actions: 101},
		jobsPerParent: 50,
	}
	assert.InDelta(t, 16, c.events(), 1e-9)
	assert.InDelta(t, 3.02, c.actions(), 1e-9)
	assert.Zero(t, perJobCost{}.events())
}
