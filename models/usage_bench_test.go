package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/secrets"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// BenchmarkUsageOfAYear: a year of a busy account on PostgreSQL, 1,000,000 ledger entries (500,000
// jobs of 100,000 orders of two installations and three keys over 365 days, each job reserved
// and then consumed, released as failed or released as cancelled), and the usage of the whole
// year in each grouping, for the account and for one installation (docs/benchmarks.md, "Usage").
// Loading the rows takes a minute; run it with
//
//	go test ./models/ -run '^$' -bench BenchmarkUsageOfAYear -benchtime 5x
func BenchmarkUsageOfAYear(b *testing.B) {
	db := testdb.Open(b, testdb.MigratedPostgresURL(b))
	acc, err := models.CreateAccount(db, "busy", 0)
	if err != nil {
		b.Fatal(err)
	}
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	var installations [2]string
	for i := range installations {
		inst, err := models.CreateInstallation(db, box, models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec_x")
		if err != nil {
			b.Fatal(err)
		}
		installations[i] = inst.Installation.ID
	}
	// Another account's year, as large, which the scan must pass over.
	other, err := models.CreateAccount(db, "other", 0)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	load := func(accountID string, inst0, inst1 any) {
		all := []any{map[string]any{"acc": accountID, "i0": inst0, "i1": inst1, "start": start}}
		for _, st := range []struct {
			sql  string
			args []any
		}{
			// Bulk load: the change-feed triggers of orders and jobs are not what is measured.
			{`SET session_replication_role = replica`, nil},
			{`INSERT INTO orders (id, account_id, installation_id, api, job_type, session_config, status, jobs_total,
				created_at, updated_at, api_key_id)
			SELECT @acc || '-o' || g, @acc, CASE WHEN g % 2 = 0 THEN @i0 ELSE @i1 END, 'plugin', 'photo_shoot', '{}', 'completed', 5,
				CAST(@start AS timestamptz) + (g * interval '315 seconds'), CAST(@start AS timestamptz) + (g * interval '315 seconds'), 'key-' || (g % 3)
			FROM generate_series(1, 100000) AS g`, all},
			{`INSERT INTO jobs (id, order_id, account_id, installation_id, job_type, position, ai_model, aspect_ratio,
				credit_cost, run, status, created_at, updated_at)
			SELECT o.id || '-j' || p, o.id, o.account_id, o.installation_id, CASE WHEN p % 2 = 0 THEN 'photo_shoot' ELSE 'packshot' END, p,
				CASE p % 3 WHEN 0 THEN 'local/studio-v1' WHEN 1 THEN 'openai/gpt-image-1' ELSE 'fal/flux-pro' END, '1:1',
				1 + p, 1, CASE WHEN p = 4 THEN 'failed' WHEN p = 3 AND length(o.id) % 2 = 0 THEN 'cancelled' ELSE 'completed' END,
				o.created_at, o.created_at
			FROM orders o, generate_series(0, 4) AS p WHERE o.account_id = @acc`, all},
			{`INSERT INTO credit_ledger (id, account_id, order_id, job_id, run, kind, balance_delta, reserved_delta, note, created_at)
			SELECT j.id || '-r', j.account_id, j.order_id, j.id, 1, 'reserve', -j.credit_cost, j.credit_cost, '', j.created_at
			FROM jobs j WHERE j.account_id = @acc`, all},
			{`INSERT INTO credit_ledger (id, account_id, order_id, job_id, run, kind, balance_delta, reserved_delta, note, created_at)
			SELECT j.id || '-s', j.account_id, j.order_id, j.id, 1, CASE WHEN j.status = 'completed' THEN 'consume' ELSE 'release' END,
				CASE WHEN j.status = 'completed' THEN 0 ELSE j.credit_cost END, -j.credit_cost,
				CASE WHEN j.status = 'completed' THEN '' ELSE j.status END, j.created_at + interval '40 seconds'
			FROM jobs j WHERE j.account_id = @acc`, all},
			{`SET session_replication_role = DEFAULT`, nil},
		} {
			if err := db.Exec(st.sql, st.args...).Error; err != nil {
				b.Fatal(err)
			}
		}
	}
	load(acc.ID, installations[0], installations[1])
	load(other.ID, nil, nil) // an account of the external API: no installation
	if err := db.Exec(`ANALYZE`).Error; err != nil {
		b.Fatal(err)
	}
	var entries int64
	db.Raw(`SELECT count(*) FROM credit_ledger WHERE account_id = ?`, acc.ID).Scan(&entries)
	if entries != 1_000_000 {
		b.Fatalf("%d ledger entries, want 1,000,000", entries)
	}
	store := models.NewStore(db)
	from, to := start, start.AddDate(0, 0, 366)
	for _, c := range []struct {
		name     string
		scope    models.UsageScope
		by       string
		from, to time.Time
	}{
		{"account/day", models.UsageScope{AccountID: acc.ID}, models.UsageByDay, time.Time{}, time.Time{}},
		{"account/ai_model", models.UsageScope{AccountID: acc.ID}, models.UsageByAIModel, time.Time{}, time.Time{}},
		{"account/job_type", models.UsageScope{AccountID: acc.ID}, models.UsageByJobType, time.Time{}, time.Time{}},
		{"account/key", models.UsageScope{AccountID: acc.ID}, models.UsageByKey, time.Time{}, time.Time{}},
		{"installation/day", models.UsageScope{AccountID: acc.ID, InstallationID: installations[0]}, models.UsageByDay, time.Time{}, time.Time{}},
		{"installation/ai_model", models.UsageScope{AccountID: acc.ID, InstallationID: installations[0]}, models.UsageByAIModel, time.Time{}, time.Time{}},
		{"account/day/one_month", models.UsageScope{AccountID: acc.ID}, models.UsageByDay, start.AddDate(0, 5, 0), start.AddDate(0, 6, 0)},
	} {
		if c.from.IsZero() {
			c.from, c.to = from, to
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := store.UsageOf(context.Background(), c.scope, c.from, c.to, c.by)
				if err != nil || len(rows) == 0 {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
}
