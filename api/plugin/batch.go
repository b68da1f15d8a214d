package plugin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/gin-gonic/gin"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/charge"
	"github.com/shotflow/shotflow/api/jsonbody"
	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/api/reqctx"
	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/status"
)

// Limits of POST /jobs/batch.
const (
	MaxSessionsPerBatch = 100
	MaxImagesPerBatch   = 5000
	maxBatchBodyBytes   = 16 << 20
)

// BatchResponse answers POST /jobs/batch (HTTP 207): one result per session, in input order.
type BatchResponse struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is the outcome of one session of a batch: status 201 with the session response, or
// the 4xx (or 5xx) status with the error object of the envelope.
type BatchResult struct {
	Index   int              `json:"index"`
	Status  int              `json:"status"`
	Session *SessionResponse `json:"session,omitempty"`
	Error   *ErrorDetail     `json:"error,omitempty"`
}

const migrateBatchMessage = "The {\"jobs\": [...]} body of POST /jobs/batch was retired in May 2026: rename jobs to batches " +
	"and send each entry as a session {\"job_type\", \"session_config\", \"subjects\": [{\"product_ref\", \"images_count\", \"ai_model\"}]}."

// POST /jobs/batch: up to 100 independent sessions. The call as a whole is refused (400) only when
// its envelope is wrong: not {"batches": [...]}, the retired {"jobs": [...]}, no session or more
// than 100, or more than 5,000 images in all. Otherwise every session is judged and committed on
// its own, in input order, exactly as POST /jobs would (its own transaction and reservation;
// earlier sessions get credits first), and one failing never affects another. The workflows of the
// committed sessions are then started together (the outbox covers a start that fails). Idempotency-
// Key is not supported here and is ignored. Cancel-After and Prefer: wait apply to every session
// as on POST /jobs: each created session's jobs carry the deadline, and a held batch is answered
// once every created session's order has ended or the wait is over.
func (h *Handler) createBatch(c *gin.Context) {
	cancelAfter, ok := h.cancelAfter(c)
	if !ok {
		return
	}
	body, ok := h.readBody(c)
	if !ok {
		return
	}
	entries, f := parseBatch(body)
	if f != nil {
		h.refuse(c, f)
		return
	}
	held, ok := h.takeWait(c) // before anything is created
	if !ok {
		return
	}
	defer held.Release()
	resp := BatchResponse{Results: make([]BatchResult, 0, len(entries))}
	var committed []engine.Session
	for i, entry := range entries {
		var out sessionOutcome
		if req, f := parseBatchEntry(i, entry); f != nil {
			out.fail = f
		} else {
			var session *engine.Session
			sreq := h.sessionRequest(c, req)
			sreq.CancelAfter = cancelAfter
			out, session = h.commitSession(c, sreq, nil)
			if session != nil {
				committed = append(committed, *session)
			}
		}
		r := BatchResult{Index: i, Status: http.StatusCreated, Session: out.session}
		if out.fail != nil {
			errBody := h.Envelope(out.fail.status, out.fail.code, out.fail.message, out.fail.details).Error
			r = BatchResult{Index: i, Status: out.fail.status, Error: &errBody}
		}
		resp.Results = append(resp.Results, r)
	}
	h.Engine.Sessions.StartAll(c.Request.Context(), committed, batchStartTimeout)
	if len(committed) > 0 {
		// The batch's charge: every created session's reservation, and the balance after the last
		// of them, as documented (a release or grant between two sessions can raise it).
		reserved, remaining := int64(0), committed[len(committed)-1].CreditsRemaining
		for _, s := range committed {
			reserved += s.CreditsReserved
		}
		charge.Set(c.Writer.Header(), reserved, remaining)
		if held.Wait > 0 {
			h.holdBatch(c, held.Wait, resp.Results)
		}
	}
	c.PureJSON(http.StatusMultiStatus, resp)
}

// holdBatch holds a batch with Prefer: wait until the order of every session it created has ended
// or the wait is over, and sets each created session's status to its order's of then. It waits on
// the first order still in progress, then the next (an order that has ended is not read again),
// and reads every order not known to have ended once more before the answer, so that a wait that
// runs out answers each session's status of that moment. Should the database fail meanwhile, the
// sessions are answered with the statuses last read.
func (h *Handler) holdBatch(c *gin.Context, wait time.Duration, results []BatchResult) {
	inst := caller(c).Installation
	scope := engine.OrderScope{AccountID: inst.AccountID, InstallationID: inst.ID}
	ended := make(map[string]bool, len(results))
	// read reads the orders not known to have ended, in input order, up to the first still in
	// progress unless all is set; its value is whether they have all ended.
	read := func(ctx context.Context, all bool) (prefer.Read[bool], error) {
		next := prefer.Read[bool]{Value: true, Ended: true}
		for _, r := range results {
			s := r.Session
			if s == nil || ended[s.OrderID] {
				continue
			}
			o, err := h.Engine.Feed.Order(ctx, scope, s.OrderID)
			if err != nil {
				return prefer.Read[bool]{}, err
			}
			s.Status = o.Status
			if o.Status != status.OrderInProgress {
				ended[s.OrderID] = true
				continue
			}
			if next.Ended {
				next = prefer.Read[bool]{OrderID: s.OrderID, Seen: o.EventSeq}
			}
			if !all {
				break
			}
		}
		return next, nil
	}
	allEnded, err := prefer.Hold(c, h.Engine.Feed, wait, func(ctx context.Context) (prefer.Read[bool], error) { return read(ctx, false) })
	if err == nil && !allEnded {
		_, err = read(c.Request.Context(), true)
	}
	if err != nil {
		reqctx.Log(c, h.Log).Info("a held batch is answered with the statuses last read: an order could not be read", zap.Error(err))
	}
}

// batchStartTimeout bounds the workflow starts of one batch as a whole (engine.Sessions.StartAll),
// so that an unreachable Temporal delays the answer by seconds, not by a timeout per session.
var batchStartTimeout = 10 * time.Second

// parseBatch checks the envelope of a batch, {"batches": [...]} and nothing else, and returns its
// sessions, still undecoded.
func parseBatch(body []byte) ([]jsontext.Value, *failure) {
	const hint = "; send {\"batches\": [session, ...]}"
	top, err := jsonbody.Members(body)
	if err != nil {
		return nil, invalid("%s%s", describeBindError(err), hint)
	}
	if _, retired := top["jobs"]; retired {
		return nil, invalid("%s", migrateBatchMessage)
	}
	var envelope struct {
		Batches []jsontext.Value `json:"batches"`
	}
	if err := jsonbody.Decode(body, &envelope); err != nil {
		return nil, invalid("%s", describeBindError(err))
	}
	if _, ok := top["batches"]; !ok {
		return nil, invalid("batches is required%s", hint)
	}
	entries := envelope.Batches
	if len(entries) == 0 {
		return nil, invalid("batches must have at least 1 session")
	}
	if len(entries) > MaxSessionsPerBatch {
		return nil, invalid("batches must have at most %d sessions; it has %d", MaxSessionsPerBatch, len(entries))
	}
	if n := batchImages(entries); n > MaxImagesPerBatch {
		return nil, invalid("the batch asks for %d images in all; at most %d are allowed per call", n, MaxImagesPerBatch)
	}
	return entries, nil
}

// batchImages adds up the images_count of every subject of every session; values that are not
// positive numbers, and names in another case (Images_Count), are left to each session's own
// validation, which refuses them: a session refused for its key's case counts no image.
func batchImages(entries []jsontext.Value) int {
	total := 0
	for _, e := range entries {
		var s struct {
			Subjects []struct {
				ImagesCount any `json:"images_count"`
			} `json:"subjects"`
		}
		if json.Unmarshal(e, &s) != nil {
			continue
		}
		for _, sub := range s.Subjects {
			if n, ok := sub.ImagesCount.(float64); ok && n > 0 {
				total += int(min(n, MaxImagesPerBatch+1))
			}
		}
	}
	return total
}

// parseBatchEntry decodes one session of a batch.
func parseBatchEntry(i int, entry jsontext.Value) (*SessionRequest, *failure) {
	if entry.Kind() != '{' {
		return nil, invalid("batches[%d] must be a session object {\"job_type\", \"session_config\", \"subjects\"}", i)
	}
	req, f := parseSession(entry)
	if f != nil {
		f.message = fmt.Sprintf("batches[%d]: %s", i, f.message)
	}
	return req, f
}
