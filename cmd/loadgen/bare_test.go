package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/workflows"
)

// jsonKeys returns the sorted keys of the JSON object v encodes to, and those of its Jobs[0].
func jsonKeys(t *testing.T, v any) (top, job []string) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]json.RawMessage
	if err := json.Unmarshal(m["Jobs"], &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("Jobs of %s: %v", data, err)
	}
	return slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Keys(jobs[0]))
}

// TestOrderShapeIsAnOrdersStart holds -bare-shape order to what shotflow's API starts for a
// session of one image: the fields of the workflow's input (workflows.OrderInput) and its search
// attributes (workflows.OrderSearchAttributes), with the version and retry schedule every order
// carries. The memo's keys are the engine's (orderMemo, unexported), checked here by name.
func TestOrderShapeIsAnOrdersStart(t *testing.T) {
	var o client.StartWorkflowOptions
	args := orderShape(&o, 7)
	if len(args) != 1 {
		t.Fatalf("%d arguments, want the input alone", len(args))
	}
	order := workflows.OrderInput{OrderID: "ord", AccountID: "acc", InstallationID: "ins", JobType: "photo_shoot",
		Jobs:       []workflows.JobRef{{JobID: "job", Run: 1, ProductRef: "p", ProductLabel: "P", ExpiresAt: time.Now(), Provider: "local"}},
		JobOptions: workflows.JobOptions{Retry: workflows.DefaultRetrySchedule, InputWait: time.Minute}, MaxConcurrentJobs: 50,
		Version: workflows.OrderVersion}
	wantTop, wantJob := jsonKeys(t, order)
	gotTop, gotJob := jsonKeys(t, args[0])
	if !slices.Equal(gotTop, wantTop) || !slices.Equal(gotJob, wantJob) {
		t.Errorf("input fields %v, job %v; an order's are %v, job %v", gotTop, gotJob, wantTop, wantJob)
	}

	// The values that are the same in every order's start are the same here too.
	data, err := json.Marshal(args[0])
	if err != nil {
		t.Fatal(err)
	}
	var shaped workflows.OrderInput
	if err := json.Unmarshal(data, &shaped); err != nil {
		t.Fatal(err)
	}
	if shaped.Version != workflows.OrderVersion || !reflect.DeepEqual(shaped.JobOptions.Retry, workflows.DefaultRetrySchedule) {
		t.Errorf("version %d and retry schedule %+v; an order's are %d and %+v", shaped.Version, shaped.JobOptions.Retry,
			workflows.OrderVersion, workflows.DefaultRetrySchedule)
	}

	names := func(sa map[string]bool) []string { return slices.Sorted(maps.Keys(sa)) }
	want, got := map[string]bool{}, map[string]bool{}
	for k := range workflows.OrderSearchAttributes(order).GetUntypedValues() {
		want[k.GetName()] = true
	}
	for k := range o.TypedSearchAttributes.GetUntypedValues() {
		got[k.GetName()] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("search attributes %v, an order's are %v", names(got), names(want))
	}
	if o.Memo["api"] != "plugin" || o.Memo["jobs_total"] != 1 || o.Memo["correlation_id"] == "" {
		t.Errorf("memo %v, want an order's: api, jobs_total, correlation_id", o.Memo)
	}
}
