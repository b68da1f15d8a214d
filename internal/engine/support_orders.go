package engine

import (
	"context"
	"errors"
	"time"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// SupportOrderView is everything support needs about one order.
type SupportOrderView struct {
	Order      SupportOrderSummary   `json:"order"`
	Jobs       []SupportJobView      `json:"jobs"`
	Ledger     []SupportLedgerRow    `json:"ledger"`
	Deliveries []SupportDeliveryView `json:"webhook_deliveries"`
	Retries    []SupportRetryRow     `json:"job_retries"`
}

// SupportOrderSummary is the order row with its credit summary and workflow link.
type SupportOrderSummary struct {
	OrderID           string         `json:"order_id"`
	AccountID         string         `json:"account_id"`
	InstallationID    *string        `json:"installation_id"`
	API               string         `json:"api"`
	JobType           string         `json:"job_type"`
	Status            string         `json:"status"`
	JobsTotal         int            `json:"jobs_total"`
	JobsCompleted     int            `json:"jobs_completed"`
	JobsFailed        int            `json:"jobs_failed"`
	JobsCancelled     int            `json:"jobs_cancelled"`
	JobsExpired       int            `json:"jobs_expired"`
	Credits           SupportCredits `json:"credits"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	CompletedAt       *time.Time     `json:"completed_at"`
	WorkflowStartedAt *time.Time     `json:"workflow_started_at"`
	WorkflowID        string         `json:"workflow_id"`
	TemporalUIURL     string         `json:"temporal_ui_url"`
	Livemode          bool           `json:"livemode"` // false for a test key's order
}

// SupportCredits is the order's credits: Held = Reserved - Consumed - Released is what its
// unfinished jobs still hold (0 once every job is terminal).
type SupportCredits struct {
	Reserved int64 `json:"reserved"`
	Consumed int64 `json:"consumed"`
	Released int64 `json:"released"`
	Held     int64 `json:"held"`
}

// SupportJobView is one job of the order, with its current run's workflow and the earlier runs'.
type SupportJobView struct {
	JobID         string           `json:"job_id"`
	Position      int              `json:"position"`
	ProductRef    string           `json:"product_ref"`
	ProductLabel  string           `json:"product_label"`
	AIModel       string           `json:"ai_model"`
	CreditCost    int64            `json:"credit_cost"`
	Run           int              `json:"run"`
	Status        string           `json:"status"`
	AttemptCount  int              `json:"attempt_count"`
	ErrorCategory *string          `json:"error_category"`
	ErrorHint     *string          `json:"error_hint"`
	ErrorDetail   string           `json:"error_detail"` // the raw provider message: for operators only
	StartedAt     *time.Time       `json:"started_at"`
	CompletedAt   *time.Time       `json:"completed_at"`
	RunStartedAt  *time.Time       `json:"run_started_at"`
	UpdatedAt     time.Time        `json:"updated_at"`
	WorkflowID    string           `json:"workflow_id"`
	TemporalUIURL string           `json:"temporal_ui_url"`
	EarlierRuns   []SupportRunLink `json:"earlier_runs,omitempty"`
}

// SupportRunLink is the workflow of one run of a job.
type SupportRunLink struct {
	Run           int    `json:"run"`
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

// SupportLedgerRow is one credit movement of the order.
type SupportLedgerRow struct {
	ID            string    `json:"id"`
	JobID         *string   `json:"job_id"`
	Run           int       `json:"run"`
	Kind          string    `json:"kind"`
	BalanceDelta  int64     `json:"balance_delta"`
	ReservedDelta int64     `json:"reserved_delta"`
	Note          string    `json:"note,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// SupportDeliveryView is one webhook delivery with its latest attempts (AttemptLog: at most
// models.MaxKeptAttempts, oldest first) and the count of all (Attempts).
type SupportDeliveryView struct {
	DeliveryID string `json:"delivery_id"`
	// EventID is the webhook-id its receiver got (one event, one delivery per endpoint); the
	// endpoint is whose (nil: recorded before endpoints).
	EventID        string               `json:"event_id"`
	EndpointID     *string              `json:"endpoint_id"`
	JobID          *string              `json:"job_id"` // null for an event of the order (order.completed)
	Run            int                  `json:"run"`
	Event          string               `json:"event"`
	Status         string               `json:"status"`
	CallbackURL    string               `json:"callback_url"`
	Attempts       int                  `json:"attempts"`
	LastStatusCode *int                 `json:"last_status_code"`
	LastError      string               `json:"last_error"`
	NextAttemptAt  *time.Time           `json:"next_attempt_at"`
	CreatedAt      time.Time            `json:"created_at"`
	DeliveredAt    *time.Time           `json:"delivered_at"`
	WorkflowID     string               `json:"workflow_id"`
	TemporalUIURL  string               `json:"temporal_ui_url"`
	AttemptLog     []SupportAttemptView `json:"attempt_log"`
}

// SupportAttemptView is one HTTP request of a delivery.
type SupportAttemptView struct {
	Attempt    int       `json:"attempt"` // within its workflow run
	Replay     bool      `json:"replay"`
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"` // null when no HTTP answer arrived
	LatencyMS  int64     `json:"latency_ms"`
	Error      string    `json:"error"`
}

// SupportRetryRow is one audit row of a job run again by support.
type SupportRetryRow struct {
	ID        string    `json:"id"`
	JobID     string    `json:"job_id"`
	Action    string    `json:"action"` // retry or settle
	FromRun   int       `json:"from_run"`
	ToRun     int       `json:"to_run"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"created_at"`
}

// ShowOrder loads an order of any account with its jobs, ledger rows, webhook deliveries and their
// attempts, and the retry audit rows; an unknown order is KindNotFound.
func (e *Support) ShowOrder(ctx context.Context, orderID string) (SupportOrderView, error) {
	h, err := e.store.OrderHistory(ctx, orderID)
	if errors.Is(err, models.ErrNotFound) {
		return SupportOrderView{}, missing("order", orderID)
	}
	if err != nil {
		return SupportOrderView{}, err
	}
	o := h.Order
	orderWF := workflows.OrderWorkflowID(o.ID)
	v := SupportOrderView{
		Order: SupportOrderSummary{
			OrderID: o.ID, AccountID: o.AccountID, InstallationID: o.InstallationID, API: o.API, JobType: o.JobType,
			Status: o.Status, JobsTotal: o.JobsTotal, JobsCompleted: o.JobsCompleted, JobsFailed: o.JobsFailed,
			JobsCancelled: o.JobsCancelled, JobsExpired: o.JobsExpired, Livemode: !o.TestMode,
			Credits: SupportCredits{Reserved: o.CreditsReserved, Consumed: o.CreditsConsumed, Released: o.CreditsReleased,
				Held: o.CreditsReserved - o.CreditsConsumed - o.CreditsReleased},
			CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(), CompletedAt: utc(o.CompletedAt),
			WorkflowStartedAt: utc(o.WorkflowStartedAt), WorkflowID: orderWF, TemporalUIURL: e.workflowURL(orderWF),
		},
		Jobs: []SupportJobView{}, Ledger: []SupportLedgerRow{}, Deliveries: []SupportDeliveryView{}, Retries: []SupportRetryRow{},
	}

	for _, j := range h.Jobs {
		wf := workflows.JobWorkflowID(j.ID, j.Run)
		jv := SupportJobView{
			JobID: j.ID, Position: j.Position, ProductRef: j.ProductRef, ProductLabel: j.ProductLabel, AIModel: j.AIModel,
			CreditCost: j.CreditCost, Run: j.Run, Status: j.Status, AttemptCount: j.AttemptCount,
			ErrorCategory: j.ErrorCategory, ErrorHint: j.ErrorHint, ErrorDetail: j.ErrorDetail,
			StartedAt: utc(j.StartedAt), CompletedAt: utc(j.CompletedAt), RunStartedAt: utc(j.RunStartedAt),
			UpdatedAt: j.UpdatedAt.UTC(), WorkflowID: wf, TemporalUIURL: e.workflowURL(wf),
		}
		for r := 1; r < j.Run; r++ {
			id := workflows.JobWorkflowID(j.ID, r)
			jv.EarlierRuns = append(jv.EarlierRuns, SupportRunLink{Run: r, WorkflowID: id, TemporalUIURL: e.workflowURL(id)})
		}
		v.Jobs = append(v.Jobs, jv)
	}

	for _, l := range h.Ledger {
		v.Ledger = append(v.Ledger, SupportLedgerRow{
			ID: l.ID, JobID: l.JobID, Run: l.Run, Kind: l.Kind, BalanceDelta: l.BalanceDelta,
			ReservedDelta: l.ReservedDelta, Note: l.Note, CreatedAt: l.CreatedAt.UTC(),
		})
	}

	attempts := map[string][]SupportAttemptView{}
	for _, a := range h.Attempts {
		attempts[a.DeliveryID] = append(attempts[a.DeliveryID], SupportAttemptView{
			Attempt: a.Attempt, Replay: a.Replay, At: a.StartedAt.UTC(), StatusCode: a.StatusCode,
			LatencyMS: a.LatencyMS, Error: a.Error,
		})
	}
	for _, d := range h.Deliveries {
		wf := workflows.WebhookWorkflowID(d.ID)
		log := attempts[d.ID]
		if log == nil {
			log = []SupportAttemptView{}
		}
		v.Deliveries = append(v.Deliveries, SupportDeliveryView{
			DeliveryID: d.ID, EventID: d.EventID, EndpointID: d.EndpointID, JobID: d.JobID, Run: d.Run, Event: d.Event, Status: d.Status, CallbackURL: d.CallbackURL,
			Attempts: d.Attempts, LastStatusCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: utc(d.NextAttemptAt),
			CreatedAt: d.CreatedAt.UTC(), DeliveredAt: utc(d.DeliveredAt), WorkflowID: wf, TemporalUIURL: e.workflowURL(wf),
			AttemptLog: log,
		})
	}

	for _, r := range h.Retries {
		v.Retries = append(v.Retries, SupportRetryRow{
			ID: r.ID, JobID: r.JobID, Action: r.Action, FromRun: r.FromRun, ToRun: r.ToRun, Actor: r.Actor, Reason: r.Reason, CreatedAt: r.CreatedAt.UTC(),
		})
	}
	return v, nil
}
