package models_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
	"github.com/shotflow/shotflow/models/testdb"
)

// usageWorld is an account with two installations and keys, whose random orders ended every way
// a job run ends, and another account with orders of its own.
type usageWorld struct {
	store        *models.Store
	account      string
	other        string
	installation [2]string
	keys         []*string
}

func newUsageWorld(t *testing.T, db *gorm.DB, seed uint64) usageWorld {
	t.Helper()
	ctx := context.Background()
	w := usageWorld{store: models.NewStore(db)}
	acc, err := models.CreateAccount(db, "acme", 1_000_000)
	require.NoError(t, err)
	other, err := models.CreateAccount(db, "other", 1_000_000)
	require.NoError(t, err)
	w.account, w.other = acc.ID, other.ID
	for i := range w.installation {
		inst, err := models.CreateInstallation(db, testBox(t), models.NewInstallation{AccountID: acc.ID, Name: "shop"}, "whsec_x")
		require.NoError(t, err)
		w.installation[i] = inst.Installation.ID
	}
	k1, k2 := "key-1", "key-2"
	w.keys = []*string{&k1, &k2, nil}
	rng := rand.New(rand.NewPCG(seed, 27))
	aiModels := []string{"local/studio-v1", "sim/fast"}
	types := []string{jobtype.PhotoShoot, jobtype.Packshot}
	for o := range 40 {
		accountID := w.account
		if o%8 == 7 {
			accountID = w.other
		}
		now := time.Now().UTC()
		order, jobs := orderOf(accountID, 1+rng.IntN(4), 0, now)
		if accountID == w.account {
			order.InstallationID = &w.installation[rng.IntN(2)]
		}
		order.APIKeyID = w.keys[rng.IntN(len(w.keys))]
		for i := range jobs {
			jobs[i].CreditCost = 1 + rng.Int64N(9)
			jobs[i].AIModel = aiModels[rng.IntN(2)]
			jobs[i].JobType = types[rng.IntN(2)]
			jobs[i].InstallationID = order.InstallationID
		}
		require.NoError(t, models.PlaceOrder(db, order, jobs, nil))
		for _, j := range jobs {
			switch rng.IntN(6) {
			case 0:
				_, err = models.CompleteJob(db, j.ID, 1, nil)
			case 1:
				_, err = modelsEnd(db, j.ID, status.JobFailed)
			case 2:
				_, err = modelsEnd(db, j.ID, status.JobExpired)
			case 3:
				_, err = modelsEnd(db, j.ID, status.JobCancelled)
			case 4:
				_, _, err = w.store.CancelJobNotBegun(ctx, j.ID, 1, status.CancelRequested)
			} // 5: still pending, its credits reserved
			require.NoError(t, err)
		}
	}
	return w
}

func modelsEnd(db *gorm.DB, jobID, to string) (bool, error) {
	return models.EndJob(db, jobID, 1, to, "", "", "")
}

// ledgerUsage is the usage computed directly from the rows: every ledger entry of the account
// (and installation) in the range, grouped in Go by the key of its job or order.
func ledgerUsage(t *testing.T, db *gorm.DB, scope models.UsageScope, from, to time.Time, groupBy string) map[string]models.UsageFigures {
	t.Helper()
	var entries []models.LedgerEntry
	require.NoError(t, db.Where("account_id = ?", scope.AccountID).Find(&entries).Error)
	out := map[string]models.UsageFigures{}
	for _, e := range entries {
		if e.CreatedAt.Before(from) || !e.CreatedAt.Before(to) || e.OrderID == nil {
			continue
		}
		var order models.Order
		require.NoError(t, db.First(&order, "id = ?", *e.OrderID).Error)
		if scope.InstallationID != "" && (order.InstallationID == nil || *order.InstallationID != scope.InstallationID) {
			continue
		}
		var job models.Job
		require.NoError(t, db.First(&job, "id = ?", *e.JobID).Error)
		key := map[string]string{models.UsageByDay: e.CreatedAt.UTC().Format(time.DateOnly),
			models.UsageByAIModel: job.AIModel, models.UsageByJobType: job.JobType}[groupBy]
		if groupBy == models.UsageByKey && order.APIKeyID != nil {
			key = *order.APIKeyID
		}
		f := out[key]
		switch e.Kind {
		case models.LedgerReserve:
			f.CreditsReserved += e.ReservedDelta
		case models.LedgerConsume:
			f.CreditsConsumed -= e.ReservedDelta
			f.JobsCompleted++
		case models.LedgerRelease:
			f.CreditsReleased += e.BalanceDelta
			// how the run ended, from the job itself (each job here has one run)
			if job.Status == status.JobCancelled {
				f.JobsCancelled++
			} else {
				f.JobsFailed++
			}
		}
		out[key] = f
	}
	return out
}

// Usage sums equal the ledger's, for every grouping, for the account and each installation, on
// both databases; another account's orders never count.
func TestUsageEqualsTheLedger(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newUsageWorld(t, db, uint64(time.Now().UnixNano()))
		from, to := time.Now().UTC().Add(-time.Hour), time.Now().UTC().Add(time.Hour)
		scopes := []models.UsageScope{{AccountID: w.account}, {AccountID: w.account, InstallationID: w.installation[0]},
			{AccountID: w.account, InstallationID: w.installation[1]}, {AccountID: w.other}}
		var accountTotal models.UsageFigures
		for _, scope := range scopes {
			for _, by := range []string{models.UsageByDay, models.UsageByAIModel, models.UsageByJobType, models.UsageByKey} {
				rows, err := w.store.UsageOf(ctx, scope, from, to, by)
				require.NoError(t, err)
				got := map[string]models.UsageFigures{}
				var total models.UsageFigures
				for i, r := range rows {
					if i > 0 {
						assert.Less(t, rows[i-1].Key, r.Key, "rows in key order")
					}
					got[r.Key] = r.UsageFigures
					total.Add(r.UsageFigures)
				}
				assert.Equal(t, ledgerUsage(t, db, scope, from, to, by), got, "%+v by %s", scope, by)
				if scope == scopes[0] {
					accountTotal = total
				}
			}
		}
		// The account's figures agree with its balance columns, which the ledger sums: what is
		// still reserved is what was reserved less what was settled.
		acc, err := models.GetAccount(db, w.account)
		require.NoError(t, err)
		assert.Equal(t, acc.CreditsReserved, accountTotal.CreditsReserved-accountTotal.CreditsConsumed-accountTotal.CreditsReleased)
		assert.Equal(t, int64(1_000_000)-acc.CreditBalance-acc.CreditsReserved, accountTotal.CreditsConsumed)
		assert.Positive(t, accountTotal.JobsCompleted)
		assert.Positive(t, accountTotal.JobsFailed)
		assert.Positive(t, accountTotal.JobsCancelled)

		// A range that ends before the entries, or starts after them, holds none.
		for _, r := range [][2]time.Time{{from.Add(-time.Hour), from}, {to, to.Add(time.Hour)}} {
			rows, err := w.store.UsageOf(ctx, models.UsageScope{AccountID: w.account}, r[0], r[1], models.UsageByDay)
			require.NoError(t, err)
			assert.Empty(t, rows)
		}
	})
}

// A release entry notes how its run ended.
func TestReleaseEntriesNoteTheEnd(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		acc, err := models.CreateAccount(db, "acme", 100)
		require.NoError(t, err)
		order, jobs := orderOf(acc.ID, 3, 2, time.Now().UTC())
		require.NoError(t, models.PlaceOrder(db, order, jobs, nil))
		ends := []string{status.JobFailed, status.JobExpired, status.JobCancelled}
		for i, to := range ends {
			_, err := modelsEnd(db, jobs[i].ID, to)
			require.NoError(t, err)
		}
		for i, to := range ends {
			var e models.LedgerEntry
			require.NoError(t, db.First(&e, "job_id = ? AND kind = ?", jobs[i].ID, models.LedgerRelease).Error)
			assert.Equal(t, to, e.Note)
		}
	})
}
