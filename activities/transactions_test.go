package activities_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/activities"
	"github.com/shotflow/shotflow/activities/contract"
	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/testsupport/testimage"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// workerTransactionsPerJob is what a successful one-attempt job costs the database on the worker
// (issue 15's budget is 3): BeginAttempt's UPDATE, then FinishJob's transaction; Generate only
// reads. docs/benchmarks.md keeps the table.
const workerTransactionsPerJob = 2

// finishJobStatements is what FinishJob's transaction sends for a completed job with one output
// (of an account with no webhook endpoint): BEGIN, CompleteJob's SAVEPOINT, the job's UPDATE
// (returning it), the output's INSERT, the ledger entry's INSERT, the order's UPDATE, the
// webhook's SAVEPOINT, the read of the outputs (the record's thumbnail), the read of the order
// (has it ended?), one INSERT of both events (record.done and order.completed), one read of the
// scope's endpoints, the account's UPDATE, COMMIT. It sent 14 when it read the job three times and
// updated the order three times (issue 23, item 18), then 9 before events were recorded for the
// events API whether or not an endpoint subscribes (issue 24). The account's UPDATE came sixth
// until the account's row was held for the least time (docs/scaling.md, "One account's row").
const finishJobStatements = 13

// The activities of a successful job, run one after the other as its JobWorkflow runs them, write
// in workerTransactionsPerJob transactions on PostgreSQL: a transaction is a BEGIN … COMMIT block
// or a write statement alone.
func TestSuccessfulJobCostsTheWorkerTwoTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	blobs := fileBlobs(t)
	catalog := loadCatalog(t)
	acts := &activities.Activities{Store: models.NewStore(db), Blobs: blobs, Log: zap.NewNop(), LongEdge: 64,
		Generator: providers.MustNewRegistry(catalog, map[string]providers.Provider{"local": &capture{}})}
	acc, err := models.CreateAccount(db, "Team", 10)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	input := models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindUpload, Status: status.AssetReady,
		ContentType: "image/png", BlobKey: "in/" + models.NewID(), CreatedAt: now, UpdatedAt: now}
	if err := blobs.Put(ctx, input.BlobKey, testimage.SolidPNG(t, 8, 8, testimage.White), "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&input).Error; err != nil {
		t.Fatal(err)
	}
	order := &models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.PhotoShoot,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: now, UpdatedAt: now}
	job := models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, JobType: jobtype.PhotoShoot,
		InputAssetID: &input.ID, AIModel: "local/studio-v1", AspectRatio: "1:1", CreditCost: 1, Run: 1,
		Status: status.JobPending, Voting: models.VotingPending, CreatedAt: now, UpdatedAt: now}
	if err := models.PlaceOrder(db, order, []models.Job{job}, nil); err != nil {
		t.Fatal(err)
	}

	attempt := contract.AttemptInput{JobID: job.ID, Run: 1, Attempt: 1}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts.Generate)
	stop := testdb.RecordStatements(db)
	if err := acts.BeginAttempt(ctx, attempt); err != nil {
		stop()
		t.Fatal(err)
	}
	generated, err := env.ExecuteActivity(acts.Generate, attempt)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	var result contract.GenerateResult
	if err := generated.Get(&result); err != nil {
		stop()
		t.Fatal(err)
	}
	statements := stop()
	stop = testdb.RecordStatements(db)
	_, err = acts.FinishJob(ctx, contract.FinishJobInput{Complete: &contract.CompleteInput{JobID: job.ID, Run: 1, Outputs: result.Outputs}})
	finish := stop()
	if err != nil {
		t.Fatal(err)
	}
	statements = append(statements, finish...)
	if got := writeTransactions(statements); got != workerTransactionsPerJob {
		t.Fatalf("%d write transactions, want %d:\n%s", got, workerTransactionsPerJob, strings.Join(statements, "\n"))
	}
	// FinishJob's transaction reads the job once, as its UPDATE returns it, and updates the order
	// once (issue 23, item 18; docs/benchmarks.md).
	if got := len(finish); got != finishJobStatements {
		t.Fatalf("FinishJob sent %d statements, want %d:\n%s", got, finishJobStatements, strings.Join(finish, "\n"))
	}
	for _, s := range finish {
		if strings.HasPrefix(s, `SELECT * FROM "jobs"`) {
			t.Fatalf("FinishJob read the job again:\n%s", strings.Join(finish, "\n"))
		}
	}
	// The account's row, which every reservation and settlement of the account waits for, is taken
	// by the last statement before the COMMIT, and by no other.
	for i, s := range finish {
		if strings.HasPrefix(s, `UPDATE "accounts"`) != (i == len(finish)-2) {
			t.Fatalf("FinishJob's statement %d of %d updates the account or not, want the account's UPDATE just before COMMIT:\n%s",
				i+1, len(finish), strings.Join(finish, "\n"))
		}
	}
	done, err := models.GetJob(db, job.ID)
	if err != nil || done.Status != status.JobCompleted {
		t.Fatalf("job = %+v (%v)", done, err)
	}
}

// writeTransactions counts the transactions among statements that write: each BEGIN … COMMIT (or
// ROLLBACK) block, and each INSERT, UPDATE, DELETE or WITH outside one.
func writeTransactions(statements []string) int {
	n, inBlock := 0, false
	for _, s := range statements {
		switch word := strings.ToUpper(strings.Fields(s + " x")[0]); {
		case word == "BEGIN":
			inBlock = true
			n++
		case word == "COMMIT" || word == "ROLLBACK":
			inBlock = false
		case !inBlock && (word == "INSERT" || word == "UPDATE" || word == "DELETE" || word == "WITH"):
			n++
		}
	}
	return n
}
