package models_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// recordListRows is how many rows of each list recordListFixture gives an account.
const recordListRows = 300

// recordListFixture stores, for an account, a few hundred records of every external record list:
// product photos (some deleted), fashion models and sceneries of every status and voting,
// packshots (registered, made by a job, archived, deleted) and packshot jobs without theirs,
// photo-shoot images, videos and reels. Three records share each second, so ids break ties.
// want counts what each list (by the names of recordListPlans) shows the account.
type recordListFixture struct {
	t       *testing.T
	db      *gorm.DB
	account string
	photo   string // the product photo of the "shoots of a photo" list
	base    time.Time
	want    map[string]int
}

func (f *recordListFixture) at(i int) time.Time {
	return f.base.Add(time.Duration(i/3) * time.Second)
}

func (f *recordListFixture) create(rows any) {
	f.t.Helper()
	if err := f.db.CreateInBatches(rows, 200).Error; err != nil {
		f.t.Fatalf("create %T: %v", rows, err)
	}
}

func seedRecordLists(t *testing.T, db *gorm.DB, name string, base time.Time) *recordListFixture {
	t.Helper()
	acc, err := models.CreateAccount(db, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := &recordListFixture{t: t, db: db, account: acc.ID, base: base, want: map[string]int{}}
	product := &models.Product{ID: models.NewID(), AccountID: acc.ID, ExternalRef: "mug-" + name, DisplayName: "Mug",
		CreatedAt: base, UpdatedAt: base}
	asset := &models.Asset{ID: models.NewID(), AccountID: acc.ID, Kind: models.AssetKindOutput, Status: status.AssetReady,
		ContentType: "image/png", BlobKey: "outputs/" + models.NewID(), CreatedAt: base, UpdatedAt: base}
	order := &models.Order{ID: models.NewID(), AccountID: acc.ID, API: models.APIExternal, JobType: jobtype.PhotoShoot,
		SessionConfig: models.JSON(`{}`), Status: status.OrderInProgress, JobsTotal: 1, CreatedAt: base, UpdatedAt: base}
	for _, row := range []any{product, asset, order} {
		if err := db.Create(row).Error; err != nil {
			t.Fatal(err)
		}
	}

	photos := make([]models.ProductImage, recordListRows)
	for i := range photos {
		photos[i] = models.ProductImage{ID: models.NewID(), AccountID: acc.ID, ProductID: product.ID, AssetID: asset.ID,
			ExternalRef: models.NewID(), CreatedAt: f.at(i)}
		if i%10 == 0 {
			deleted := f.at(i)
			photos[i].DeletedAt = &deleted
		} else {
			f.want["photos"]++
		}
	}
	f.create(photos)
	// The photo GET /image-picker is filtered by below: the source of a few of the packshots.
	photo := photos[1].ID
	f.photo = photo
	var photoPackshots, otherPackshots []string

	approved := models.RefVotingApproved
	for _, kind := range []models.ReferenceKind{models.KindFashionModel, models.KindScenery} {
		items := make([]models.ReferenceItem, recordListRows)
		statuses := []string{models.RefStatusDone, models.RefStatusInProgress, models.RefStatusFailed, models.RefStatusArchived}
		for i := range items {
			items[i] = models.ReferenceItem{ID: models.NewID(), AccountID: &acc.ID, Name: "Item", Status: statuses[i%4],
				CreatedAt: f.at(i), UpdatedAt: f.at(i)}
			if i%3 == 0 {
				items[i].Voting = &approved
			}
			if items[i].Status != models.RefStatusArchived {
				f.want[kind.Table()]++
				if items[i].Voting != nil {
					f.want[kind.Table()+" approved"]++
				}
			}
		}
		if err := db.Table(kind.Table()).CreateInBatches(items, 200).Error; err != nil {
			t.Fatal(err)
		}
	}

	job := func(jobType, st string, at time.Time) models.Job {
		return models.Job{ID: models.NewID(), OrderID: order.ID, AccountID: acc.ID, JobType: jobType, ProductRef: "mug",
			AIModel: "local/studio", AspectRatio: "1:1", CreditCost: 1, Run: 1, Status: st, Voting: models.VotingPending,
			CreatedAt: at, UpdatedAt: at}
	}
	var jobs []models.Job
	var packshots []models.Packshot
	for i := range recordListRows {
		at := f.at(i)
		p := models.Packshot{ID: models.NewID(), AccountID: acc.ID, ProductID: product.ID, AssetID: asset.ID,
			Voting: models.VotingPending, CreatedAt: at}
		if i%5 == 0 {
			p.Voting = models.VotingAccepted
		}
		switch i % 3 {
		case 0: // registered, every tenth from the photo, the others from another one
			if i%30 == 0 {
				p.SourceImageID = &photo
				photoPackshots = append(photoPackshots, p.ID)
			} else {
				p.SourceImageID = &photos[2].ID
				otherPackshots = append(otherPackshots, p.ID)
			}
		case 1: // made by a job: dated by the job, an hour before the packshot
			j := job(jobtype.Packshot, status.JobCompleted, at)
			j.ProductID, j.RecordID, p.JobID, p.CreatedAt = &product.ID, &p.ID, &j.ID, at.Add(time.Hour)
			jobs = append(jobs, j)
		case 2: // a packshot job still making its packshot
			j := job(jobtype.Packshot, status.JobInProgress, at)
			id := models.NewID()
			j.ProductID, j.RecordID = &product.ID, &id
			jobs = append(jobs, j)
			f.want["packshots"]++
			continue
		}
		switch {
		case i%7 == 0:
			p.ArchivedAt = &at
		case i%11 == 0:
			p.DeletedAt = &at
		default:
			f.want["packshots"]++
			if p.Voting == models.VotingAccepted {
				f.want["packshots approved"]++
			}
		}
		packshots = append(packshots, p)
	}
	for i := range recordListRows {
		j := job(jobtype.PhotoShoot, status.JobInProgress, f.at(i))
		if i%4 == 0 {
			j.Voting = models.VotingAccepted
			f.want["shoots approved"]++
		}
		switch i % 20 { // a few shoots of the photo's packshots, more of another photo's
		case 3, 13:
			j.PackshotID = &photoPackshots[i%len(photoPackshots)]
			f.want["shoots of a photo"]++
		case 5, 7, 9, 11:
			j.PackshotID = &otherPackshots[i%len(otherPackshots)]
		}
		jobs = append(jobs, j)
		f.want["shoots"]++
		kind := jobtype.Video
		if i%2 == 1 {
			kind = jobtype.Reel
		}
		jobs = append(jobs, job(kind, status.JobInProgress, f.at(i)))
		f.want["videos"]++
	}
	f.create(jobs)
	f.create(packshots)
	return f
}

// capturedQuery is a statement gorm sent, with its arguments.
type capturedQuery struct {
	sql  string
	vars []any
}

// captureQueries records every query and row statement db sends from now on (gorm's callbacks);
// the returned function gives those recorded since it was last called.
func captureQueries(t *testing.T, db *gorm.DB) func() []capturedQuery {
	t.Helper()
	var mu sync.Mutex
	var seen []capturedQuery
	record := func(tx *gorm.DB) {
		if tx.DryRun { // a subquery built into another statement
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, capturedQuery{sql: tx.Statement.SQL.String(), vars: slices.Clone(tx.Statement.Vars)})
	}
	if err := db.Callback().Query().After("gorm:query").Register("test:capture_query", record); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Row().After("gorm:row").Register("test:capture_row", record); err != nil {
		t.Fatal(err)
	}
	return func() []capturedQuery {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON); the actual counts are those of EXPLAIN ANALYZE.
type planNode struct {
	NodeType            string     `json:"Node Type"`
	IndexName           string     `json:"Index Name"`
	IndexCond           string     `json:"Index Cond"`
	ActualRows          float64    `json:"Actual Rows"`
	ActualLoops         float64    `json:"Actual Loops"`
	RowsRemovedByFilter float64    `json:"Rows Removed by Filter"`
	Plans               []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// explainWithoutSorting plans q on PostgreSQL with sequential scans and sorts priced out, so that
// the size of the tables does not decide: a plan that still sorts has no index in the list's order.
func explainWithoutSorting(t *testing.T, db *gorm.DB, q capturedQuery) (planNode, string) {
	t.Helper()
	return explainPricedOut(t, db, "FORMAT JSON", q)
}

// explainPricedOut is EXPLAIN (options) of q with sequential scans and sorts priced out; with
// ANALYZE among the options q runs, in a transaction rolled back.
func explainPricedOut(t *testing.T, db *gorm.DB, options string, q capturedQuery) (planNode, string) {
	t.Helper()
	return explainWith(t, db, []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_sort = off"}, options, q)
}

// explainWith is EXPLAIN (options) of q after the settings (SET LOCAL statements); with ANALYZE
// among the options q runs, in a transaction rolled back.
func explainWith(t *testing.T, db *gorm.DB, settings []string, options string, q capturedQuery) (planNode, string) {
	t.Helper()
	ctx := t.Context()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, set := range settings {
		if _, err := tx.ExecContext(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	var text string
	if err := tx.QueryRowContext(ctx, "EXPLAIN ("+options+") "+q.sql, q.vars...).Scan(&text); err != nil {
		t.Fatalf("EXPLAIN %s: %v", q.sql, err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(text), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN answered %s (%v)", text, err)
	}
	return plans[0].Plan, text
}

// listedRecord is a record of a page: its place in the list's order.
type listedRecord struct {
	id string
	at time.Time
}

func fromRecords(recs []models.Record, err error) ([]listedRecord, error) {
	out := make([]listedRecord, len(recs))
	for i, r := range recs {
		out[i] = listedRecord{r.ID, r.CreatedAt}
	}
	return out, err
}

// The external record lists walk an index in their own order, (created_at, id) descending under
// the account, on PostgreSQL: no page sorts the account's rows, however many it has, and a page
// after a cursor starts its index scan at the cursor (an Index Cond on the date) instead of
// reading and discarding the newer rows. GET /packshots merges its two ordered branches (the
// packshots, dated by record_created_at, and the packshot jobs without theirs) under the LIMIT.
// Each list's pages still hold every record once, in order.
func TestRecordListsWalkAnIndexInTheirOrder(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	base := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	mine := seedRecordLists(t, db, "mine", base)
	seedRecordLists(t, db, "theirs", base.Add(500*time.Millisecond)) // another account's, interleaved
	testdb.MustExec(t, db, "ANALYZE")
	store := models.NewStore(db)
	captured := captureQueries(t, db)
	acc := mine.account

	lists := []struct {
		name    string
		indexes []string // the indexes its plan walks
		merged  bool     // a Merge Append of ordered branches
		// sorts: the list orders the few rows of its filter (a photo's shoots) instead of walking
		// an index of the account in its order; it must then not walk the account's index.
		sorts bool
		page  func(ctx context.Context, page models.RecordPage) ([]listedRecord, error)
	}{
		{"photos", []string{"product_images_account_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			rows, err := store.ListAccountPhotos(ctx, acc, page)
			out := make([]listedRecord, len(rows))
			for i, r := range rows {
				out[i] = listedRecord{r.ID, r.CreatedAt}
			}
			return out, err
		}},
		{"fashion_models", []string{"fashion_models_account_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountReferenceItems(ctx, models.KindFashionModel, acc, false, page))
		}},
		{"fashion_models approved", []string{"fashion_models_account_approved_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountReferenceItems(ctx, models.KindFashionModel, acc, true, page))
		}},
		{"sceneries", []string{"sceneries_account_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountReferenceItems(ctx, models.KindScenery, acc, false, page))
		}},
		{"sceneries approved", []string{"sceneries_account_approved_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountReferenceItems(ctx, models.KindScenery, acc, true, page))
		}},
		{"packshots", []string{"packshots_account_page", "jobs_packshot_records_page"}, true, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountPackshots(ctx, acc, false, page))
		}},
		{"packshots approved", []string{"packshots_account_approved_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountPackshots(ctx, acc, true, page))
		}},
		{"shoots", []string{"jobs_account_type"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountShoots(ctx, acc, false, "", page))
		}},
		{"shoots approved", []string{"jobs_account_shoots_approved_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountShoots(ctx, acc, true, "", page))
		}},
		{"shoots of a photo", []string{"jobs_packshot_shoots"}, false, true, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountShoots(ctx, acc, false, mine.photo, page))
		}},
		{"videos", []string{"jobs_account_videos_page"}, false, false, func(ctx context.Context, page models.RecordPage) ([]listedRecord, error) {
			return fromRecords(store.ListAccountVideos(ctx, acc, page))
		}},
	}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			ctx := t.Context()
			const limit = 17
			var all []listedRecord
			var statements [][]capturedQuery
			after := ""
			for {
				captured()
				page, err := l.page(ctx, models.RecordPage{StartingAfter: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				statements = append(statements, captured())
				all = append(all, page...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].id
			}
			if len(all) != mine.want[l.name] {
				t.Errorf("the pages hold %d records, want %d", len(all), mine.want[l.name])
			}
			for i := 1; i < len(all); i++ {
				if cmp.Or(all[i-1].at.Compare(all[i].at), cmp.Compare(all[i-1].id, all[i].id)) <= 0 {
					t.Fatalf("record %d (%v %s) is not after record %d (%v %s)", i, all[i].at, all[i].id, i-1, all[i-1].at, all[i-1].id)
				}
			}
			if len(statements) < 2 {
				t.Fatalf("%d pages: the fixture is too small to page", len(statements))
			}
			for n, stmts := range [][]capturedQuery{statements[0], statements[1]} {
				var list *capturedQuery
				for i, s := range stmts {
					if strings.Contains(s.sql, "created_at DESC") {
						list = &stmts[i]
					}
				}
				if list == nil {
					t.Fatalf("page %d: no statement orders by created_at DESC: %v", n+1, stmts)
				}
				plan, text := explainWithoutSorting(t, db, *list)
				if l.sorts {
					plan, text = explainWith(t, db, []string{"SET LOCAL enable_seqscan = off"}, "FORMAT JSON", *list)
				}
				var problems []string
				scans := map[string][]planNode{}
				merged := false
				plan.walk(func(node planNode) {
					switch node.NodeType {
					case "Sort", "Incremental Sort":
						if !l.sorts {
							problems = append(problems, "it sorts")
						}
					case "Merge Append":
						merged = true
					case "Index Scan", "Index Only Scan":
						scans[node.IndexName] = append(scans[node.IndexName], node)
					}
				})
				for _, name := range l.indexes {
					if len(scans[name]) == 0 {
						problems = append(problems, "it does not scan "+name)
					}
					for _, s := range scans[name] {
						if n == 1 && !strings.Contains(s.IndexCond, "created_at") {
							problems = append(problems, fmt.Sprintf("the cursor is no Index Cond of %s (%q)", name, s.IndexCond))
						}
					}
				}
				if l.sorts && len(scans["jobs_account_type"]) > 0 {
					problems = append(problems, "it walks the account's shoots (jobs_account_type)")
				}
				if l.merged && !merged {
					problems = append(problems, "no Merge Append")
				}
				if len(problems) > 0 {
					t.Errorf("page %d: %s\n%s\n%v\n%s", n+1, strings.Join(problems, "; "), list.sql, list.vars, text)
				}
			}
		})
	}
}

// A packshot job that made its packshot is no longer a record of GET /packshots's jobs branch, and
// the index that branch walks (jobs_packshot_records_page) leaves it out (record_made_at, migration
// 0030): a page of an account whose packshot jobs made their packshots reads no more of that index
// than the jobs still without theirs, however many the account has. Before, the branch walked past
// every such job older than the cursor, one probe of packshots' primary key each, to find the jobs
// behind them. Here 300 packshot jobs complete through the worker's path (each makes its packshot
// under its record ID) after two that still run; every page lists all 302 records once.
func TestPackshotJobsThatMadeTheirPackshotsAreLeftOutOfTheJobsIndex(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	f := newCandidateFixture(t, db)
	testdb.MustExec(t, db, "UPDATE orders SET jobs_total = ? WHERE id = ?", recordListRows+2, f.order.ID)
	base := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	jobs := make([]models.Job, recordListRows+2)
	for i := range jobs {
		at := base.Add(time.Duration(i) * time.Second)
		recordID := models.NewID()
		jobs[i] = models.Job{ID: models.NewID(), OrderID: f.order.ID, AccountID: f.acc.ID, JobType: jobtype.Packshot,
			ProductID: &f.product.ID, ProductRef: "mug", RecordID: &recordID, AIModel: "local/studio-v1",
			AspectRatio: "1:1", Run: 1, Status: status.JobInProgress, Voting: models.VotingPending, CreatedAt: at, UpdatedAt: at}
	}
	if err := db.CreateInBatches(jobs, 200).Error; err != nil {
		t.Fatal(err)
	}
	store := models.NewStore(db)
	for _, j := range jobs[2:] { // the two oldest still run
		if _, _, err := store.CompleteJob(t.Context(), j.ID, j.Run, f.outputs(j, 1)); err != nil {
			t.Fatal(err)
		}
	}
	testdb.MustExec(t, db, "ANALYZE")
	captured := captureQueries(t, db)

	const limit = 17
	var listed int
	var running []string
	for after, n := "", 0; ; n++ {
		captured()
		page, err := store.ListAccountPackshots(t.Context(), f.acc.ID, false, models.RecordPage{StartingAfter: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		statements := captured()
		listed += len(page)
		for _, r := range page {
			if r.Status == models.RefStatusInProgress {
				running = append(running, r.ID)
			}
		}
		if n < 2 { // the first page, and one after a cursor
			var list *capturedQuery
			for i, s := range statements {
				if strings.Contains(s.sql, "created_at DESC") {
					list = &statements[i]
				}
			}
			if list == nil {
				t.Fatalf("page %d: no statement orders by created_at DESC", n+1)
			}
			plan, text := explainPricedOut(t, db, "ANALYZE, BUFFERS, FORMAT JSON", *list)
			scanned := false
			plan.walk(func(node planNode) {
				if node.IndexName != "jobs_packshot_records_page" {
					return
				}
				scanned = true
				if read := node.ActualRows*node.ActualLoops + node.RowsRemovedByFilter; read > 2 {
					t.Errorf("page %d read %v entries of jobs_packshot_records_page, want at most the 2 jobs without their packshot\n%s",
						n+1, read, text)
				}
			})
			if !scanned {
				t.Errorf("page %d does not scan jobs_packshot_records_page:\n%s", n+1, text)
			}
		}
		if len(page) < limit {
			break
		}
		after = page[len(page)-1].ID
	}
	if listed != recordListRows+2 || len(running) != 2 || running[0] != *jobs[1].RecordID || running[1] != *jobs[0].RecordID {
		t.Errorf("the pages list %d records, the running jobs %v; want %d, the two running jobs' records last",
			listed, running, recordListRows+2)
	}
}

// SQLite uses a partial index only for a query whose WHERE clause contains its terms: GET
// /packshots's two branches walk packshots_account_page and jobs_packshot_records_page there too,
// the jobs branch by its condition record_made_at IS NULL (migration 0030).
func TestPackshotRecordBranchesWalkTheirIndexesOnSQLite(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	f := newCandidateFixture(t, db)
	captured := captureQueries(t, db)
	if _, err := models.NewStore(db).ListAccountPackshots(t.Context(), f.acc.ID, false, models.RecordPage{Limit: 17}); err != nil {
		t.Fatal(err)
	}
	var plan []string
	for _, q := range captured() {
		if strings.Contains(q.sql, "created_at DESC") {
			plan = append(plan, sqlitePlan(t, db, q))
		}
	}
	text := strings.Join(plan, "\n")
	for _, index := range []string{"packshots_account_page", "jobs_packshot_records_page"} {
		if !strings.Contains(text, "USING INDEX "+index+" ") {
			t.Errorf("the list does not walk %s:\n%s", index, text)
		}
	}
}

// sqlitePlan is SQLite's EXPLAIN QUERY PLAN of q, a line per step.
func sqlitePlan(t *testing.T, db *gorm.DB, q capturedQuery) string {
	t.Helper()
	rows, err := db.Raw("EXPLAIN QUERY PLAN "+q.sql, q.vars...).Rows()
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// On SQLite too, a filtered record list walks the index of the records its filter keeps (migration
// 0031): its query writes the index's condition out, as SQLite uses a partial index only for a
// query whose WHERE clause contains its terms.
func TestFilteredRecordListsWalkTheirIndexesOnSQLite(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.SQLiteURL(t))
	f := seedRecordLists(t, db, "mine", time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC))
	store := models.NewStore(db)
	captured := captureQueries(t, db)
	page := models.RecordPage{Limit: 17}
	for _, l := range []struct {
		index string
		list  func(ctx context.Context) error
	}{
		{"fashion_models_account_approved_page", func(ctx context.Context) error {
			_, err := store.ListAccountReferenceItems(ctx, models.KindFashionModel, f.account, true, page)
			return err
		}},
		{"sceneries_account_approved_page", func(ctx context.Context) error {
			_, err := store.ListAccountReferenceItems(ctx, models.KindScenery, f.account, true, page)
			return err
		}},
		{"packshots_account_approved_page", func(ctx context.Context) error {
			_, err := store.ListAccountPackshots(ctx, f.account, true, page)
			return err
		}},
		{"jobs_account_shoots_approved_page", func(ctx context.Context) error {
			_, err := store.ListAccountShoots(ctx, f.account, true, "", page)
			return err
		}},
		{"jobs_packshot_shoots", func(ctx context.Context) error {
			_, err := store.ListAccountShoots(ctx, f.account, false, f.photo, page)
			return err
		}},
	} {
		captured()
		if err := l.list(t.Context()); err != nil {
			t.Fatal(err)
		}
		var plan []string
		for _, q := range captured() {
			if strings.Contains(q.sql, "created_at DESC") {
				plan = append(plan, sqlitePlan(t, db, q))
			}
		}
		if text := strings.Join(plan, "\n"); !strings.Contains(text, "USING INDEX "+l.index+" ") {
			t.Errorf("the list does not walk %s:\n%s", l.index, text)
		}
	}
}
