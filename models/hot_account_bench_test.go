package models_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// The hot-row question of issue 28 (docs/benchmarks.md, "One account's row"; docs/scaling.md):
// every reservation updates its account's row (and, for a plugin session, its installation's), so
// the orders of one account are written one after the other, each holding the row from its
// statement to its commit. These benchmarks place 1-job plugin orders through Store.PlaceOrder
// (the one statement an accepted session sends) with 1, 8 and 32 concurrent clients, all on one
// account and spread over hotAccounts accounts, and report orders/s and the p50 and p99 latency of
// a placement. A job's settlement (Store.CompleteJob: the job, its output, the consume entry of
// the ledger and the account's reserved credits, in one transaction) takes the account's row once
// more per job: BenchmarkOneAccountSettlements and BenchmarkSpreadAccountsSettlements complete
// begun 1-job orders the same way and report jobs/s. In the worker a settlement is FinishJob's
// transaction, which records the job's events after it (the outputs and the order read, both
// events inserted, the endpoints read): BenchmarkOneAccountFinishes and
// BenchmarkSpreadAccountsFinishes complete jobs in that shape. Run them with a fixed count, e.g.
//
//	go test ./models/ -run '^$' -bench 'OneAccount|SpreadAccounts' -benchtime 2000x -count 5

// hotAccounts is the number of accounts the spread benchmarks place their orders over.
const hotAccounts = 32

// benchClients are the concurrent clients of each sub-benchmark.
var benchClients = []int{1, 8, 32}

// BenchmarkOneAccount: every order reserves on the same account and installation.
func BenchmarkOneAccount(b *testing.B) {
	benchmarkPlacements(b, 1)
}

// BenchmarkSpreadAccounts: client i places its orders on account i mod hotAccounts, so no two of
// 32 clients share a row: what the database does without the hot row.
func BenchmarkSpreadAccounts(b *testing.B) {
	benchmarkPlacements(b, hotAccounts)
}

// tenant is an account and its installation, with credits for every order a benchmark places.
type tenant struct{ accountID, installationID string }

// order is a new 1-job plugin order of the tenant, as a session of one image.
func (tn tenant) order() (*models.Order, []models.Job) {
	order, jobs := orderOf(tn.accountID, 1, 4, time.Now())
	order.API = models.APIPlugin
	order.InstallationID = &tn.installationID
	jobs[0].InstallationID = &tn.installationID
	return order, jobs
}

func benchmarkPlacements(b *testing.B, accounts int) {
	db, store, tenants := hotTenants(b, accounts)
	for _, clients := range benchClients {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			placeConcurrently(b, store, tenants, clients)
		})
	}
	for _, tn := range tenants {
		checkLedger(b, db, tn.accountID)
	}
	logStorage(b, db)
}

// BenchmarkOneAccountSettlements: every job completed is of the same account.
func BenchmarkOneAccountSettlements(b *testing.B) {
	benchmarkSettlements(b, 1)
}

// BenchmarkSpreadAccountsSettlements: client i completes jobs of account i mod hotAccounts.
func BenchmarkSpreadAccountsSettlements(b *testing.B) {
	benchmarkSettlements(b, hotAccounts)
}

// BenchmarkOneAccountFinishes: every job completed, in FinishJob's shape, is of the same account.
func BenchmarkOneAccountFinishes(b *testing.B) {
	benchmarkSettlementsBy(b, 1, finishInWorkerShape)
}

// BenchmarkSpreadAccountsFinishes: client i completes jobs of account i mod hotAccounts in
// FinishJob's shape.
func BenchmarkSpreadAccountsFinishes(b *testing.B) {
	benchmarkSettlementsBy(b, hotAccounts, finishInWorkerShape)
}

func benchmarkSettlements(b *testing.B, accounts int) {
	benchmarkSettlementsBy(b, accounts, completeAlone)
}

// completion completes a begun job run with its outputs, reporting whether this call completed it.
type completion func(ctx context.Context, store *models.Store, j *models.Job, outputs []models.Asset) (bool, error)

// completeAlone is Store.CompleteJob in its own transaction.
func completeAlone(ctx context.Context, store *models.Store, j *models.Job, outputs []models.Asset) (bool, error) {
	_, completed, err := store.CompleteJob(ctx, j.ID, j.Run, outputs)
	return completed, err
}

// finishInWorkerShape is what activities.FinishJob sends for a completed plugin job, in one
// transaction: CompleteJob in a savepoint, then, in another savepoint, the job's outputs read (the
// job.completed payload), its order read (has it ended?) and job.completed and order.completed
// recorded (one insert of both, one read of the scope's endpoints).
func finishInWorkerShape(ctx context.Context, store *models.Store, j *models.Job, outputs []models.Asset) (bool, error) {
	completed := false
	err := store.Tx(ctx, func(tx *models.Store) error {
		job, ok, err := tx.CompleteJob(ctx, j.ID, j.Run, outputs)
		if err != nil || !ok {
			return err
		}
		completed = true
		return tx.Tx(ctx, func(sp *models.Store) error {
			if _, err := sp.JobOutputs(ctx, job.ID); err != nil {
				return err
			}
			order, err := sp.GetOrder(ctx, job.OrderID)
			if err != nil {
				return err
			}
			at := time.Now().UTC()
			events := []*models.WebhookEvent{
				{ID: models.WebhookDeliveryID(job.ID, job.Run, "job.completed"), AccountID: job.AccountID,
					InstallationID: job.InstallationID, Type: "job.completed", Payload: models.JSON(`{"type":"job.completed"}`),
					OrderID: &job.OrderID, JobID: &job.ID, CreatedAt: at},
				{ID: models.EventID(order.ID, "order.completed"), AccountID: order.AccountID,
					InstallationID: order.InstallationID, Type: "order.completed", Payload: models.JSON(`{"type":"order.completed"}`),
					OrderID: &order.ID, CreatedAt: at},
			}
			_, err = sp.RecordEvents(ctx, events, models.EventDeliveries{Run: job.Run})
			return err
		})
	})
	return completed, err
}

func benchmarkSettlementsBy(b *testing.B, accounts int, complete completion) {
	db, store, tenants := hotTenants(b, accounts)
	for _, clients := range benchClients {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			completeConcurrently(b, store, tenants, clients, complete)
		})
	}
	for _, tn := range tenants {
		checkLedger(b, db, tn.accountID)
	}
}

// hotTenants opens a migrated PostgreSQL database with a pool of a connection per client and
// creates accounts tenants, each an account with credits for every order a benchmark places and
// an installation.
func hotTenants(b *testing.B, accounts int) (*gorm.DB, *models.Store, []tenant) {
	db := testdb.Open(b, testdb.MigratedPostgresURL(b))
	sqlDB, err := db.DB()
	if err != nil {
		b.Fatal(err)
	}
	// One connection per client, as an API process has when its pool is at least as large as its
	// concurrent sessions (DATABASE_MAX_OPEN_CONNS).
	sqlDB.SetMaxOpenConns(slices.Max(benchClients))
	sqlDB.SetMaxIdleConns(slices.Max(benchClients))
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	tenants := make([]tenant, accounts)
	for i := range tenants {
		acc, err := models.CreateAccount(db, fmt.Sprintf("merchant-%d", i), 1<<40)
		if err != nil {
			b.Fatal(err)
		}
		inst, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID,
			Name: "shop", RateLimitPerMin: 100000}, "whsec_x")
		if err != nil {
			b.Fatal(err)
		}
		tenants[i] = tenant{acc.ID, inst.Installation.ID}
	}
	return db, models.NewStore(db), tenants
}

// storedTables are the tables an accepted order writes rows to.
var storedTables = []string{"orders", "jobs", "credit_ledger", "order_events", "pending_alerts"}

// logStorage logs, per table an order writes, the rows per order and the bytes per order the
// table and its indexes hold (PostgreSQL's own sizes, after a VACUUM so the counts are current):
// what an accepted 1-job order leaves on disk (docs/scaling.md).
func logStorage(b *testing.B, db *gorm.DB) {
	var orders int64
	if err := db.Model(&models.Order{}).Count(&orders).Error; err != nil || orders == 0 {
		b.Fatalf("orders placed: %d, %v", orders, err)
	}
	if err := db.Exec("VACUUM ANALYZE").Error; err != nil {
		b.Fatal(err)
	}
	for _, table := range storedTables {
		var row struct{ Rows, Heap, Indexes int64 }
		if err := db.Raw("SELECT (SELECT count(*) FROM "+table+") AS rows, pg_table_size(?) AS heap, pg_indexes_size(?) AS indexes",
			table, table).Scan(&row).Error; err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %.2f rows, %.0f bytes of table and %.0f of indexes per order (%d orders)", table,
			float64(row.Rows)/float64(orders), float64(row.Heap)/float64(orders), float64(row.Indexes)/float64(orders), orders)
	}
}

// placeConcurrently places b.N 1-job orders from clients goroutines, client i on tenant i mod
// len(tenants), and reports orders/s and the p50 and p99 latency of a placement in ms.
func placeConcurrently(b *testing.B, store *models.Store, tenants []tenant, clients int) {
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		tn := tenants[c%len(tenants)]
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				order, jobs := tn.order()
				began := time.Now()
				if err := store.PlaceOrder(b.Context(), order, jobs, nil); err != nil {
					errs <- err
					return
				}
				latencies[i] = time.Since(began)
			}
		})
	}
	wg.Wait()
	report(b, start, errs, latencies, "orders/s")
}

// completeConcurrently places and begins b.N 1-job orders, client i's on tenant i mod
// len(tenants), then, timed, completes them with complete from clients goroutines, each job with
// one output, and reports jobs/s and the p50 and p99 latency of a completion in ms.
func completeConcurrently(b *testing.B, store *models.Store, tenants []tenant, clients int, complete completion) {
	ctx := b.Context()
	jobsOf := make([][]models.Job, clients)
	for i := range b.N {
		c := i % clients
		tn := tenants[c%len(tenants)]
		order, jobs := tn.order()
		if err := store.PlaceOrder(ctx, order, jobs, nil); err != nil {
			b.Fatal(err)
		}
		if err := store.BeginAttempt(ctx, jobs[0].ID, 1, 1); err != nil {
			b.Fatal(err)
		}
		jobsOf[c] = append(jobsOf[c], jobs[0])
	}
	latencies := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, len(jobsOf[c]))
			for _, j := range jobsOf[c] {
				now := time.Now().UTC()
				output := models.Asset{ID: models.OutputAssetID(j.ID, j.Run, 0), AccountID: j.AccountID,
					InstallationID: j.InstallationID, Kind: models.AssetKindOutput, Status: status.AssetReady,
					ContentType: "image/png", BlobKey: models.OutputBlobKey(&j, 0, ".png"), JobID: &j.ID,
					CreatedAt: now, UpdatedAt: now}
				began := time.Now()
				completed, err := complete(ctx, store, &j, []models.Asset{output})
				if err == nil && !completed {
					err = fmt.Errorf("job %s was not completed", j.ID)
				}
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(began))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	report(b, start, errs, latencies, "jobs/s")
}

// report ends a benchmark of clients that have all returned: it fails on the first error they
// sent, else reports b.N over the time since start in unit and the p50 and p99 of latencies in ms.
func report(b *testing.B, start time.Time, errs chan error, latencies []time.Duration, unit string) {
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[(len(latencies)*99)/100]), "p99-ms")
	b.ReportMetric(0, "ns/op") // the rate says it; ns/op of concurrent clients misleads
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// checkLedger fails when the account's balance and reservations disagree with its ledger: the
// concurrent reservations must have lost no update.
func checkLedger(b *testing.B, db *gorm.DB, accountID string) {
	acc, err := models.GetAccount(db, accountID)
	if err != nil {
		b.Fatal(err)
	}
	balance, reserved, err := models.LedgerSums(db, accountID)
	if err != nil {
		b.Fatal(err)
	}
	if balance != acc.CreditBalance || reserved != acc.CreditsReserved {
		b.Fatalf("account %s: balance/reserved = %d/%d, ledger sums = %d/%d", accountID, acc.CreditBalance, acc.CreditsReserved, balance, reserved)
	}
}
