package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/worker"
	"github.com/shotflow/shotflow/workflows"
)

func TestMissingSearchAttributes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, err := testenv.StartTemporal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ts.Stop() }()
	c := ts.Client()

	missing, err := worker.MissingSearchAttributes(ctx, c, "default")
	if err != nil || len(missing) != 0 {
		t.Fatalf("dev server namespace: missing %v, %v", missing, err)
	}

	if _, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "bare", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the new namespace to be listed", func() bool {
		missing, err = worker.MissingSearchAttributes(ctx, c, "bare")
		return err == nil
	})
	want := slices.Sorted(slices.Values(workflows.SearchAttributeSpecs()))
	if !slices.Equal(missing, want) {
		t.Fatalf("bare namespace: missing %v, want %v", missing, want)
	}
	msg := worker.MissingSearchAttributesError("bare", missing).Error()
	if !strings.Contains(msg, "ShotflowWaitingOn=Keyword") || !strings.Contains(msg, "ShotflowLivemode=Bool") || !strings.Contains(msg, "deploy/temporal/setup.sh") {
		t.Fatalf("error message: %s", msg)
	}
}
