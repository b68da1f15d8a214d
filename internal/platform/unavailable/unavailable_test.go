package unavailable_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/api/serviceerror"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/platform/unavailable"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// httpAnswer is an HTTP client's response error as the S3 client's carry it (HTTPStatusCode);
// internal/platform/blobstore's tests meet the real ones from an S3 server.
type httpAnswer int

func (h httpAnswer) Error() string       { return "http response error StatusCode: " + fmt.Sprint(int(h)) }
func (h httpAnswer) HTTPStatusCode() int { return int(h) }

func TestIs(t *testing.T) {
	ctx := context.Background()
	addr := closedPort(t)
	_, refused := net.DialTimeout("tcp", addr, time.Second)
	_, pgRefused := pgconn.Connect(ctx, "postgres://u@"+addr+"/db?sslmode=disable&connect_timeout=2")
	expired, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-expired.Done()
	_, pgExpired := pgconn.Connect(expired, "postgres://u@"+closedPort(t)+"/db?sslmode=disable")
	var connectErr *pgconn.ConnectError
	if !errors.As(pgRefused, &connectErr) {
		t.Fatalf("a refused connect is %T %v, want a *pgconn.ConnectError", pgRefused, pgRefused)
	}

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), true},
		{"bad connection", driver.ErrBadConn, true},
		{"connection closed mid-answer", io.ErrUnexpectedEOF, true},
		{"connection closed", fmt.Errorf("read: %w", io.EOF), true},
		{"refused dial", refused, true},
		{"refused PostgreSQL connect", fmt.Errorf("open: %w", pgRefused), true},
		{"PostgreSQL connect past its deadline", pgExpired, true},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting up, met while connecting", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"Temporal unavailable", fmt.Errorf("start: %w", serviceerror.NewUnavailable("down")), true},
		{"Temporal deadline", serviceerror.NewDeadlineExceeded("slow"), true},
		{"Temporal namespace unavailable", serviceerror.NewNamespaceUnavailable("default"), true},
		{"S3 503 SlowDown", fmt.Errorf("get: %w", httpAnswer(503)), true},
		{"S3 500 InternalError", httpAnswer(500), true},
		{"a proxy's 502", httpAnswer(502), true},

		{"nil", nil, false},
		{"a bug", errors.New("index out of range"), false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"wrong password, met while connecting", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "28P01"}), false},
		{"record not found", gorm.ErrRecordNotFound, false},
		{"closed pool", sql.ErrConnDone, false},
		{"finished transaction", sql.ErrTxDone, false},
		{"Temporal not found", serviceerror.NewNotFound("no such workflow"), false},
		{"Temporal invalid argument", serviceerror.NewInvalidArgument("bad"), false},
		{"S3 403 AccessDenied", fmt.Errorf("put: %w", httpAnswer(403)), false},
		{"S3 404 NoSuchKey", httpAnswer(404), false},
		{"S3 416 InvalidRange", httpAnswer(416), false},
	} {
		if got := unavailable.Is(tc.err); got != tc.want {
			t.Errorf("%s: Is(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestInRequest(t *testing.T) {
	bug := errors.New("finished transaction")
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	if unavailable.InRequest(live, bug) {
		t.Error("a bug in a live request is an outage")
	}
	if !unavailable.InRequest(ended, bug) {
		t.Error("an error after the request's context ended is not an outage")
	}
	if !unavailable.InRequest(live, context.DeadlineExceeded) {
		t.Error("a deadline error in a live request is not an outage")
	}
	if unavailable.InRequest(ended, nil) {
		t.Error("no error is an outage")
	}
}

func TestDependencyError(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.5:5432: i/o timeout")
	err := fmt.Errorf("ready: %w", &unavailable.DependencyError{Dependency: "database", Err: cause})
	var dep *unavailable.DependencyError
	if !errors.As(err, &dep) || dep.Dependency != "database" || !errors.Is(err, cause) {
		t.Fatalf("errors.As(%v) = %v", err, dep)
	}
	if got := dep.Error(); got != "database: "+cause.Error() {
		t.Errorf("Error() = %q", got)
	}
}
