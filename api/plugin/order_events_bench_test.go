package plugin_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/shotflow/shotflow/api/prefer"
	"github.com/shotflow/shotflow/internal/testsupport/apitest"
	"github.com/shotflow/shotflow/models"
)

// BenchmarkChangeToClient measures how long a client waits, after a job's end commits, for its
// stream's job.completed event and for the answer of a request held with Prefer: wait on the job
// (docs/benchmarks.md, "Waits and streams"). Each iteration ends one job of a fresh session with
// the store, as the activities do, and times both. Reported: p50 and p95 in milliseconds.
func BenchmarkChangeToClient(b *testing.B) {
	for name, opts := range map[string][]envOption{"sqlite": nil, "postgres": {onPostgres()}} {
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, append(opts, withCredits(1<<30), withRateLimit(1<<20))...).committing()
			store := models.NewStore(e.db)
			base := e.serve()
			var streamed, held []time.Duration
			for b.Loop() {
				b.StopTimer()
				s, jobs := e.twoJobSession()
				stream := apitest.OpenSSE(b, base+p("/orders/"+s.OrderID+"/events"), "X-Api-Key", e.key)
				answered := make(chan time.Time, 1)
				go func() {
					req, _ := http.NewRequest(http.MethodGet, base+p("/jobs/"+jobs[0]), nil)
					req.Header.Set("X-Api-Key", e.key)
					req.Header.Set(prefer.HeaderPrefer, "wait=30")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
					answered <- time.Now()
				}()
				for e.handler.Engine.Feed.Waiting() < 2 {
					time.Sleep(time.Millisecond)
				}
				b.StartTimer()
				ctx := b.Context()
				if err := store.BeginAttempt(ctx, jobs[0], 1, 1); err != nil {
					b.Fatal(err)
				}
				if ev, ok := stream.Next(b, 10*time.Second); !ok || ev.Name != "job.started" {
					b.Fatalf("first event %+v", ev)
				}
				ended := time.Now()
				if _, _, err := store.CompleteJob(ctx, jobs[0], 1, nil); err != nil {
					b.Fatal(err)
				}
				ev, ok := stream.Next(b, 10*time.Second)
				if !ok || ev.Name != "job.completed" {
					b.Fatalf("second event %+v", ev)
				}
				streamed = append(streamed, time.Since(ended))
				held = append(held, (<-answered).Sub(ended))
				b.StopTimer()
				stream.Close()
				b.StartTimer()
			}
			report(b, "stream", streamed)
			report(b, "wait", held)
		})
	}
}

// report adds the p50 and p95 of ds, in milliseconds, to the benchmark's results.
func report(b *testing.B, what string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), what+"-p50-ms")
	b.ReportMetric(at(0.95), what+"-p95-ms")
}
