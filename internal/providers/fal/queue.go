package fal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// The request statuses of the queue (https://docs.fal.ai/model-endpoints/queue, "Request status").
const (
	statusInQueue    = "IN_QUEUE"
	statusInProgress = "IN_PROGRESS"
	statusCompleted  = "COMPLETED"
)

// maxPollFailures is how many status polls in a row may fail with a retryable category before the
// attempt gives up. The documentation is silent; fal-js retries status reads 5 times on 429, 500,
// 502, 503, 504 and network errors (QUEUE_STATUS_RETRY_CONFIG in libs/client/src/queue.ts).
const maxPollFailures = 5

// cancelTimeout bounds the cancellation sent after the attempt's context has ended.
const cancelTimeout = 5 * time.Second

// maxAnswerBytes caps a JSON answer of the queue read into memory.
const maxAnswerBytes = 16 << 20

// queued is the answer to a submit (https://docs.fal.ai/model-endpoints/queue, "Submit a request"):
// status, result and cancellation go to the URLs it names, which carry only the owner and app of
// the endpoint ID ("Do not build these URLs yourself", https://fal.ai/docs/api-reference/inference-api).
type queued struct {
	RequestID   string `json:"request_id"`
	ResponseURL string `json:"response_url"`
	StatusURL   string `json:"status_url"`
	CancelURL   string `json:"cancel_url"`

	endpoint string // fal endpoint ID, for messages
}

// queueStatus is the answer of status_url: 202 while IN_QUEUE or IN_PROGRESS, 200 once COMPLETED
// (https://fal.ai/docs/api-reference/inference-api, "Queue request lifecycle").
type queueStatus struct {
	Status        string `json:"status"`
	QueuePosition int    `json:"queue_position"`
}

// answer is an HTTP answer of the queue.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// submit posts the input to https://queue.fal.run/{endpoint_id}.
func (p *Provider) submit(ctx context.Context, endpointID string, input any) (*queued, error) {
	body, err := json.Marshal(input)
	if err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: encoding the input of %s: %v", Name, endpointID, err)
	}
	op := "submit to " + endpointID
	a, err := p.call(ctx, http.MethodPost, p.queue+"/"+endpointID, body, op)
	if err != nil {
		return nil, err
	}
	if !a.ok() {
		return nil, classify(op, a, "")
	}
	q := &queued{endpoint: endpointID}
	if err := json.Unmarshal(a.body, q); err != nil {
		return nil, providers.Errorf(errorcat.InternalBug, "%s: %s: decoding the answer: %v", Name, op, err)
	}
	if err := p.checkURLs(q); err != nil {
		return nil, err
	}
	return q, nil
}

// checkURLs makes sure the status and result URLs are there and lead to the queue's own host, the
// only one the API key is sent to. The cancel URL is optional: without it nothing is cancelled.
func (p *Provider) checkURLs(q *queued) error {
	base, err := url.Parse(p.queue)
	if err != nil {
		return providers.Errorf(errorcat.InternalBug, "%s: queue URL %q: %v", Name, p.queue, err)
	}
	if q.StatusURL == "" || q.ResponseURL == "" {
		return providers.Errorf(errorcat.InternalBug, "%s: submit to %s (request %s): the answer lacks status_url or response_url",
			Name, q.endpoint, q.RequestID)
	}
	for _, raw := range []string{q.StatusURL, q.ResponseURL, q.CancelURL} {
		if raw == "" {
			continue // only cancel_url may be missing
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != base.Scheme || u.Host != base.Host {
			return providers.Errorf(errorcat.InternalBug, "%s: submit to %s (request %s): answer URL %q is not on the queue host %s",
				Name, q.endpoint, q.RequestID, raw, base.Host)
		}
	}
	return nil
}

// wait polls the request every PollInterval until it is COMPLETED, heartbeating on every answer.
// When it gives up (ctx ended, or a poll failed for good) it cancels the request on fal first, so
// that an abandoned request does not keep running and billing.
func (p *Provider) wait(ctx context.Context, q *queued) error {
	ticker := time.NewTicker(p.poll)
	defer ticker.Stop()
	start := time.Now()
	last, failures := statusInQueue, 0
	for {
		select {
		case <-ctx.Done():
			return p.abandon(ctx, q, last, start)
		case <-ticker.C:
		}
		st, err := p.status(ctx, q)
		switch {
		case ctx.Err() != nil:
			return p.abandon(ctx, q, last, start)
		case err != nil:
			failures++
			if !providers.Classify(err).Category.Retryable() || failures > maxPollFailures {
				return p.giveUp(ctx, q, err)
			}
			continue
		}
		failures = 0
		last = st.Status
		providers.Heartbeat(ctx, fmt.Sprintf("%s request %s: %s (queue position %d)", Name, q.RequestID, st.Status, st.QueuePosition))
		switch st.Status {
		case statusCompleted:
			return nil
		case statusInQueue, statusInProgress:
		default:
			return p.giveUp(ctx, q, providers.Errorf(errorcat.InternalBug, "%s: status of request %s to %s: unknown status %q",
				Name, q.RequestID, q.endpoint, st.Status))
		}
	}
}

// status reads the request's status_url.
func (p *Provider) status(ctx context.Context, q *queued) (queueStatus, error) {
	op := "status of request " + q.RequestID + " to " + q.endpoint
	a, err := p.call(ctx, http.MethodGet, q.StatusURL, nil, op)
	if err != nil {
		return queueStatus{}, err
	}
	if !a.ok() {
		return queueStatus{}, classify(op, a, q.RequestID)
	}
	var st queueStatus
	if err := json.Unmarshal(a.body, &st); err != nil {
		return queueStatus{}, providers.Errorf(errorcat.InternalBug, "%s: %s: decoding the answer: %v", Name, op, err)
	}
	return st, nil
}

// result reads the model output from response_url. "If the model returned an error, this operation
// returns the same error" (https://fal.ai/docs/inference-api/queue/result), with the model's status
// code and body: the official clients likewise raise a failed request's error from this read, so
// that is where a model's failure is classified.
func (p *Provider) result(ctx context.Context, q *queued) ([]byte, error) {
	op := "result of request " + q.RequestID + " to " + q.endpoint
	a, err := p.call(ctx, http.MethodGet, q.ResponseURL, nil, op)
	if err != nil {
		return nil, err
	}
	if !a.ok() {
		return nil, classify(op, a, q.RequestID)
	}
	return a.body, nil
}

// abandon cancels the request after ctx ended and returns the TRANSIENT_INFRA failure of the attempt.
func (p *Provider) abandon(ctx context.Context, q *queued, last string, start time.Time) error {
	outcome := p.cancel(ctx, q)
	return providers.Errorf(errorcat.TransientInfra, "%s: request %s to %s abandoned while %s after %s: %v; cancellation: %s",
		Name, q.RequestID, q.endpoint, last, time.Since(start).Round(time.Millisecond), context.Cause(ctx), outcome)
}

// giveUp cancels the request after a failure that ends the attempt and returns the failure with
// the outcome of the cancellation added to its message.
func (p *Provider) giveUp(ctx context.Context, q *queued, err error) error {
	e := *providers.Classify(err)
	e.Message += "; cancellation: " + p.cancel(ctx, q)
	return &e
}

// cancel puts the request's cancel_url with a short context of its own, since the attempt's may be
// over, and describes the outcome: 202 {"status":"CANCELLATION_REQUESTED"}, or 400
// {"status":"ALREADY_COMPLETED"} when it is too late (https://docs.fal.ai/model-endpoints/queue,
// https://fal.ai/docs/inference-api/queue/cancel). Like the official clients (fal_client's
// _maybe_cancel_request, fal-js's subscribeToStatus) it ignores a failed cancellation.
func (p *Provider) cancel(ctx context.Context, q *queued) string {
	if q.CancelURL == "" {
		return "no cancel_url"
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	a, err := p.call(cctx, http.MethodPut, q.CancelURL, nil, "cancel of request "+q.RequestID)
	if err != nil {
		return "failed: " + providers.Classify(err).Message
	}
	var st queueStatus
	_ = json.Unmarshal(a.body, &st) // the status is only reported
	return fmt.Sprintf("HTTP %d %s", a.status, st.Status)
}

// call sends one authenticated request to the queue and reads the whole answer. A request that
// gets no HTTP answer fails through providers.TransportError, naming the operation.
func (p *Provider) call(ctx context.Context, method, rawURL string, body []byte, op string) (answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return answer{}, providers.Errorf(errorcat.InternalBug, "%s: %s: %v", Name, op, err)
	}
	req.Header.Set("Authorization", "Key "+p.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{}, providers.TransportError(Name+": "+op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return answer{}, providers.TransportError(Name+": "+op, err)
	}
	if len(data) > maxAnswerBytes {
		// Cut, it would fail to decode with a message that hides why.
		return answer{}, providers.Errorf(errorcat.InternalBug, "%s: %s: answer is larger than %d bytes (HTTP %d)", Name, op, maxAnswerBytes, resp.StatusCode)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}
