package plugin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// Round trips: the statements the database sees while it accepts a session (testdb.RecordStatements).
// A regression that brings a query back (one per subject, a second read of the key) fails these
// tests, which list every statement. docs/benchmarks.md ("Database round trips of an accepted
// session") keeps the history.

// recordStatements records every statement of e.db until the returned function is called, which
// returns them.
func (e *env) recordStatements() func() []string {
	e.t.Helper()
	return testdb.RecordStatements(e.db)
}

// sessionStatements are the statements of one accepted POST /jobs of the given subjects, sent
// with the headers (name, value, ...).
func (e *env) sessionStatements(headers []string, subjects ...map[string]any) []string {
	e.t.Helper()
	// The key's first use of the minute records its last_used_at (one UPDATE, at most once a
	// minute per key): a request before the measured one leaves the steady cost of a session.
	require.Equal(e.t, http.StatusOK, e.do(http.MethodGet, p("/me"), e.key, nil).Code)
	stop := e.recordStatements()
	rec := e.do(http.MethodPost, p("/jobs"), e.key, session(subjects...), headers...)
	statements := stop()
	require.Equal(e.t, http.StatusCreated, rec.Code, rec.Body.String())
	return statements
}

// acceptedSessionStatements is what accepting one session costs PostgreSQL, whatever its number
// of subjects and images: the key with its installation (1), the subjects' products with their
// approved packshots (1), then one statement in autocommit that inserts the order, its jobs and
// their ledger entries and reserves the credits (models.PlaceOrder). The first request of a key
// in a minute adds one UPDATE of its last_used_at.
const acceptedSessionStatements = 3

// keyedSessionStatements is what a session sent with an Idempotency-Key costs: the key with its
// installation, the Idempotency-Key's claim, the products; then the order's transaction, which
// records the key's answer with the order: BEGIN, the order's statement, the answer, COMMIT.
const keyedSessionStatements = 7

func TestAcceptedSessionRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refs    []string
		headers []string
		want    int
	}{
		{"one subject", []string{"p1"}, nil, acceptedSessionStatements},
		{"three subjects", []string{"p1", "p2", "p3"}, nil, acceptedSessionStatements},
		{"three subjects, Idempotency-Key", []string{"p1", "p2", "p3"}, []string{"Idempotency-Key", "roundtrips-1"}, keyedSessionStatements},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, onPostgres()).committing()
			subjects := make([]map[string]any, len(tc.refs))
			for i, ref := range tc.refs {
				e.approved(ref)
				subjects[i] = subject(ref) // 2 images each
			}
			statements := e.sessionStatements(tc.headers, subjects...)
			require.Equal(t, tc.want, len(statements),
				"statements of one accepted session of %d subjects:\n%s", len(tc.refs), strings.Join(statements, "\n"))
			require.Equal(t, int64(2*len(tc.refs)), e.count(&models.Job{}, "1 = 1"))
		})
	}
}

// On PostgreSQL a session the balance cannot cover is refused by the order's statement itself (the
// accounts table's CHECK), alone in autocommit or, with an Idempotency-Key, in its transaction:
// either way it answers 402 in the envelope and writes nothing, and the balance is untouched.
func TestShortBalanceOnPostgresAnswers402AndWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, onPostgres(), withCredits(3)).committing()
	e.approved("p1")
	big := session(map[string]any{"product_ref": "p1", "images_count": 4, "ai_model": "local/studio-v1"})
	e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, big), http.StatusPaymentRequired, plugin.CodeInsufficientCredits)
	e.requireErrorDetails(e.do(http.MethodPost, p("/jobs"), e.key, big, "Idempotency-Key", "short-1"), http.StatusPaymentRequired, plugin.CodeInsufficientCredits)
	e.noOrdersOf(0)
	require.Zero(t, e.count(&models.Job{}, "1 = 1"))
	require.Zero(t, e.count(&models.IdempotencyKey{}, "1 = 1"))
	available, reserved := e.credits()
	require.EqualValues(t, 3, available)
	require.Zero(t, reserved)

	// What the balance covers is accepted and reserved.
	rec := e.do(http.MethodPost, p("/jobs"), e.key, session(map[string]any{"product_ref": "p1", "images_count": 3, "ai_model": "local/studio-v1"}))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	available, reserved = e.credits()
	require.Zero(t, available)
	require.EqualValues(t, 3, reserved)
}
