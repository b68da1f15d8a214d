package models

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/status"
)

// ErrJobNotRunnable is returned when a job asked to start an attempt is already terminal.
var ErrJobNotRunnable = errors.New("job is not runnable")

// outputNamespace derives stable output asset IDs, so a retried completion inserts nothing new.
var outputNamespace = uuid.MustParse("6f1c9a56-2b0e-4d8e-9a57-5d0c1f3f7a10")

// OutputAssetID is the ID of output number pos of a job run.
func OutputAssetID(jobID string, run, pos int) string {
	return uuid.NewSHA1(outputNamespace, fmt.Appendf(nil, "%s/%d/%d", jobID, run, pos)).String()
}

// OutputBlobKey is where output number pos of a job run is stored.
func OutputBlobKey(j *Job, pos int, ext string) string {
	return fmt.Sprintf("outputs/%s/%s/%d-%d%s", j.AccountID, j.ID, j.Run, pos, ext)
}

// GetJob loads a job by ID.
func GetJob(db *gorm.DB, id string) (*Job, error) {
	var j Job
	if err := db.Where("id = ?", id).Take(&j).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return &j, nil
}

// JobOutputs returns the generated files of a job's current run in position order.
func JobOutputs(db *gorm.DB, jobIDs ...string) (map[string][]Asset, error) {
	out := map[string][]Asset{}
	if len(jobIDs) == 0 {
		return out, nil
	}
	var assets []Asset
	err := db.Where("kind = ? AND job_id IN ?", AssetKindOutput, jobIDs).Order("position").Find(&assets).Error
	for _, a := range assets {
		out[*a.JobID] = append(out[*a.JobID], a)
	}
	return out, err
}

// BeginAttempt moves a job to in_progress for attempt number attempt of its current run, in one
// statement. It returns ErrJobNotRunnable when the job has ended or runs another run, and when its
// first attempt has not begun and its start deadline (Cancel-After) has passed: such a job is
// never begun; the caller cancels it (CancelJobNotBegun with status.CancelDeadline). A job that
// has begun runs on whatever its deadline.
func BeginAttempt(db *gorm.DB, jobID string, run, attempt int) error {
	_, err := BeginAttemptOf(db, jobID, run, attempt)
	return err
}

// BeginAttemptOf is BeginAttempt returning the job as its UPDATE left it (one statement: the
// job is not read again).
func BeginAttemptOf(db *gorm.DB, jobID string, run, attempt int) (*Job, error) {
	now := time.Now().UTC()
	var j Job
	res := db.Model(&j).Clauses(clause.Returning{}).
		Where("id = ? AND run = ? AND status IN ?", jobID, run, []string{status.JobPending, status.JobRetryPending, status.JobInProgress}).
		Where("(started_at IS NOT NULL OR start_deadline IS NULL OR start_deadline > ?)", now).
		Updates(map[string]any{
			"status":        status.JobInProgress,
			"attempt_count": attempt,
			"started_at":    gorm.Expr("COALESCE(started_at, ?)", now),
			"updated_at":    now,
		})
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, ErrJobNotRunnable
	}
	return &j, nil
}

// CompleteJob marks a job run completed with its outputs, consumes its reservation and updates
// the order's counters, all in one transaction; a packshot job also adds its packshot candidate to
// the product's catalog (EnsurePackshotCandidate). It returns false when the job was already
// terminal: a repeated call changes nothing.
func CompleteJob(db *gorm.DB, jobID string, run int, outputs []Asset) (bool, error) {
	_, completed, err := CompleteJobRun(db, jobID, run, outputs)
	return completed, err
}

// CompleteJobRun is CompleteJob returning the job as the call left it (nil when there is no such
// job): the completed job, or the job that was already terminal. An output's account,
// installation and job are the job's, filled in when empty, so the caller needs not read the job
// first.
func CompleteJobRun(db *gorm.DB, jobID string, run int, outputs []Asset) (*Job, bool, error) {
	return completeJobRun(db, jobID, run, outputs, nil)
}

// completeJobRun is CompleteJobRun whose account update is added to owed, when not nil, for the
// enclosing transaction to send last (Store.Tx); with owed nil it is the last statement of the
// call's own transaction.
func completeJobRun(db *gorm.DB, jobID string, run int, outputs []Asset, owed *owedSettlements) (*Job, bool, error) {
	var job *Job
	completed := false
	err := db.Transaction(func(tx *gorm.DB) error {
		now := time.Now().UTC()
		j, ok, err := finish(tx, jobID, run, status.JobCompleted, now, map[string]any{
			"error_category": nil, "error_hint": nil,
			"record_made_at": recordMadeAt(jobID, outputs, now),
		})
		job = j
		if err != nil || !ok {
			return err
		}
		completed = true
		if len(outputs) > 0 {
			for i := range outputs {
				o := &outputs[i]
				if o.AccountID == "" {
					o.AccountID = j.AccountID
				}
				if o.InstallationID == nil {
					o.InstallationID = j.InstallationID
				}
				if o.JobID == nil {
					o.JobID = &j.ID
				}
			}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&outputs).Error; err != nil {
				return err
			}
		}
		if _, err := ensurePackshotCandidate(tx, j, true); err != nil {
			return err
		}
		if err := finishReferenceItem(tx, j, RefStatusDone); err != nil {
			return err
		}
		account, ok, err := settle(tx, j, LedgerConsume)
		if err != nil {
			return err
		}
		if err := endOfJob(tx, j, "jobs_completed", "credits_consumed", ok); err != nil || !ok {
			return err
		}
		return settled(tx, owed, account) // the account last (lock order: credits.go)
	})
	if err != nil || !completed {
		return job, false, err
	}
	return job, true, nil
}

// EndJob moves a job run to a terminal status other than completed (failed, cancelled or expired),
// releases its reservation and updates the order's counters in one transaction. It returns false
// when the job was already terminal.
func EndJob(db *gorm.DB, jobID string, run int, to, category, hint, detail string) (bool, error) {
	_, ended, err := EndJobRun(db, jobID, run, to, category, hint, detail)
	return ended, err
}

// EndJobRun is EndJob returning the job as the call left it (nil when there is no such job): the
// ended job, or the job that was already terminal.
func EndJobRun(db *gorm.DB, jobID string, run int, to, category, hint, detail string) (*Job, bool, error) {
	return endJobRun(db, jobID, run, to, category, hint, detail, nil)
}

// endJobRun is EndJobRun whose account update is added to owed, when not nil, for the enclosing
// transaction to send last (Store.Tx); with owed nil it comes last in the call's own transaction.
func endJobRun(db *gorm.DB, jobID string, run int, to, category, hint, detail string, owed *owedSettlements) (*Job, bool, error) {
	counter := map[string]string{status.JobFailed: "jobs_failed", status.JobCancelled: "jobs_cancelled", status.JobExpired: "jobs_expired"}[to]
	if counter == "" {
		return nil, false, fmt.Errorf("EndJob: %q is not a failure status", to)
	}
	var job *Job
	ended := false
	err := db.Transaction(func(tx *gorm.DB) error {
		extra := map[string]any{"error_detail": detail}
		if to == status.JobCancelled {
			// Only a client's cancel ends a job cancelled here: the cancel-job workflow Update of
			// earlier releases, on replay. A deadline's cancel is CancelJobNotBegun's.
			extra["cancel_reason"] = status.CancelRequested
		}
		if category != "" {
			extra["error_category"] = category
			extra["error_hint"] = hint
		}
		j, ok, err := finish(tx, jobID, run, to, time.Now().UTC(), extra)
		job = j
		if err != nil || !ok {
			return err
		}
		ended = true
		if err := finishReferenceItem(tx, j, RefStatusFailed); err != nil {
			return err
		}
		account, ok, err := settle(tx, j, LedgerRelease)
		if err != nil {
			return err
		}
		if err := endOfJob(tx, j, counter, "credits_released", ok); err != nil || !ok {
			return err
		}
		return settled(tx, owed, account) // the account last (lock order: credits.go)
	})
	if err != nil || !ended {
		return job, false, err
	}
	return job, true, nil
}

// terminalJobStatuses are the statuses a job run ends in.
var terminalJobStatuses = []string{status.JobCompleted, status.JobFailed, status.JobCancelled, status.JobExpired}

// finish moves a non-terminal job run to a terminal status at now and returns the job as its UPDATE
// left it (RETURNING, one statement); ok is false, and the job is read as it is, if it was already
// terminal (ErrNotFound when there is no such job).
func finish(tx *gorm.DB, jobID string, run int, to string, now time.Time, extra map[string]any) (*Job, bool, error) {
	fields := map[string]any{"status": to, "completed_at": now, "updated_at": now}
	for k, v := range extra {
		fields[k] = v
	}
	var j Job
	res := tx.Model(&j).Clauses(clause.Returning{}).
		Where("id = ? AND run = ? AND status NOT IN ?", jobID, run, terminalJobStatuses).
		Updates(fields)
	if res.Error != nil {
		return nil, false, res.Error
	}
	if res.RowsAffected == 0 {
		current, err := GetJob(tx, jobID)
		return current, false, err
	}
	return &j, true, nil
}

// recordMadeAt is the value finish's UPDATE gives record_made_at when it completes the job at now
// with outputs: now when the completion makes the packshot under the job's record ID, else the
// column unchanged. The completion makes it (EnsurePackshotCandidate, in the same transaction)
// when the job is a packshot job with a product and a record ID, has a first output (one of
// outputs, which are stored after the UPDATE under IDs of the job's own, OutputAssetID, or one
// stored already) and no packshot yet, which its record_made_at says: set iff the packshot under
// its record ID exists. So the job's row is written once at its completion, not again by the
// candidate's creation, and the same statement reads (RETURNING) the record_archived_at the
// packshot inherits, holding the row from then on.
func recordMadeAt(jobID string, outputs []Asset, now time.Time) clause.Expr {
	made := "job_type = ? AND product_id IS NOT NULL AND record_id IS NOT NULL AND record_made_at IS NULL"
	args := []any{jobtype.Packshot}
	if !slices.ContainsFunc(outputs, func(o Asset) bool {
		return o.Kind == AssetKindOutput && (o.JobID == nil || *o.JobID == jobID)
	}) {
		made += " AND EXISTS (SELECT 1 FROM assets a WHERE a.kind = ? AND a.job_id = jobs.id)"
		args = append(args, AssetKindOutput)
	}
	return gorm.Expr("CASE WHEN "+made+" THEN ? ELSE record_made_at END", append(args, now)...)
}

// endOfJob records a job run's end in its order with one UPDATE: the job's counter goes up, the
// run's credits (when settle moved them) go to creditColumn, and once every job is terminal the
// order takes its final status: completed when at least one job completed, cancelled when every
// job was cancelled, failed otherwise (docs/job-states.md). Every expression reads the row as it
// was before the UPDATE, on both databases, hence the + 1 of the job that ends now.
func endOfJob(tx *gorm.DB, j *Job, counter, creditColumn string, settled bool) error {
	var credits int64
	if settled {
		credits = j.CreditCost
	}
	completed, cancelled := 0, 0
	switch counter {
	case "jobs_completed":
		completed = 1
	case "jobs_cancelled":
		cancelled = 1
	}
	now := time.Now().UTC()
	ends := gorm.Expr("status = ? AND jobs_completed + jobs_failed + jobs_cancelled + jobs_expired + 1 >= jobs_total", status.OrderInProgress)
	return tx.Model(&Order{}).Where("id = ?", j.OrderID).Updates(map[string]any{
		counter:      gorm.Expr(counter + " + 1"),
		creditColumn: gorm.Expr(creditColumn+" + ?", credits),
		"updated_at": now,
		"status": gorm.Expr(`CASE WHEN ? THEN
			CASE WHEN jobs_completed + ? > 0 THEN ? WHEN jobs_cancelled + ? = jobs_total THEN ? ELSE ? END
			ELSE status END`, ends, completed, status.OrderCompleted, cancelled, status.OrderCancelled, status.OrderFailed),
		"completed_at": gorm.Expr("CASE WHEN ? THEN ? ELSE completed_at END", ends, now),
	}).Error
}

// packshotNamespace derives the ID of the packshot candidate of a packshot job run.
var packshotNamespace = uuid.MustParse("0b7d3f3e-6a55-4f0e-8f43-2f6f7c1e9b24")

// PackshotCandidateID is the ID of the packshot candidate created from a packshot job run.
func PackshotCandidateID(jobID string, run int) string {
	return uuid.NewSHA1(packshotNamespace, fmt.Appendf(nil, "%s/%d", jobID, run)).String()
}

// EnsurePackshotCandidate adds the packshot candidate of a completed packshot job to its product's
// catalog: a packshot row (voting pending) whose file is the job's first output, under the job's
// RecordID when it has one, linked to the product photo the job read. It returns the
// job's existing candidate when there is one (also a deleted one, which stays deleted), and nil for
// a job that is not a packshot job, has no product or has no output. Accepting or rejecting the job
// (POST /jobs/{id}/accept, /reject) decides the candidate.
func EnsurePackshotCandidate(tx *gorm.DB, j *Job) (*Packshot, error) {
	return ensurePackshotCandidate(tx, j, false)
}

// ensurePackshotCandidate is EnsurePackshotCandidate; finished says j is the job's row as this
// transaction's finish left it (RETURNING), whose UPDATE already set record_made_at when the
// packshot is made now (recordMadeAt) and read its record_archived_at, so a candidate under the
// job's record ID takes both from j, and the row is not written again.
func ensurePackshotCandidate(tx *gorm.DB, j *Job, finished bool) (*Packshot, error) {
	if j.JobType != jobtype.Packshot || j.ProductID == nil {
		return nil, nil
	}
	var existing Packshot
	err := tx.Where("job_id = ?", j.ID).Order("created_at DESC, id DESC").Take(&existing).Error
	if err == nil {
		return &existing, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	var first Asset
	err = tx.Where("kind = ? AND job_id = ?", AssetKindOutput, j.ID).Order("position, id").Take(&first).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := Packshot{
		ID: PackshotCandidateID(j.ID, j.Run), AccountID: j.AccountID, InstallationID: j.InstallationID,
		ProductID: *j.ProductID, AssetID: first.ID, Voting: VotingPending, JobID: &j.ID, CreatedAt: time.Now().UTC(),
	}
	switch {
	case j.RecordID != nil && finished && j.RecordMadeAt != nil:
		// The job's completion made its row say the packshot is made, at the packshot's creation
		// time, and read its record_archived_at: the UPDATE that did holds the row, so an archive
		// of the record (archiveJobRecord) had committed before it or waits for this transaction.
		p.ID, p.CreatedAt, p.ArchivedAt = *j.RecordID, j.RecordMadeAt.UTC(), j.RecordArchivedAt
	case j.RecordID != nil:
		p.ID = *j.RecordID
		// The job's row says its packshot is made (record_made_at, which leaves the job out of
		// GET /packshots's index of the jobs still making theirs), in the statement that reads the
		// job's record_archived_at: a record the client archived while its job ran stays archived
		// (archiveJobRecord), read now, as the job's row is held by this transaction, so the
		// archive has committed or waits. The packshot is inserted below in the same transaction,
		// or already exists under this ID (the insert's only possible conflict). A completion has
		// done this in finish's UPDATE (recordMadeAt); this is the rating of a job completed before
		// candidates existed (RateJob).
		var archived Job
		res := tx.Model(&archived).Clauses(clause.Returning{Columns: []clause.Column{{Name: "record_archived_at"}}}).
			Where("id = ?", j.ID).UpdateColumn("record_made_at", p.CreatedAt)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			return nil, gorm.ErrRecordNotFound
		}
		p.ArchivedAt = archived.RecordArchivedAt
	}
	if j.InputAssetID != nil {
		// The source is a photo of the job's own product: one upload may be the photo of several
		// products, and a shoot of another's photo must not start from this packshot. A live
		// photo first, then the newest.
		var photo ProductImage
		err := tx.Where("account_id = ? AND product_id = ? AND asset_id = ?", j.AccountID, *j.ProductID, *j.InputAssetID).
			Order("deleted_at IS NOT NULL, created_at DESC, id DESC").Take(&photo).Error
		if err == nil {
			p.SourceImageID = &photo.ID
		} else if !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, err
		}
	}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&p).Error; err != nil {
		return nil, err
	}
	return &p, nil
}

// finishReferenceItem settles the fashion model or scenery an idea job produces: DONE with the
// job's first output as its thumbnail, or FAILED. Other jobs are left alone.
func finishReferenceItem(tx *gorm.DB, j *Job, to string) error {
	kind, ok := referenceKindOf(j)
	if !ok {
		return nil
	}
	fields := map[string]any{"status": to, "updated_at": time.Now().UTC()}
	if to == RefStatusDone {
		var first Asset
		err := tx.Where("kind = ? AND job_id = ?", AssetKindOutput, j.ID).Order("position, id").Take(&first).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			fields["status"] = RefStatusFailed
		} else if err != nil {
			return err
		} else {
			fields["thumbnail_asset_id"] = first.ID
		}
	}
	return tx.Table(kind.Table()).Where("id = ? AND account_id = ? AND status = ?", *j.RecordID, j.AccountID, RefStatusInProgress).
		Updates(fields).Error
}

// referenceKindOf is the kind of record an idea job produces, and whether it produces one.
func referenceKindOf(j *Job) (ReferenceKind, bool) {
	if j.RecordID == nil {
		return "", false
	}
	switch j.JobType {
	case jobtype.ModelIdea:
		return KindFashionModel, true
	case jobtype.SceneryIdea:
		return KindScenery, true
	}
	return "", false
}

// GetAsset returns the asset with the ID, or ErrNotFound.
func GetAsset(db *gorm.DB, id string) (*Asset, error) {
	var a Asset
	err := db.Take(&a, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// MarkOrdersStarted records that the workflows of the orders have been started
// (workflow_started_at, set once: an order already marked keeps its first mark).
func MarkOrdersStarted(db *gorm.DB, now time.Time, orderIDs ...string) error {
	return db.Model(&Order{}).Where("id IN ? AND workflow_started_at IS NULL", orderIDs).
		Update("workflow_started_at", now.UTC()).Error
}
