// Package unavailable tells a dependency outage from a bug: it recognises the errors that mean the
// database, Temporal or the blob store could not be reached or did not answer in time, so that the
// APIs answer them 503 with Retry-After instead of 500.
package unavailable

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"go.temporal.io/api/serviceerror"
)

// RetryAfterSeconds is the Retry-After of a 503 caused by an unavailable dependency: long enough
// not to hammer a dependency that is coming back, short enough for a brief outage.
const RetryAfterSeconds = 5

// DependencyError is the failure of one named dependency ("database", "blob store", "temporal").
type DependencyError struct {
	Dependency string
	Err        error
}

// Error names the dependency and carries its detail (for logs, never for clients).
func (e *DependencyError) Error() string { return e.Dependency + ": " + e.Err.Error() }

// Unwrap returns the dependency's error.
func (e *DependencyError) Unwrap() error { return e.Err }

// InRequest reports whether err, met while serving a request whose context is ctx, is an outage
// rather than a bug: Is(err), or ctx has ended (its deadline passed or its client left), in which
// case whatever the failed call returned is a consequence of that.
func InRequest(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || Is(err))
}

// Is reports whether err means a dependency was unreachable or too slow: a context deadline or
// cancellation, a network error, a connection closed under a call (io.EOF or
// io.ErrUnexpectedEOF: the database server or a proxy went away mid-answer), a PostgreSQL server
// error whose SQLSTATE says it cannot serve now, a connection the driver gave up on, an HTTP
// service (the blob store's S3 API) answering 5xx, or a Temporal frontend that is unavailable or
// timed out. A connect the server refuses for a reason of its own
// (a wrong password, a database that does not exist) is a misconfiguration, not an outage.
func Is(err error) bool {
	if err == nil {
		return false
	}
	for _, target := range []error{context.DeadlineExceeded, context.Canceled, driver.ErrBadConn, io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, target) {
			return true
		}
	}
	// A failed database connect unwraps to the network error of each address it tried, a
	// driver's timeout to the context's error or to a network timeout: both are caught here.
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// The server's own errors carry their SQLSTATE; the interface keeps this package free of the
	// PostgreSQL driver, which only the store links.
	var server interface{ SQLState() string }
	if errors.As(err, &server) {
		return unavailableSQLState(server.SQLState())
	}
	// An HTTP service's answer (the S3 client's response errors carry their status): a 5xx is a
	// server that cannot serve now (S3's 500 InternalError, 503 SlowDown, a proxy's 502 or 504);
	// a 4xx is an answer about the request, not an outage.
	var answer interface{ HTTPStatusCode() int }
	if errors.As(err, &answer) {
		return answer.HTTPStatusCode() >= 500
	}
	return temporalUnavailable(err)
}

// unavailableSQLState reports the SQLSTATEs of a server that cannot serve now: connection
// exceptions (class 08), insufficient resources (class 53: too many connections, out of memory or
// disk), a statement cancelled by statement_timeout (57014) and a server shutting down or starting
// (57P01–57P03).
func unavailableSQLState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	case code == "57014", code == "57P01", code == "57P02", code == "57P03":
		return true
	}
	return false
}

// temporalUnavailable recognises the Temporal client's calls that found the frontend or the
// namespace unavailable, or that timed out or were cancelled.
func temporalUnavailable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	var namespace *serviceerror.NamespaceUnavailable
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &canceled) || errors.As(err, &namespace)
}
