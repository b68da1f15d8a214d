package engine

import (
	"encoding/json"

	"github.com/shotflow/shotflow/internal/providers/errorcat"
	"github.com/shotflow/shotflow/internal/providers/local"
	"github.com/shotflow/shotflow/internal/providers/testmode"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// Test mode's rehearsable outcomes (issue 26, point 4; docs/test-mode.md). A test key's request
// may ask what becomes of its jobs: test_outcome on each subject of a plugin session and at the
// top level of an external generation request. A test-mode job renders on the local studio
// whatever its model (activities, testmode.Studio), and its attempts fail, fail and then succeed,
// or take their time as its outcome says, through the real workflows, retries and webhooks.

// TestOutcome is a request's test_outcome as the façades decode it (strictly: no other member);
// a member left out is nil. The engine checks it (checkTestOutcome): a live key may not send it.
type TestOutcome struct {
	// FailWith is an error category (errorcat): every attempt fails with it, after the
	// RetryableFailures first ones.
	FailWith *string `json:"fail_with"`
	// RetryableFailures is how many first attempts fail TRANSIENT_INFRA (0 to
	// testmode.MaxRetryableFailures).
	RetryableFailures *int `json:"retryable_failures"`
	// DelayMS is how long each attempt takes, in milliseconds (0 to testmode.MaxDelay).
	DelayMS *int `json:"delay_ms"`
}

// checkTestOutcome checks the test_outcome named field of a request (test: of a test key) and
// returns it as jobs.test_outcome keeps it: nil when the request sent none. A live key's
// test_outcome, or a member out of range, is KindInvalid naming the field or the member.
func checkTestOutcome(field string, o *TestOutcome, test bool) (*string, error) {
	if o == nil {
		return nil, nil
	}
	if !test {
		return nil, refuse(KindInvalid, "", field,
			"is accepted only with a test key (pk_test_…, mk_test_…); a live key's jobs always run for real. Remove it, or send the request with a test key.")
	}
	var out testmode.Outcome
	if o.FailWith != nil {
		if *o.FailWith == "" {
			return nil, refuse(KindInvalid, "", field+".fail_with", "must not be empty; omit it for an outcome that succeeds.")
		}
		out.FailWith = errorcat.Category(*o.FailWith)
	}
	if o.RetryableFailures != nil {
		out.RetryableFailures = *o.RetryableFailures
	}
	if o.DelayMS != nil {
		out.DelayMS = *o.DelayMS
	}
	if member, problem := out.Check(); member != "" {
		return nil, refuse(KindInvalid, "", field+"."+member, "%s", problem)
	}
	encoded := out.Encode()
	return &encoded, nil
}

// decodedTestOutcome is a job's stored test_outcome as a request would send it (a clone that
// copies its source's subjects); nil for none.
func decodedTestOutcome(stored *string) *TestOutcome {
	o, err := testmode.Decode(stored)
	if err != nil || stored == nil || o == (testmode.Outcome{}) {
		return nil
	}
	var out TestOutcome
	if json.Unmarshal([]byte(o.Encode()), &out) != nil {
		return nil
	}
	return &out
}

// jobOptions are the JobWorkflow options of an order's jobs: test mode's retry schedule, in
// seconds (workflows.TestRetrySchedule), for a test-mode order's; the configured ones otherwise.
func (e *core) jobOptions(test bool) workflows.JobOptions {
	opts := e.cfg.JobOptions
	if test {
		opts.Retry = workflows.TestRetrySchedule
	}
	return opts
}

// generateProvider is the provider whose generate task queue runs the job's attempts: its
// model's, or for a test-mode job the local studio's, which renders it (never a paid provider's
// queue, whose throttle it would take a share of).
func generateProvider(j *models.Job) string {
	if j.TestMode {
		return local.Name
	}
	return j.Provider()
}
