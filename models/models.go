// Package models holds shotflow's gorm models, their stores, the schema migrations and the seed
// reference data. The database is the catalog, the credit ledger and the read model of orders and jobs.
package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shotflow/shotflow/models/voting"
)

// JSON is a JSON document column (JSONB on Postgres, TEXT on SQLite).
type JSON json.RawMessage

// Value stores the document as text.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return "null", nil
	}
	return string(j), nil
}

// Scan reads the document from text or bytes.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = JSON(v)
	default:
		return fmt.Errorf("models.JSON: cannot scan %T", src)
	}
	return nil
}

// MarshalJSON returns the document itself.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// Account is a customer: it owns installations, keys, products and one credit balance.
type Account struct {
	ID              string `gorm:"primaryKey"`
	Name            string
	Plan            string
	CreditBalance   int64 // credits available for new reservations
	CreditsReserved int64 // credits held by jobs that have not settled yet
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// TestMode marks a test twin (migration 0021): of a live account (TestOfAccountID, the
	// external API's test world) or of a live installation (TestOfInstallationID, the plugin's).
	TestMode             bool
	TestOfAccountID      *string
	TestOfInstallationID *string
	TestDay              string // the UTC day (YYYY-MM-DD) its test credits were last refilled
	TestJobsToday        int    // the jobs it has run that day (the test quota)
	SpendLimits
	// LowBalanceThreshold is the client's credits.low threshold (migration 0025, alert_store.go);
	// nil: none. LowBalanceWatch is the highest threshold of the account and its installations.
	LowBalanceThreshold *int64
	LowBalanceWatch     *int64
}

// Installation is one merchant shop plugin installed against an account.
type Installation struct {
	ID                       string `gorm:"primaryKey"`
	AccountID                string
	Name                     string
	CallbackURL              string
	WebhookSecretEnc         string // the HMAC secret, encrypted at rest
	PreviousWebhookSecretEnc string
	PreviousSecretValidUntil *time.Time
	RateLimitPerMin          int
	Status                   string
	CreatedAt                time.Time
	UpdatedAt                time.Time
	// TestMode marks the test twin of the live installation TestOfInstallationID.
	TestMode             bool
	TestOfInstallationID *string
	SpendLimits
	// LowBalanceThreshold is the client's credits.low threshold on its account's available balance
	// (migration 0025); nil: none.
	LowBalanceThreshold *int64
}

// SpendLimits are the monthly spend limit columns of an account and of an installation (migration
// 0024, spend_limit_store.go).
type SpendLimits struct {
	SpendLimitMonthly *int64 // credits per UTC calendar month; nil: no limit
	// SpendAlertPercent is the alert threshold, in percent of the limit. The default tag leaves it
	// out of an INSERT that does not set it, so a new account or installation gets the column's 80.
	SpendAlertPercent int    `gorm:"default:80"`
	SpendMonth        string // the month (YYYY-MM) SpendUsed counts
	SpendUsed         int64  // credits reserved in SpendMonth, less those released
	// SpendReachedMonth is the month whose spend_limit.reached was sent (migration 0025): the
	// first refusal by the limit in a month sends it; setting a limit clears it.
	SpendReachedMonth string
}

// API key kinds.
const (
	KeyKindPlugin   = "plugin"
	KeyKindExternal = "external"
)

// APIKey is a credential; only the SHA-256 of its secret is stored.
type APIKey struct {
	ID             string `gorm:"primaryKey"`
	Kind           string
	AccountID      string
	InstallationID *string
	Name           string
	SecretHash     string
	Scopes         string // space-separated
	ExpiresAt      *time.Time
	RevokedAt      *time.Time
	LastUsedAt     *time.Time
	CreatedAt      time.Time
	TestMode       bool // a test key (pk_test_…, mk_test_…) of a test twin
}

// Product is a merchant product in the catalog, identified by the merchant's external_ref.
type Product struct {
	ID             string `gorm:"primaryKey"`
	AccountID      string
	InstallationID *string
	ExternalRef    string
	DisplayName    string
	SKU            string `gorm:"column:sku"`
	CreatedAt      time.Time
	UpdatedAt      time.Time
	DeletedAt      *time.Time
}

// Asset kinds.
const (
	AssetKindUpload = "upload"
	AssetKindOutput = "output"
)

// Asset is a stored file: an upload from a client or a generated output of a job.
type Asset struct {
	ID              string `gorm:"primaryKey"`
	AccountID       string
	InstallationID  *string
	Kind            string
	Status          string
	Filename        string
	ContentType     string
	SizeBytes       int64
	BlobKey         string
	Width           int
	Height          int
	SHA256          string `gorm:"column:sha256"`
	JobID           *string
	Position        int
	UploadExpiresAt *time.Time
	PurgedAt        *time.Time
	// PreparedBlobKey is the oriented, upscaled copy generation reads ("" means BlobKey itself);
	// ThumbnailBlobKey a small preview. Both are set when an upload becomes ready.
	PreparedBlobKey  string
	ThumbnailBlobKey string
	Problem          string // why an invalid upload cannot be used
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// InputBlobKey is the file generation reads: the prepared copy when there is one.
func (a *Asset) InputBlobKey() string {
	if a.PreparedBlobKey != "" {
		return a.PreparedBlobKey
	}
	return a.BlobKey
}

// Voting values of packshots and jobs.
const (
	VotingPending  = voting.Pending
	VotingAccepted = voting.Accepted
	VotingRejected = voting.Rejected
)

// Packshot is a product image on a plain background; approved ones feed photo sessions.
type Packshot struct {
	ID             string `gorm:"primaryKey"`
	AccountID      string
	InstallationID *string
	ProductID      string
	AssetID        string
	ExternalRef    string
	SourceImageRef string
	Voting         string
	VotingAt       *time.Time
	JobID          *string
	// SourceImageID is the product photo the packshot was cut from, when known.
	SourceImageID *string
	CreatedAt     time.Time
	// RecordCreatedAt dates the packshot in the external API's GET /packshots: its job's
	// created_at when a job made it (so its record keeps the date and the place it had while the
	// job ran), else CreatedAt. A column of its own, so that the list walks an index in its order
	// (packshots_account_page); the database writes it (migration 0029's triggers), gorm only reads it.
	RecordCreatedAt time.Time `gorm:"->"`
	DeletedAt       *time.Time
	ArchivedAt      *time.Time // archived by the external API's update-packshot
}

// ProductImage is a source image of a product (POST /images): an upload registered under the
// merchant's external_ref. Deleting its product leaves it in place; DeletedAt retires the row.
type ProductImage struct {
	ID             string `gorm:"primaryKey"`
	AccountID      string
	InstallationID *string
	ProductID      string
	AssetID        string
	ExternalRef    string
	CreatedAt      time.Time
	DeletedAt      *time.Time
}

// Order APIs: which façade accepted the order.
const (
	APIPlugin   = "plugin"
	APIExternal = "external"
)

// Order groups the jobs of one generation request; it runs as one OrderWorkflow.
type Order struct {
	ID                string `gorm:"primaryKey"`
	AccountID         string
	InstallationID    *string
	API               string `gorm:"column:api"`
	JobType           string
	SessionConfig     JSON
	Status            string
	JobsTotal         int
	JobsCompleted     int
	JobsFailed        int
	JobsCancelled     int
	JobsExpired       int
	CreditsReserved   int64
	CreditsConsumed   int64
	CreditsReleased   int64
	CorrelationID     string
	SourceOrderID     *string
	WorkflowStartedAt *time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
	CompletedAt       *time.Time
	// EventSeq is the number of the order's latest event (order_events, migration 0020): the
	// triggers of its jobs and of the order itself raise it; nothing else writes it.
	EventSeq int64 `gorm:"->"`
	TestMode bool  // created by a test key: its jobs never reach a paid provider
	// APIKeyID is the API key whose request created the order (migration 0023); nil for orders
	// created before it was recorded or without a key.
	APIKeyID *string `gorm:"column:api_key_id"`
	// CreditsRemaining is the account's available balance right after the order's reservation,
	// and AlertsPending the number of alerts its reservation queued (pending_alerts): both told by
	// the statement that placed it (CreateOrder), not columns.
	CreditsRemaining int64 `gorm:"-"`
	AlertsPending    int   `gorm:"-"`
}

// Job is one generated asset of an order; it runs as one JobWorkflow.
type Job struct {
	ID             string `gorm:"primaryKey"`
	OrderID        string
	AccountID      string
	InstallationID *string
	JobType        string
	Position       int
	ProductID      *string
	ProductRef     string
	ProductLabel   string
	PackshotID     *string
	InputAssetID   *string
	// InputAssetIDs lists every input of a multi-input job (a reel) in order, the first being
	// InputAssetID; empty for jobs with at most one input.
	InputAssetIDs JSON   `gorm:"column:input_asset_ids"`
	Prompt        string // preferences of an idea job, suggestion of a video job
	// RecordID is the external API record the job produces when it is not the job itself: the
	// fashion model or scenery of an idea job, the packshot of a packshot job.
	RecordID *string
	// RecordArchivedAt is when the client archived the record before its packshot existed (a
	// packshot record still being made, or failed: migration 0026); the packshot inherits it.
	RecordArchivedAt *time.Time
	// RecordMadeAt is when the packshot under the job's RecordID was made (migration 0030): set in
	// the transaction that creates it, by the UPDATE that completes the job (recordMadeAt) or, at
	// the rating of a job completed before candidates existed, by EnsurePackshotCandidate, so that
	// GET /packshots's index of the packshot jobs still without theirs (jobs_packshot_records_page)
	// leaves the job out. Nil while the packshot does not exist, and for a job without a record ID.
	RecordMadeAt  *time.Time
	AIModel       string `gorm:"column:ai_model"`
	AspectRatio   string
	CreditCost    int64
	Run           int
	Status        string
	AttemptCount  int
	ErrorCategory *string
	ErrorHint     *string
	ErrorDetail   string
	Voting        string
	VotingAt      *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	StartedAt     *time.Time
	CompletedAt   *time.Time
	// RunStartedAt is when the workflow of a run after the first (an operator's re-run) was
	// started; NULL on such a run means the start is still owed and the sweeper makes it.
	RunStartedAt *time.Time
	// StartDeadline is when the job is cancelled (CancelReason status.CancelDeadline) if its first
	// attempt has not begun by then: its request's Cancel-After. Nil for none; an operator's re-run
	// clears it.
	StartDeadline *time.Time
	// CancelReason says why a cancelled job was cancelled (status.CancelRequested or
	// status.CancelDeadline); nil for a job that was not cancelled.
	CancelReason *string
	// TestMode marks a job a test key created: it renders on the local studio or the simulator,
	// never a paid provider (docs/test-mode.md).
	TestMode bool
	// TestOutcome is the outcome a test key's request asked of the job (test_outcome, migration
	// 0022), as JSON: {"fail_with", "retryable_failures", "delay_ms"}. Nil for every other job.
	TestOutcome *string
}

// Provider is the provider part of the job's provider/model.
func (j *Job) Provider() string {
	provider, _, _ := strings.Cut(j.AIModel, "/")
	return provider
}

// Inputs lists the job's input assets in order: InputAssetIDs when set, else InputAssetID alone.
func (j *Job) Inputs() []string {
	var ids []string
	if len(j.InputAssetIDs) > 0 && json.Unmarshal(j.InputAssetIDs, &ids) == nil && len(ids) > 0 {
		return ids
	}
	if j.InputAssetID != nil {
		return []string{*j.InputAssetID}
	}
	return nil
}

// SetInputs records the job's input assets: the first in InputAssetID, all of them in
// InputAssetIDs when there is more than one.
func (j *Job) SetInputs(ids []string) {
	j.InputAssetID, j.InputAssetIDs = nil, nil
	if len(ids) == 0 {
		return
	}
	first := ids[0]
	j.InputAssetID = &first
	if len(ids) > 1 {
		j.InputAssetIDs, _ = json.Marshal(ids)
	}
}

// JobRetry is the audit row of an operator running a failed or expired job again as a new run.
type JobRetry struct {
	ID        string `gorm:"primaryKey"`
	JobID     string
	OrderID   string
	AccountID string
	FromRun   int
	ToRun     int
	// Action is JobRetryActionRetry (run n+1 of a failed or expired job) or
	// JobRetryActionSettle (a stranded run n ended failed).
	Action    string `gorm:"default:retry"`
	Actor     string
	Reason    string
	CreatedAt time.Time
}

// Actions of the support audit trail (job_retries.action).
const (
	JobRetryActionRetry  = "retry"
	JobRetryActionSettle = "settle"
)

// TableName is job_retries.
func (JobRetry) TableName() string { return "job_retries" }

// Ledger movement kinds.
const (
	LedgerGrant   = "grant"
	LedgerReserve = "reserve"
	LedgerConsume = "consume"
	LedgerRelease = "release"
	// LedgerAdjust sets a test twin's available balance to a value (the day's refill, PUT
	// …/test/credits: test_credit_store.go); its balance delta is the difference, of either sign.
	LedgerAdjust = "adjust"
)

// LedgerEntry is one credit movement. The account's balance is the sum of BalanceDelta and its
// reserved amount the sum of ReservedDelta over its entries.
type LedgerEntry struct {
	ID            string `gorm:"primaryKey"`
	AccountID     string
	OrderID       *string
	JobID         *string
	Run           int
	Kind          string
	BalanceDelta  int64
	ReservedDelta int64
	Note          string
	CreatedAt     time.Time
}

// TableName is credit_ledger.
func (LedgerEntry) TableName() string { return "credit_ledger" }

// UnmarshalJSON keeps a copy of the document.
func (j *JSON) UnmarshalJSON(data []byte) error {
	*j = append((*j)[:0], data...)
	return nil
}
