// Package testmode renders the jobs of test mode (docs/test-mode.md). Whatever model a test-mode
// job names, it never reaches that model's provider: the local studio renders it, with the "TEST"
// watermark on every output, and its attempts follow the outcome its request asked for
// (test_outcome): fail with a category, fail a number of times before they succeed, take their
// time.
//
// Like the sim provider, an attempt's outcome depends only on the job's outcome and the attempt's
// number, never on process state, so a job behaves the same whichever worker runs each attempt.
package testmode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shotflow/shotflow/internal/providers"
	"github.com/shotflow/shotflow/internal/providers/errorcat"
)

// Bounds of an Outcome.
const (
	// MaxRetryableFailures bounds Outcome.RetryableFailures: more would outlast the job's retry
	// schedule anyway.
	MaxRetryableFailures = 10
	// MaxDelay bounds Outcome.DelayMS, the time one attempt takes.
	MaxDelay = 2 * time.Minute
)

// Outcome is what a test-mode job asks of its attempts, as its request's test_outcome says and
// jobs.test_outcome keeps it. The zero value completes at the first attempt.
type Outcome struct {
	// FailWith makes every attempt after the RetryableFailures first ones fail with this
	// category: a retryable one fails after the job's retries, any other at once. "" succeeds.
	FailWith errorcat.Category `json:"fail_with,omitempty"`
	// RetryableFailures makes the first attempts (this many) fail with TRANSIENT_INFRA.
	RetryableFailures int `json:"retryable_failures,omitempty"`
	// DelayMS is how long each attempt works, in milliseconds, before its result.
	DelayMS int `json:"delay_ms,omitempty"`
}

// Check reports what is wrong with o: the member at fault (fail_with, retryable_failures,
// delay_ms) and why, or "" when o is valid.
func (o Outcome) Check() (member, problem string) {
	if o.FailWith != "" {
		if _, ok := errorcat.Parse(string(o.FailWith)); !ok {
			return "fail_with", fmt.Sprintf("%q is not an error category; use one of %s.", o.FailWith, categoryList())
		}
	}
	if o.RetryableFailures < 0 || o.RetryableFailures > MaxRetryableFailures {
		return "retryable_failures", fmt.Sprintf("must be between 0 and %d.", MaxRetryableFailures)
	}
	if o.DelayMS < 0 || o.DelayMS > int(MaxDelay/time.Millisecond) {
		return "delay_ms", fmt.Sprintf("must be between 0 and %d.", MaxDelay/time.Millisecond)
	}
	return "", ""
}

// categoryList names every error category, for a refusal.
func categoryList() string {
	names := make([]string, len(errorcat.All))
	for i, c := range errorcat.All {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Encode is o as jobs.test_outcome keeps it.
func (o Outcome) Encode() string {
	b, _ := json.Marshal(o) // a struct of a string and two ints always encodes
	return string(b)
}

// Decode reads a job's stored outcome; nil (a job that asked for none) is the zero Outcome.
func Decode(stored *string) (Outcome, error) {
	var o Outcome
	if stored == nil || *stored == "" || *stored == "null" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(*stored), &o); err != nil {
		return o, fmt.Errorf("test_outcome %q: %w", *stored, err)
	}
	if member, problem := o.Check(); member != "" {
		return o, fmt.Errorf("test_outcome %q: %s %s", *stored, member, problem)
	}
	return o, nil
}

// Studio renders test-mode jobs on Local, the local studio (the worker's, so that its caches are
// shared; the zero value renders without caches).
type Studio struct {
	Local providers.Provider
}

// Generate runs one attempt of a test-mode job whose request asked for o: it waits o.DelayMS
// (failing TRANSIENT_INFRA as soon as ctx ends), fails as o says for req.Attempt, or renders
// req on the local studio with the watermark.
func (s Studio) Generate(ctx context.Context, req providers.Request, o Outcome) ([]providers.Output, error) {
	if o.DelayMS > 0 {
		if err := wait(ctx, time.Duration(o.DelayMS)*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if f := Fault(o, req.Attempt); f != nil {
		return nil, f
	}
	if s.Local == nil {
		return nil, providers.Errorf(errorcat.InternalBug, "test mode has no local studio to render with")
	}
	req.Watermark = true
	return s.Local.Generate(ctx, req)
}

// Fault is the failure o asks of the given 1-based attempt (an attempt below 1 counts as the
// first), or nil when that attempt succeeds.
func Fault(o Outcome, attempt int) *providers.Error {
	attempt = max(attempt, 1)
	if attempt <= o.RetryableFailures {
		return providers.Errorf(errorcat.TransientInfra, "rehearsed failure %d of %d (test_outcome.retryable_failures), attempt %d",
			attempt, o.RetryableFailures, attempt)
	}
	if o.FailWith != "" {
		return providers.Errorf(o.FailWith, "rehearsed failure (test_outcome.fail_with %s), attempt %d", o.FailWith, attempt)
	}
	return nil
}

// wait sleeps d, and fails with TRANSIENT_INFRA as soon as ctx ends. The Generate activity
// heartbeats meanwhile.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return providers.Errorf(errorcat.TransientInfra, "rehearsed delay of %s abandoned: %v", d, ctx.Err())
	case <-t.C:
		return nil
	}
}
