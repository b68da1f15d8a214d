package workflows_test

import (
	"sync"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// The job workflows an order starts carry ShotflowLivemode: false for a test key's order, true
// for a live one (and for orders started before test mode, whose input lacks it).
func TestOrderJobsCarryLivemode(t *testing.T) {
	t.Parallel()
	for _, testMode := range []bool{false, true} {
		env := newEnv(t)
		var mu sync.Mutex
		seen := map[string]bool{}
		fake := func(ctx workflow.Context, in workflows.JobInput) (workflows.JobResult, error) {
			live, ok := workflow.GetTypedSearchAttributes(ctx).GetBool(workflows.SALivemode)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				seen[in.JobID] = live
			}
			return workflows.JobResult{Status: status.JobCompleted}, nil
		}
		env.RegisterWorkflowWithOptions(fake, workflow.RegisterOptions{Name: "JobWorkflow", DisableAlreadyRegisteredCheck: true})
		env.ExecuteWorkflow(workflows.OrderWorkflow, workflows.OrderInput{
			OrderID: "o1", AccountID: "acc", JobType: jobtype.PhotoShoot, Jobs: refs("a", "b"), TestMode: testMode,
		})
		if err := env.GetWorkflowResult(nil); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2 || seen["a"] != !testMode || seen["b"] != !testMode {
			t.Errorf("test mode %v: ShotflowLivemode of the jobs = %v, want %v for both", testMode, seen, !testMode)
		}
	}
	sa := workflows.OrderSearchAttributes(workflows.OrderInput{OrderID: "o", AccountID: "a", JobType: jobtype.PhotoShoot})
	if live, ok := sa.GetBool(workflows.SALivemode); !ok || !live {
		t.Errorf("an order without TestMode: ShotflowLivemode = %v (set %v), want true", live, ok)
	}
}

func TestSearchAttributeSpecs(t *testing.T) {
	t.Parallel()
	specs := workflows.SearchAttributeSpecs()
	for _, want := range []string{"ShotflowOrderID=Keyword", "ShotflowWaitingOn=Keyword", "ShotflowLivemode=Bool"} {
		found := false
		for _, s := range specs {
			found = found || s == want
		}
		if !found {
			t.Errorf("specs %v lack %s", specs, want)
		}
	}
}
