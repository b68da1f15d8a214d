package engine

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// Start deadlines (issue 25, point 3). A generation request of either API may carry a
// Cancel-After header: every job of its order that has not started that long after acceptance is
// cancelled (cancel reason status.CancelDeadline) instead of started, its reservation released and
// its end announced as any cancel's; a job that has started runs to its end. The deadline is the
// job's start_deadline, written with the job in the order's one statement. Two things enforce it,
// both decided by the database as a client's cancel is:
//
//   - BeginAttempt (activities) never begins a job whose deadline has passed: it cancels it
//     instead, and the job's workflow ends not runnable, as for a job a client cancelled;
//   - SweepDeadlines (every worker, at the outbox sweep's interval) cancels the pending jobs whose
//     deadline has passed even if no attempt tries to begin them: jobs still waiting in their
//     order behind ORDER_MAX_CONCURRENT_JOBS, or whose order has not started.

// HeaderCancelAfter is the request header that sets a start deadline on a request's jobs.
const HeaderCancelAfter = "Cancel-After"

// The bounds of Cancel-After, inclusive.
const (
	MinCancelAfter = 10 * time.Second
	MaxCancelAfter = 24 * time.Hour
)

// ParseCancelAfter reads the Cancel-After header of a request from its values
// (http.Header.Values): 0 when there is none, else a duration in Go's syntax ("90s", "2h30m") or a
// whole number of seconds ("600"), from MinCancelAfter to MaxCancelAfter. Anything else, and the
// header sent more than once, is KindInvalid naming the header.
func ParseCancelAfter(values []string) (time.Duration, error) {
	switch len(values) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, refuse(KindInvalid, "", HeaderCancelAfter, "is sent %d times; send it once.", len(values))
	}
	v := values[0]
	d, ok := parseCancelAfter(v)
	if !ok || d < MinCancelAfter || d > MaxCancelAfter {
		return 0, refuse(KindInvalid, "", HeaderCancelAfter,
			"must be a duration from 10s to 24h, in Go's syntax (90s, 2h30m) or a whole number of seconds (600); got %q.", shown(v))
	}
	return d, nil
}

// parseCancelAfter reads a whole number of seconds, else a Go duration; ok is false for neither.
// A number of seconds too large for the bounds reads as just over MaxCancelAfter.
func parseCancelAfter(v string) (d time.Duration, ok bool) {
	if v != "" && strings.Trim(v, "0123456789") == "" {
		// Digits only: ParseInt fails on nothing but a number too large for 64 bits.
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(MaxCancelAfter/time.Second) {
			return MaxCancelAfter + time.Second, true
		}
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(v)
	return d, err == nil
}

// shown is a header value as a refusal quotes it: at most 64 characters.
func shown(v string) string {
	if utf8.RuneCountInString(v) <= 64 {
		return v
	}
	return string([]rune(v)[:64]) + "…"
}

// startDeadline is the start deadline of the jobs of a request accepted at now with Cancel-After
// d (nil when d is 0: no deadline).
func startDeadline(now time.Time, d time.Duration) *time.Time {
	if d <= 0 {
		return nil
	}
	at := now.UTC().Add(d)
	return &at
}

// deadlineBatch is how many jobs past their deadline one step of the sweep reads.
const deadlineBatch = 100

// CancelPastDeadline cancels up to limit pending jobs whose start deadline has passed and whose
// first attempt has not begun, each as a client's cancel is cancelled (one transaction each:
// models.CancelJobNotBegun with status.CancelDeadline, its reservation released and its
// job.cancelled, or record.failed, recorded), then announces them together: their deliveries are
// started, their orders told (workflows.SignalCancelJob) so that they drop them from their queues,
// and they are counted. It returns how many it cancelled and how many it read: fewer read than
// limit means none is left. A job that began between the read and its cancel is left to run.
func (e *Jobs) CancelPastDeadline(ctx context.Context, limit int) (cancelledN, read int, err error) {
	due, err := e.store.JobsPastStartDeadline(ctx, time.Now(), limit)
	if err != nil {
		return 0, 0, err
	}
	var cancelled []*models.Job
	var owed []models.WebhookDelivery
	for _, j := range due {
		c, o, cerr := e.cancelNotBegun(ctx, j.ID, j.Run, status.CancelDeadline)
		if cerr != nil {
			err = cerr
			break // the cancels so far are committed and announced below; the next sweep does the rest
		}
		if c != nil {
			cancelled, owed = append(cancelled, c), append(owed, o...)
		}
	}
	e.announceCancels(ctx, cancelled, owed, "")
	tests := 0
	for _, j := range cancelled {
		if j.TestMode {
			tests++
		}
	}
	e.cfg.Metrics.DeadlineCancelled(metrics.DeadlineBySweep, false, len(cancelled)-tests)
	e.cfg.Metrics.DeadlineCancelled(metrics.DeadlineBySweep, true, tests)
	for _, j := range cancelled {
		e.logger().Info("job cancelled: not started by its Cancel-After deadline",
			zap.String("job_id", j.ID), zap.String("order_id", j.OrderID), zap.Timep("start_deadline", j.StartDeadline))
	}
	return len(cancelled), len(due), err
}

// SweepDeadlines runs CancelPastDeadline every interval until ctx ends, in batches of
// deadlineBatch until none is left each time (RunWorker starts it in every worker, beside the
// outbox sweep).
func (e *Jobs) SweepDeadlines(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			n, read, err := e.CancelPastDeadline(ctx, deadlineBatch)
			if err != nil {
				if ctx.Err() == nil {
					e.logger().Warn("deadline sweep", zap.Error(err))
				}
				break
			}
			if read < deadlineBatch || n == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
