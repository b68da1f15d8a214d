package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/shotflow/shotflow/internal/providers"
)

// Every heartbeat of a generate attempt records, as its first detail, when it was recorded
// (contract.Generate): the attempt's keep-alive, its providers' heartbeats while they poll, and the
// heartbeat after each output stored. JobWorkflow reads it from a timeout to tell an outage of
// Temporal from the attempt's failure (workflows/outage.go, lateTimeout).
func TestGenerateHeartbeatsRecordWhenTheyWereRecorded(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	var seen []time.Time
	var bad int
	// The environment passes on the heartbeats the SDK sends: the first, and the last of an attempt
	// that fails (here the keep-alive's and the provider's).
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var at time.Time
		if details == nil || !details.HasValues() || details.Get(&at) != nil || at.IsZero() {
			bad++
			return
		}
		seen = append(seen, at)
	})
	beat := func(ctx context.Context) error {
		stop := keepAlive(ctx, 5*time.Millisecond)
		time.Sleep(30 * time.Millisecond)
		stop()
		providers.Heartbeat(ctx, "queue position 3")
		return errors.New("the attempt failed")
	}
	env.RegisterActivityWithOptions(beat, activity.RegisterOptions{Name: "beat"})
	before := time.Now()
	if _, err := env.ExecuteActivity("beat"); err == nil {
		t.Fatal("the attempt did not fail")
	}
	if bad > 0 || len(seen) < 2 {
		t.Fatalf("%d heartbeats recorded their time, %d did not; want every one, at least the keep-alive's and the provider's", len(seen), bad)
	}
	for _, at := range seen {
		if at.Before(before) || at.After(time.Now()) {
			t.Errorf("a heartbeat recorded %v, outside the attempt", at)
		}
	}
}
