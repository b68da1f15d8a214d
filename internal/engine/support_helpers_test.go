package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/workflows"
)

// workflowStart is one workflow start a recordingTemporal received.
type workflowStart struct {
	opts     client.StartWorkflowOptions
	workflow any
	args     []any
}

// recordingTemporal records workflow starts and answers them with err (nil: started).
type recordingTemporal struct {
	client.Client // nil: any other call panics, so the tests notice it
	mu            sync.Mutex
	starts        []workflowStart
	err           error
}

func (f *recordingTemporal) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, workflowStart{opts: opts, workflow: wf, args: args})
	return nil, f.err
}

// startsOf returns the recorded starts of the workflow ID.
func (f *recordingTemporal) startsOf(id string) []workflowStart {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []workflowStart
	for _, s := range f.starts {
		if s.opts.ID == id {
			out = append(out, s)
		}
	}
	return out
}

func (f *recordingTemporal) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

var supportJobOptions = workflows.JobOptions{InputWait: 7 * time.Minute}

// supportUI is where the support engines of the tests link workflows.
var supportUI = engine.TemporalUI{BaseURL: "http://localhost:8233/", Namespace: "default"}

// newSupportEngine is an engine over db and tc that links workflows in supportUI.
func newSupportEngine(db *gorm.DB, tc client.Client) *engine.Engine {
	return engine.New(engine.Config{Store: models.NewStore(db), Temporal: tc, TaskQueue: "support-test", Log: zap.NewNop(), JobOptions: supportJobOptions,
		TemporalUI: supportUI})
}

// supportTenant is an account with one installation.
type supportTenant struct {
	accountID      string
	installationID string
	test           bool // a test twin: its orders are test mode's (newTestSupportTenant)
}

func newSupportTenant(t *testing.T, db *gorm.DB, credits int64) supportTenant {
	t.Helper()
	acc, err := models.CreateAccount(db, "support test", credits)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	inst := models.Installation{ID: models.NewID(), AccountID: acc.ID, Name: "shop", CallbackURL: "https://shop.example/hooks",
		WebhookSecretEnc: "sealed", RateLimitPerMin: 60, Status: "active", CreatedAt: now, UpdatedAt: now}
	if err := db.Create(&inst).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&models.WebhookEndpoint{ID: models.NewID(), AccountID: acc.ID, InstallationID: &inst.ID, URL: inst.CallbackURL,
		Events: models.StringList(models.CallbackEvents), Status: models.EndpointEnabled, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	return supportTenant{accountID: acc.ID, installationID: inst.ID}
}

// newTestSupportTenant is newSupportTenant made a test twin whose day began today with no job run:
// its orders are test orders, counted against the test quota.
func newTestSupportTenant(t *testing.T, db *gorm.DB, credits int64) supportTenant {
	t.Helper()
	tn := newSupportTenant(t, db, credits)
	if err := db.Model(&models.Account{}).Where("id = ?", tn.accountID).
		Updates(map[string]any{"test_mode": true, "test_day": models.TestDay(time.Now()), "test_jobs_today": 0}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Model(&models.Installation{}).Where("id = ?", tn.installationID).Update("test_mode", true).Error; err != nil {
		t.Fatal(err)
	}
	tn.test = true
	return tn
}

// submitOrder accepts an order of one job per product reference, each costing cost, through intake
// like the API does (the order's workflow start goes to the fake, and its mark is written).
func submitOrder(t *testing.T, s *engine.Engine, tn supportTenant, cost int64, refs ...string) (models.Order, []models.Job) {
	t.Helper()
	order := models.Order{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID, API: models.APIPlugin,
		JobType: jobtype.PhotoShoot, SessionConfig: models.JSON(`{}`), TestMode: tn.test}
	jobs := make([]models.Job, len(refs))
	for i, ref := range refs {
		jobs[i] = models.Job{ID: models.NewID(), AccountID: tn.accountID, InstallationID: &tn.installationID,
			JobType: jobtype.PhotoShoot, Position: i, ProductRef: ref, ProductLabel: "Label " + ref,
			AIModel: "sim/content-policy", AspectRatio: "1:1", CreditCost: cost, Status: status.JobPending, Voting: models.VotingPending,
			TestMode: tn.test}
	}
	if err := s.Orders.Submit(context.Background(), &order, jobs); err != nil {
		t.Fatal(err)
	}
	// The start is marked in a batch: write it now, so the test sees the order as the API left it.
	s.Outbox.FlushStartMarks()
	return order, jobs
}

// failRun ends a job run failed with category after one attempt, as JobWorkflow does.
func failRun(t *testing.T, db *gorm.DB, jobID string, run int, c errorcat.Category) {
	t.Helper()
	if err := models.BeginAttempt(db, jobID, run, 1); err != nil {
		t.Fatalf("BeginAttempt %s run %d: %v", jobID, run, err)
	}
	if ok, err := models.EndJob(db, jobID, run, status.JobFailed, string(c), c.Hint(), "raw provider message for "+jobID); err != nil || !ok {
		t.Fatalf("EndJob %s run %d: %v, %v", jobID, run, ok, err)
	}
}

func expireRun(t *testing.T, db *gorm.DB, jobID string) {
	t.Helper()
	if ok, err := models.EndJob(db, jobID, 1, status.JobExpired, "", "", ""); err != nil || !ok {
		t.Fatalf("expire %s: %v, %v", jobID, ok, err)
	}
}

func completeRun(t *testing.T, db *gorm.DB, jobID string, run int) {
	t.Helper()
	if _, err := models.CompleteJob(db, jobID, run, nil); err != nil {
		t.Fatalf("CompleteJob %s run %d: %v", jobID, run, err)
	}
}

func loadJob(t *testing.T, db *gorm.DB, id string) *models.Job {
	t.Helper()
	j, err := models.GetJob(db, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func loadOrder(t *testing.T, db *gorm.DB, id string) models.Order {
	t.Helper()
	var o models.Order
	if err := db.Take(&o, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	return o
}

// assertAccountCredits checks that the account's balance and reserved amount are the given ones and
// equal the sums of its ledger.
func assertAccountCredits(t *testing.T, db *gorm.DB, accountID string, balance, reserved int64) {
	t.Helper()
	acc, err := models.GetAccount(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	b, r, err := models.LedgerSums(db, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if acc.CreditBalance != balance || acc.CreditsReserved != reserved || b != balance || r != reserved {
		t.Fatalf("account balance/reserved %d/%d, ledger %d/%d; want %d/%d", acc.CreditBalance, acc.CreditsReserved, b, r, balance, reserved)
	}
}

// jobLedger lists a job's ledger movements as "kind/run/balance_delta/reserved_delta", oldest first.
func jobLedger(t *testing.T, db *gorm.DB, jobID string) []string {
	t.Helper()
	var rows []models.LedgerEntry
	if err := db.Where("job_id = ?", jobID).Order("run, created_at, kind DESC").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s/%d/%d/%d", r.Kind, r.Run, r.BalanceDelta, r.ReservedDelta)
	}
	return out
}

// accountSnapshot is every row a retry could touch, to show that a refused retry changed nothing.
func accountSnapshot(t *testing.T, db *gorm.DB, accountID string) string {
	t.Helper()
	var (
		acc     models.Account
		orders  []models.Order
		jobs    []models.Job
		ledger  []models.LedgerEntry
		retries []models.JobRetry
	)
	for _, q := range []*gorm.DB{
		db.Take(&acc, "id = ?", accountID),
		db.Where("account_id = ?", accountID).Order("id").Find(&orders),
		db.Where("account_id = ?", accountID).Order("id").Find(&jobs),
		db.Where("account_id = ?", accountID).Order("id").Find(&ledger),
		db.Where("account_id = ?", accountID).Order("id").Find(&retries),
	} {
		if q.Error != nil {
			t.Fatal(q.Error)
		}
	}
	b, err := json.Marshal([]any{acc, orders, jobs, ledger, retries})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
