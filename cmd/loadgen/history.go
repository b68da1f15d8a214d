package main

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/platform/historycost"
)

// historySample is the mean cost of the workflows of one kind, over a sample of them.
type historySample struct {
	workflows int     // how many histories were read
	events    float64 // mean events per workflow
	actions   float64 // mean actions per workflow
}

// maxSample bounds how many histories of one kind loadgen reads.
const maxSample = 50

// sampleHistories reads up to maxSample histories of ids and averages their cost.
func sampleHistories(ctx context.Context, c client.Client, ids []string) (historySample, error) {
	ids = ids[:min(len(ids), maxSample)]
	var total historycost.Cost
	for _, id := range ids {
		events, err := historycost.Read(ctx, c, id, "")
		if err != nil {
			return historySample{}, err
		}
		total = total.Plus(historycost.Of(events))
	}
	return meanCost(total, len(ids)), nil
}

// meanCost divides a total cost over n workflows.
func meanCost(total historycost.Cost, n int) historySample {
	if n == 0 {
		return historySample{}
	}
	return historySample{workflows: n, events: float64(total.Events) / float64(n), actions: float64(total.Actions) / float64(n)}
}
