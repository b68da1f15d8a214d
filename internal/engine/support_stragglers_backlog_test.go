package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
	"github.com/shotflow/shotflow/workflows"
)

// countingTemporal is a describingTemporal that counts the descriptions of job workflows: one per
// job a straggler sweep looks at.
type countingTemporal struct {
	*describingTemporal
	jobDescribes atomic.Int64
}

func (f *countingTemporal) DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if len(workflowID) > 4 && workflowID[:4] == "job/" {
		f.jobDescribes.Add(1)
	}
	return f.describingTemporal.DescribeWorkflowExecution(ctx, workflowID, runID)
}

// stragglerBehindBacklog is a database with more healthy open jobs than a sweep looks at (a big
// order's queued jobs, never launched while its order workflow runs), all older than one stranded
// job (its workflow was terminated).
type stragglerBehindBacklog struct {
	tc        *countingTemporal
	engine    *engine.Engine
	logs      *observer.ObservedLogs
	open      int // open jobs, the stranded one included
	straggler string
}

func newStragglerBehindBacklog(t *testing.T, db *gorm.DB) *stragglerBehindBacklog {
	t.Helper()
	tn := newSupportTenant(t, db, 10)
	tc := &countingTemporal{describingTemporal: &describingTemporal{recordingTemporal: &recordingTemporal{}}}
	core, logs := observer.New(zap.WarnLevel)
	s := engine.New(engine.Config{Store: models.NewStore(db), Temporal: tc, TaskQueue: "support-test", Log: zap.New(core),
		JobOptions: supportJobOptions, TemporalUI: supportUI})

	big, queued := submitOrder(t, s, tn, 0, "queued-0")
	template := loadJob(t, db, queued[0].ID)
	backlog := engine.MaxSupportListLimit + 200
	old := time.Now().UTC().Add(-2 * time.Hour)
	jobs := make([]models.Job, 0, backlog)
	for i := range backlog {
		j := *template
		j.ID, j.Position = models.NewID(), i
		j.CreatedAt, j.UpdatedAt = old, old.Add(time.Duration(i)*time.Millisecond)
		if i == 0 {
			j.ID = template.ID // the order's own job
			continue
		}
		jobs = append(jobs, j)
	}
	if err := db.CreateInBatches(jobs, 200).Error; err != nil {
		t.Fatal(err)
	}
	testdb.MustExec(t, db, "UPDATE jobs SET updated_at = ?, created_at = ? WHERE id = ?", old, old, template.ID)

	_, stranded := submitOrder(t, s, tn, 0, "stranded")
	if err := models.BeginAttempt(db, stranded[0].ID, 1, 1); err != nil {
		t.Fatal(err)
	}
	testdb.MustExec(t, db, "UPDATE jobs SET updated_at = ? WHERE id = ?", time.Now().UTC().Add(-time.Hour), stranded[0].ID)

	tc.statuses = map[string]enumspb.WorkflowExecutionStatus{
		workflows.OrderWorkflowID(big.ID):          enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		workflows.JobWorkflowID(stranded[0].ID, 1): enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
	}
	return &stragglerBehindBacklog{tc: tc, engine: s, logs: logs, open: backlog + 1, straggler: stranded[0].ID}
}

// The worker's sweep reports a stranded job whatever the backlog of healthy open jobs before it:
// each sweep looks at one page of them, the page after the previous sweep's, so the stranded job
// is reported within one pass over the backlog. Before, every sweep looked at the same oldest
// 1,000 open jobs, and a job behind them was never reported.
func TestStragglerSweepReportsAJobBehindABacklog(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newStragglerBehindBacklog(t, db)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.engine.Support.ReportStragglers(ctx, time.Millisecond, 0)
		}()
		reported := func() bool {
			for _, e := range f.logs.FilterMessageSnippet("stranded job").All() {
				if e.ContextMap()["job_id"] == f.straggler {
					return true
				}
			}
			return false
		}
		// Three passes' worth of jobs looked at, unless the straggler was reported before: a sweep
		// that looks at every open job has met it twice by then.
		deadline := time.Now().Add(3 * time.Minute)
		for !reported() && f.tc.jobDescribes.Load() < int64(3*f.open) {
			if time.Now().After(deadline) {
				t.Fatalf("the sweep looked at %d jobs in 3 minutes", f.tc.jobDescribes.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
		if !reported() {
			t.Fatalf("the sweeps looked at %d jobs (%d open) and never reported the stranded job %s", f.tc.jobDescribes.Load(), f.open, f.straggler)
		}
		if n := f.logs.FilterMessage("straggler sweep").Len(); n != 0 {
			t.Fatalf("%d sweeps failed: %v", n, f.logs.FilterMessage("straggler sweep").All())
		}
	})
}

// FindStragglersAfter pages through every open job once, in (updated_at, id) order, each page at
// most limit jobs: the stranded job behind the backlog is on the last page, and Next is unset
// there.
func TestFindStragglersPagesThroughTheBacklog(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		f := newStragglerBehindBacklog(t, db)
		ctx := context.Background()
		first, err := f.engine.Support.FindStragglers(ctx, 0, engine.MaxSupportListLimit)
		if err != nil {
			t.Fatal(err)
		}
		if first.Count != 0 || first.Checked != engine.MaxSupportListLimit || first.Next == nil {
			t.Fatalf("first page: count %d, checked %d, next %v; want 0, %d and a cursor", first.Count, first.Checked, first.Next, engine.MaxSupportListLimit)
		}
		var found []string
		checked, pages := first.Checked, 1
		for after := first.Next; after != nil; pages++ {
			// The cursor goes through its text form, as `admin jobs stragglers --after` takes it.
			cur, err := engine.ParseStragglerCursor(after.String())
			if err != nil || !cur.UpdatedAt.Equal(after.UpdatedAt) || cur.JobID != after.JobID {
				t.Fatalf("cursor %s reads back as %+v, %v", after, cur, err)
			}
			page, err := f.engine.Support.FindStragglersAfter(ctx, 0, cur, 300)
			if err != nil {
				t.Fatal(err)
			}
			if page.Checked > 300 {
				t.Fatalf("page %d looked at %d jobs, limit 300", pages, page.Checked)
			}
			for _, s := range page.Jobs {
				found = append(found, s.JobID)
			}
			checked += page.Checked
			after = page.Next
		}
		if len(found) != 1 || found[0] != f.straggler {
			t.Fatalf("stragglers found %v, want only %s", found, f.straggler)
		}
		if checked != f.open {
			t.Fatalf("the pages looked at %d jobs, want each of the %d open jobs once", checked, f.open)
		}
		if want := int64(f.open); f.tc.jobDescribes.Load() != want {
			t.Fatalf("%d job workflows described, want %d: one per open job", f.tc.jobDescribes.Load(), want)
		}
		for _, bad := range []string{"", "yesterday/x", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z/"} {
			if _, err := engine.ParseStragglerCursor(bad); err == nil {
				t.Errorf("cursor %q accepted", bad)
			}
		}
	})
}
