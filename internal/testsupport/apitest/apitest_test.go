package apitest_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/jobtype"
	"github.com/shotflow/shotflow/models/testdb"
)

func TestWithBadParamsReplacesEveryParamSegment(t *testing.T) {
	t.Parallel()
	got := apitest.WithBadParams(gin.RoutesInfo{
		{Method: http.MethodGet, Path: "/orders"},
		{Method: http.MethodGet, Path: "/orders/:id"},
		{Method: http.MethodPost, Path: "/orders/:id/images/:image/vote"},
	}, "%ff")
	want := []apitest.ParamTarget{
		{Method: http.MethodGet, Route: "/orders/:id", Param: "id", Target: "/orders/%ff"},
		{Method: http.MethodPost, Route: "/orders/:id/images/:image/vote", Param: "id", Target: "/orders/%ff/images/%ff/vote"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WithBadParams = %+v\nwant %+v", got, want)
	}
}

func TestTemporalRecordsStartsAndAnswersPollers(t *testing.T) {
	t.Parallel()
	var hooked []any
	tc := apitest.NewTemporal(t, apitest.TemporalOptions{OnStart: func(_ client.StartWorkflowOptions, in any) { hooked = append(hooked, in) }})
	ctx := context.Background()
	for _, id := range []string{"prepare-input/a", "order/b"} {
		if _, err := tc.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id}, "W", id+"-input"); err != nil {
			t.Fatal(err)
		}
	}
	if got := tc.Started("order/"); !reflect.DeepEqual(got, []string{"order/b"}) {
		t.Errorf("Started(order/) = %v", got)
	}
	if s := tc.Starts(); len(s) != 2 || s[0].Input != "prepare-input/a-input" || s[1].Options.ID != "order/b" {
		t.Errorf("Starts = %+v", s)
	}
	if !reflect.DeepEqual(hooked, []any{"prepare-input/a-input", "order/b-input"}) {
		t.Errorf("OnStart saw %v", hooked)
	}
	pollers := func() int {
		res, err := tc.Client.DescribeTaskQueue(ctx, "q", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Pollers)
	}
	if n := pollers(); n != 1 {
		t.Errorf("%d pollers while the generators are up, want 1", n)
	}
	tc.SetGeneratorsDown(true)
	if n := pollers(); n != 0 {
		t.Errorf("%d pollers while the generators are down, want 0", n)
	}
}

func TestTemporalDownHookDecides(t *testing.T) {
	t.Parallel()
	down := true
	tc := apitest.NewTemporal(t, apitest.TemporalOptions{Down: func() bool { return down }})
	tc.SetGeneratorsDown(false) // the hook wins
	res, err := tc.Client.DescribeTaskQueue(context.Background(), "q", 0)
	if err != nil || len(res.Pollers) != 0 {
		t.Fatalf("DescribeTaskQueue = %v, %v; want no pollers while Down reports true", res, err)
	}
}

func TestTemporalOnlyPrefixRefusesOtherStarts(t *testing.T) {
	t.Parallel()
	inner := &failures{TB: t}
	tc := apitest.NewTemporal(inner, apitest.TemporalOptions{OnlyPrefix: "prepare-input/"})
	_, err := tc.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "order/x"}, "W", 1)
	if !errors.Is(err, apitest.ErrUnexpectedStart) || inner.failed == 0 || len(tc.Starts()) != 0 {
		t.Fatalf("start of order/x: err %v, %d failures, starts %v; want it refused, failing the test", err, inner.failed, tc.Starts())
	}
}

func TestNewDepsWiresOneEngine(t *testing.T) {
	t.Parallel()
	d := apitest.NewDeps(t, testdb.Open(t, testdb.SQLiteURL(t)), apitest.Options{})
	if c := d.EngineConfig; c.Temporal != d.Temporal.Client || c.Models != d.Models {
		t.Fatal("the engine does not use the Deps' Temporal client and models")
	}
	// The engine's store is the Deps' database: an account created there is found through it.
	acct, err := models.CreateAccount(d.DB, "wired", 7)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.Engine.Records.Account(context.Background(), acct.ID); err != nil || got.CreditBalance != 7 {
		t.Fatalf("the engine reads account %+v (%v), want the one created in the Deps' database", got, err)
	}
	if got, want := len(d.Engine.Catalog.AIModels(jobtype.All...)), len(d.Models.Models()); got != want || got == 0 {
		t.Fatalf("the engine shows %d models, the Deps' registry %d", got, want)
	}
	if err := d.Blobs.Put(context.Background(), "k", []byte("v"), "text/plain"); err != nil {
		t.Fatalf("blob store: %v", err)
	}
	at := d.Clock.Now()
	d.Clock.Advance(time.Minute)
	if got := d.Clock.Now().Sub(at); got != time.Minute {
		t.Fatalf("the clock moved %v, want 1m", got)
	}
	u := d.Signer.URL(http.MethodGet, "/files/x", at.Add(time.Hour))
	if len(u) < len(apitest.BaseURL) || u[:len(apitest.BaseURL)] != apitest.BaseURL {
		t.Fatalf("signed URL %q is not under %s", u, apitest.BaseURL)
	}
}

// failures is a testing.TB that counts the failures reported to it instead of failing the test.
type failures struct {
	testing.TB
	failed int
}

func (f *failures) Errorf(string, ...any) { f.failed++ }
