package workflows_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestWorkflowsLinkNoStore: the workflow code links neither the store nor gorm nor a database
// driver, directly or through any package it imports. It knows the activities by their names and
// types in activities/contract, and job and asset states by the leaves models/status and
// models/jobtype.
func TestWorkflowsLinkNoStore(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const shotflow = "github.com/shotflow/shotflow/"
	forbidden := []string{"gorm.io/", "github.com/jackc/pgx", "github.com/libtnb/sqlite", "modernc.org/sqlite", "github.com/lib/pq",
		shotflow + "models", shotflow + "activities"}
	allowed := []string{shotflow + "models/status", shotflow + "models/jobtype", shotflow + "activities/contract"}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		if slices.Contains(allowed, dep) {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("the workflows link %s", dep)
			}
		}
	}
}
