package models_test

import (
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// The straggler sweep's page (StaleOpenJobs) walks the partial index jobs_open_updated in
// (updated_at, id) order from its cursor, on both databases: no sort of the open jobs, and no read
// of the ended ones, however many there are. A page is every open job behind the cursor, in order.
func TestStaleOpenJobsWalksTheOpenJobsIndex(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, err := models.CreateAccount(db, "sweep", 0)
		if err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
		order, jobs := orderOf(acc.ID, 6000, 0, base)
		openStatuses := []string{status.JobPending, status.JobInProgress, status.JobRetryPending}
		ended := []string{status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired}
		for i := range jobs {
			jobs[i].UpdatedAt = base.Add(time.Duration(i%1500) * time.Second) // ties on updated_at: id orders them
			jobs[i].Status = ended[i%len(ended)]
			if i%6 == 0 {
				jobs[i].Status = openStatuses[i%len(openStatuses)]
			}
		}
		if err := db.Create(order).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.CreateInBatches(jobs, 500).Error; err != nil {
			t.Fatal(err)
		}
		testdb.MustExec(t, db, "ANALYZE")

		var open []models.Job
		if err := db.Where("status IN ?", openStatuses).Order("updated_at, id").Find(&open).Error; err != nil {
			t.Fatal(err)
		}
		cutoff := base.Add(20 * time.Minute)
		cur := &models.UpdatedJobCursor{UpdatedAt: open[200].UpdatedAt, ID: open[200].ID}
		var want []string
		for _, j := range open[201:] {
			if !j.UpdatedAt.After(cutoff) && len(want) < 100 {
				want = append(want, j.ID)
			}
		}

		store := models.NewStore(db)
		stop := testdb.RecordStatements(db)
		page, err := store.StaleOpenJobs(t.Context(), cutoff, cur, nil, 100)
		statements := stop()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range page {
			got = append(got, j.ID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("page behind %+v:\n got %v\nwant %v", cur, got, want)
		}
		if len(statements) != 1 {
			t.Fatalf("statements: %v", statements)
		}

		explain := "EXPLAIN "
		if db.Dialector.Name() == "sqlite" {
			explain = "EXPLAIN QUERY PLAN "
		}
		args := []any{cutoff, cur.UpdatedAt, cur.ID}
		if strings.Contains(statements[0], "LIMIT ?") || strings.Contains(statements[0], "LIMIT $4") {
			args = append(args, 100)
		}
		var plan []map[string]any
		if err := db.Raw(explain+statements[0], args...).Scan(&plan).Error; err != nil {
			t.Fatalf("%s%s: %v", explain, statements[0], err)
		}
		var lines []string
		for _, row := range plan {
			for k, v := range row {
				if k == "QUERY PLAN" || k == "detail" {
					lines = append(lines, strings.TrimSpace(toString(v)))
				}
			}
		}
		text := strings.Join(lines, "\n")
		if !strings.Contains(text, "jobs_open_updated") || strings.Contains(text, "Sort") || strings.Contains(text, "TEMP B-TREE") {
			t.Fatalf("the sweep's page does not walk jobs_open_updated in order:\n%s\n%s", statements[0], text)
		}
	})
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
