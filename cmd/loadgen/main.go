// Command loadgen measures a running shotflow through its plugin API: how many sessions per second
// the API accepts, how many jobs per second complete end to end, and how many Temporal history
// events and actions each job costs. With -mode bare it measures the bare baseline on the same
// Temporal frontend instead (one-activity workflows: plain starts, and orders of 50 children, run
// by a worker inside loadgen on its own task queue); -mode both runs the two back to back and
// prints shotflow's rates as a share of the baseline's. Given -pids it reports the CPU seconds
// per job of those processes, read from /proc. It only talks to the addresses it is given
// (loopback by default), stops by itself, and prints a summary for docs/benchmarks.md.
//
//	loadgen -base http://localhost:8080 -key pk_live_… -orders 50 -images 4
//	loadgen -mode both -orders 40 -images 5 -pids temporal=123,postgres=456,worker=789
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/logging"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/workflows"
)

// Modes of loadgen.
const (
	modeShotflow = "shotflow" // shotflow's API and workflows
	modeBare     = "bare"     // the bare baseline alone
	modeBoth     = "both"     // shotflow, then the baseline, then the ratios
)

type options struct {
	mode, base, key, model, temporal, namespace, pids string
	bareShape                                         string
	history, startOnly                                bool
	orders, images, products, concurrency             int
	bareStarts, bareChildren, rounds, orderJobs, jobs int
	timeout, settle                                   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", modeShotflow, "what to measure: shotflow, bare (the baseline alone) or both (back to back, with the ratios)")
	flag.StringVar(&o.base, "base", "http://localhost:8080", "API base URL")
	flag.StringVar(&o.key, "key", "", "plugin API key (default: from .data/dev-credentials.json)")
	flag.StringVar(&o.model, "model", "local/studio-v1", "ai_model of every subject")
	flag.BoolVar(&o.history, "history", true, "count the Temporal history events and actions of the workflows")
	flag.StringVar(&o.temporal, "temporal", "", "Temporal frontend (default: TEMPORAL_ADDRESS, else the Temporal profile's, else 127.0.0.1:7233)")
	flag.StringVar(&o.namespace, "namespace", "", "Temporal namespace (default: TEMPORAL_NAMESPACE, else the Temporal profile's, else default)")
	flag.StringVar(&o.pids, "pids", "", "processes whose CPU seconds per job to report, as name=pid,…; postgres=PID (the postmaster) and PID+ count child processes too")
	flag.BoolVar(&o.startOnly, "start-only", false, "measure acceptance and bare starts alone: stop (SIGSTOP) the -pids process named worker while sessions are accepted, and start the bare worker after the bare starts, so the work they start does not compete with them")
	flag.IntVar(&o.orders, "orders", 20, "sessions to submit")
	flag.IntVar(&o.products, "products", 1, "subjects (products) per session")
	flag.IntVar(&o.images, "images", 5, "images_count per subject")
	flag.IntVar(&o.concurrency, "concurrency", 8, "sessions (and bare workflows) started at once")
	flag.IntVar(&o.bareStarts, "bare-starts", 0, "bare one-activity workflows to start (default: -orders)")
	flag.StringVar(&o.bareShape, "bare-shape", shapePlain, "what the bare starts carry: plain (nothing) or order (the input, search attributes and memo of a 1-job plugin order's start; the namespace needs shotflow's search attributes)")
	flag.IntVar(&o.bareChildren, "bare-children", 50, "children per bare order; the bare orders hold as many jobs as the shotflow run, rounded up")
	flag.IntVar(&o.orderJobs, "order-jobs", 0, "measure the jobs end to end on sessions of their own, of this many one-image subjects each (as many jobs as -orders sessions hold), after the accepted sessions have finished; 0: on the accepted sessions themselves. -order-jobs 50 compares like with like: orders of 50 jobs against the bare orders of 50 children")
	flag.IntVar(&o.jobs, "jobs", 0, "with -order-jobs: how many jobs its sessions hold, rounded up to whole sessions (default: as many as the accepted sessions hold)")
	flag.IntVar(&o.rounds, "rounds", 1, "with -mode both: measure this many times over and print each ratio's median as well (one run's rates swing by a quarter on a small machine)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on a round (and on connecting) after this long")
	flag.DurationVar(&o.settle, "settle", time.Minute, "before each measured window, wait up to this long until the -pids processes are quiet (under 15% of a core together), so that no window pays for what the phase before it left running; 0: do not wait")
	flag.Parse()
	if o.key == "" {
		o.key = keyFromDevCredentials()
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// keepAliveClient is an HTTP client that keeps a connection open for each of concurrency
// requests at once, as a plugin's client would. (The default transport keeps two per host: at 8
// requests at once the others would open and close a connection each, a cost bare gRPC starts,
// multiplexed on one connection, do not pay.)
func keepAliveClient(concurrency int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(concurrency, 2)
	return &http.Client{Timeout: time.Minute, Transport: t}
}

func keyFromDevCredentials() string {
	data, err := os.ReadFile(".data/dev-credentials.json")
	if err != nil {
		return ""
	}
	var c struct {
		Key string `json:"plugin_api_key"`
	}
	_ = json.Unmarshal(data, &c)
	return c.Key
}

type api struct {
	base, key string
	http      *http.Client
}

// call sends one request, waiting out 429 answers as their Retry-After asks.
func (a *api) call(ctx context.Context, method, path string, body, out any) (int, error) {
	for {
		status, err := a.once(ctx, method, path, body, out)
		var limited *rateLimited
		if !errors.As(err, &limited) {
			return status, err
		}
		select {
		case <-ctx.Done():
			return status, ctx.Err()
		case <-time.After(limited.wait):
		}
	}
}

type rateLimited struct{ wait time.Duration }

func (r *rateLimited) Error() string { return "rate limited" }

func (a *api) once(ctx context.Context, method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+"/api/v1/plugin"+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Api-Key", a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests {
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return resp.StatusCode, &rateLimited{wait: time.Duration(max(secs, 1)) * time.Second}
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

func run(o options) error {
	if !slices.Contains([]string{modeShotflow, modeBare, modeBoth}, o.mode) {
		return fmt.Errorf("-mode %q: want shotflow, bare or both", o.mode)
	}
	if o.bareShape != shapePlain && o.bareShape != shapeOrder {
		return fmt.Errorf("-bare-shape %q: want plain or order", o.bareShape)
	}
	if o.mode != modeBare && o.key == "" {
		return errors.New("no -key and no .data/dev-credentials.json")
	}
	watch, err := parsePids(o.pids)
	if err != nil {
		return err
	}
	if _, ok := workerPID(watch); o.startOnly && o.mode != modeBare && !ok {
		return errors.New("-start-only needs the worker's pid in -pids (worker=PID) to pause it while sessions are accepted")
	}
	m := meter{proc: "/proc", watch: append(watch, watched{name: "loadgen", pid: os.Getpid()})}
	if _, err := m.sample(); err != nil { // a wrong pid is reported before the load runs
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	// Every mode needs Temporal: the baseline starts workflows, and shotflow's side waits for its
	// packshot's preparation workflow (waitPrepared) and, with -history, reads histories. Resolved
	// first, so a bad Temporal setting is reported before the load runs.
	conn, err := temporalConnection(o)
	if err != nil {
		return err
	}
	log, err := logging.New("warn", "console") // the SDK's own logger would print every activity
	if err != nil {
		return err
	}
	c, err := conn.Dial(ctx, log)
	if err != nil {
		return err
	}
	defer c.Close()
	if o.mode != modeBoth && o.rounds > 1 {
		return errors.New("-rounds needs -mode both: the rounds compare shotflow with the baseline")
	}
	var rounds [][]ratio
	for i := range max(o.rounds, 1) {
		if o.rounds > 1 {
			fmt.Printf("round %d of %d\n", i+1, o.rounds)
		}
		rctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		rs, err := measure(rctx, o, c, m)
		cancel()
		if err != nil {
			return err
		}
		if rs != nil {
			rounds = append(rounds, rs)
		}
	}
	if len(rounds) > 1 {
		fmt.Printf("median of %d rounds\n", len(rounds))
		printRatios(os.Stdout, medianRatios(rounds))
	}
	return nil
}

// measure runs what o.mode asks for once, prints it, and returns the ratios (none unless -mode
// both). With -mode both -start-only the bare starts are measured right before and right after
// the sessions are accepted (the worker still paused), and their rate is taken over both phases:
// a machine that warms up (or slows down) during the round then favours neither side.
func measure(ctx context.Context, o options, c client.Client, m meter) ([]ratio, error) {
	bare := newBareRun(o, c, m)
	defer bare.stop()
	shotflow := func(ctx context.Context, whilePaused func() error) (shotflowResult, error) {
		return runShotflow(ctx, o, c, m, whilePaused)
	}
	return measureRound(ctx, o, bare, shotflow, os.Stdout)
}

// baseline is the bare side of a round (bareRun): phases of plain starts, then the rest.
type baseline interface {
	// starts measures one phase of plain starts; the phases of a round add up.
	starts(ctx context.Context) error
	// finish measures a start phase if none was, then the bare orders, and returns the result.
	finish(ctx context.Context) (bareResult, error)
}

// measureRound is measure's order of work: with -mode both -start-only, A-B-A (bare starts, the
// sessions accepted by shotflow, bare starts again while shotflow's worker is still paused, then
// shotflow's jobs and the rest of the baseline); otherwise shotflow, then the baseline. It prints
// each side's result and the ratios to w and returns the ratios (none unless -mode both).
func measureRound(ctx context.Context, o options, bare baseline, shotflow func(ctx context.Context, whilePaused func() error) (shotflowResult, error), w io.Writer) ([]ratio, error) {
	var s *shotflowResult
	if o.mode != modeBare {
		whilePaused := func() error { return nil }
		if o.mode == modeBoth && o.startOnly {
			if err := bare.starts(ctx); err != nil {
				return nil, err
			}
			whilePaused = func() error { return bare.starts(ctx) }
		}
		r, err := shotflow(ctx, whilePaused)
		if err != nil {
			return nil, err
		}
		s = &r
		s.print(w)
	}
	if o.mode == modeShotflow {
		return nil, nil
	}
	b, err := bare.finish(ctx)
	if err != nil {
		return nil, err
	}
	b.print(w)
	if s == nil {
		return nil, nil
	}
	rs := ratiosOf(*s, b)
	printRatios(w, rs)
	return rs, nil
}

// jobsPerSession is how many jobs one session of the run creates.
func (o options) jobsPerSession() int { return o.products * o.images }

// jobsMeasured is how many jobs the jobs/s end to end of shotflow's side count, and the bare
// orders hold: the accepted sessions' (with -order-jobs, sessions of their own hold as many, or
// -jobs, rounded up to whole sessions).
func (o options) jobsMeasured() int {
	n := o.orders * o.jobsPerSession()
	if o.orderJobs > 0 {
		n = cmp.Or(o.jobs, n)
		n = max(1, (n+o.orderJobs-1)/o.orderJobs) * o.orderJobs
	}
	return n
}

// runShotflow submits o.orders sessions through the API and waits until every order is finished.
// With -start-only the worker is paused while the sessions are accepted; whilePaused runs after
// them, before the worker resumes, and the jobs are timed from the resume (no job can run
// before it). With -order-jobs the jobs are measured on sessions of their own instead (jobsPhase).
func runShotflow(ctx context.Context, o options, c client.Client, m meter, whilePaused func() error) (shotflowResult, error) {
	a := &api{base: strings.TrimRight(o.base, "/"), key: o.key, http: keepAliveClient(o.concurrency)}
	prefix := fmt.Sprintf("load-%d", time.Now().UnixNano())
	refs, assetID, err := setupProducts(ctx, a, prefix, max(o.products, o.orderJobs))
	if err != nil {
		return shotflowResult{}, err
	}
	if err := waitPrepared(ctx, c, assetID); err != nil {
		return shotflowResult{}, fmt.Errorf("packshot upload %s not prepared: %w", assetID, err)
	}
	subjects := subjectsOf(refs[:o.products], o.images, o.model)
	if err := m.settleBefore(ctx, o.settle, "the sessions"); err != nil {
		return shotflowResult{}, err
	}
	before, err := m.sample()
	if err != nil {
		return shotflowResult{}, err
	}
	resume := func() error { return nil }
	if pid, _ := workerPID(m.watch); o.startOnly {
		if resume, err = pauseProcess(pid); err != nil {
			return shotflowResult{}, err
		}
	}
	start := time.Now()
	accepted, orders, jobIDs, err := submitSessions(ctx, a, subjects, o.orders, o.concurrency)
	var acceptCPU map[string]float64
	if err == nil {
		acceptCPU, err = m.perJob(before, accepted.count)
	}
	if err == nil {
		err = whilePaused()
	}
	if o.startOnly {
		start = time.Now()
	}
	if err = cmp.Or(err, resume()); err != nil { // the worker resumes whatever happened
		return shotflowResult{}, err
	}
	if err := waitOrders(ctx, c, orders); err != nil {
		return shotflowResult{}, err
	}
	r := shotflowResult{accepted: accepted, acceptCPU: acceptCPU, jobs: phase{count: len(jobIDs), secs: time.Since(start).Seconds()}}
	if err := checkOrders(ctx, a, orders); err != nil {
		return r, err
	}
	jobsPerOrder := o.jobsPerSession()
	if o.orderJobs > 0 {
		r.acceptedJobs, r.jobsPerAccepted = r.jobs, jobsPerOrder
		jobsPerOrder = o.orderJobs
		if err := m.settleBefore(ctx, o.settle, "the jobs"); err != nil {
			return r, err
		}
		if before, err = m.sample(); err != nil {
			return r, err
		}
		if r.jobs, orders, jobIDs, err = jobsPhase(ctx, a, c, subjectsOf(refs[:o.orderJobs], 1, o.model), o.jobsMeasured(), o.concurrency); err != nil {
			return r, err
		}
	}
	if r.cpu, err = m.perJob(before, len(jobIDs)); err != nil {
		return r, err
	}
	r.jobsPerOrder = jobsPerOrder
	if o.history {
		orderIDs := make([]string, len(orders))
		for i, id := range orders {
			orderIDs[i] = "order/" + id
		}
		for i, id := range jobIDs {
			jobIDs[i] = "job/" + id
		}
		r.cost, err = jobCost(ctx, c, jobIDs, orderIDs, jobsPerOrder)
	}
	return r, err
}

// subjectsOf is a session's subjects: each of refs with images images of model.
func subjectsOf(refs []string, images int, model string) []map[string]any {
	subjects := make([]map[string]any, len(refs))
	for i, ref := range refs {
		subjects[i] = map[string]any{"product_ref": ref, "images_count": images, "ai_model": model}
	}
	return subjects
}

// jobsPhase is -order-jobs' measurement of the jobs end to end: at least jobs jobs in sessions of
// subjects (one job each), concurrency at a time, timed from the first request until the last
// order has finished. It returns the phase, the orders and their jobs.
func jobsPhase(ctx context.Context, a *api, c client.Client, subjects []map[string]any, jobs, concurrency int) (phase, []string, []string, error) {
	start := time.Now()
	sessions := max(1, (jobs+len(subjects)-1)/len(subjects))
	_, orders, jobIDs, err := submitSessions(ctx, a, subjects, sessions, concurrency)
	if err != nil {
		return phase{}, nil, nil, err
	}
	if err := waitOrders(ctx, c, orders); err != nil {
		return phase{}, nil, nil, err
	}
	p := phase{count: len(jobIDs), secs: time.Since(start).Seconds()}
	return p, orders, jobIDs, checkOrders(ctx, a, orders)
}

// submitSessions posts n sessions of subjects, concurrency at a time, and returns the acceptance
// phase (its latencies sorted), the order IDs and the job IDs.
func submitSessions(ctx context.Context, a *api, subjects []map[string]any, n, concurrency int) (phase, []string, []string, error) {
	var (
		mu       sync.Mutex
		jobIDs   []string
		orders   []string
		latency  []time.Duration
		wg       sync.WaitGroup
		firstErr error
	)
	sem := make(chan struct{}, max(concurrency, 1))
	start := time.Now()
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t0 := time.Now()
			var resp struct {
				OrderID  string `json:"order_id"`
				Subjects []struct {
					JobIDs []string `json:"job_ids"`
				} `json:"subjects"`
			}
			_, err := a.call(ctx, http.MethodPost, "/jobs", map[string]any{
				"session_config": map[string]any{"aspect_ratio": "1:1"}, "subjects": subjects,
			}, &resp)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmp.Or(firstErr, err)
				return
			}
			latency = append(latency, time.Since(t0))
			orders = append(orders, resp.OrderID)
			for _, s := range resp.Subjects {
				jobIDs = append(jobIDs, s.JobIDs...)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return phase{}, nil, nil, firstErr
	}
	slices.Sort(latency)
	return phase{count: len(orders), secs: time.Since(start).Seconds(), latency: latency}, orders, jobIDs, nil
}

// waitOrders waits until every order's workflow has completed, as the bare side waits for its
// workflows: a long poll of Temporal per order, where polling the API every 200 ms would load the
// machine the jobs run on with requests the baseline does not send. An order's workflow completes
// after its jobs' (each after its settlement), so its read model is final by then; checkOrders
// confirms that through the API, outside the timed window. A workflow not found yet (its start
// left to the sweeper) is looked for again until ctx ends.
func waitOrders(ctx context.Context, c client.Client, orders []string) error {
	for _, id := range orders {
		if err := awaitWorkflow(ctx, c, workflows.OrderWorkflowID(id), time.Time{}); err != nil {
			return fmt.Errorf("order %s: %w", id, err)
		}
	}
	return nil
}

// awaitWorkflow waits until the workflow id has completed, looking again every workflowPoll for
// one that does not exist yet, until notFoundUntil (the zero time: for as long as ctx allows).
func awaitWorkflow(ctx context.Context, c client.Client, id string, notFoundUntil time.Time) error {
	for {
		err := c.GetWorkflow(ctx, id, "").Get(ctx, nil)
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) || !notFoundUntil.IsZero() && time.Now().After(notFoundUntil) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(workflowPoll):
		}
	}
}

// workflowPoll is how often awaitWorkflow looks for a workflow that has not started yet.
var workflowPoll = 200 * time.Millisecond

// checkOrders reads every order through the API once and fails on one still in progress.
func checkOrders(ctx context.Context, a *api, orders []string) error {
	for _, id := range orders {
		var order struct {
			Status string `json:"status"`
		}
		if _, err := a.call(ctx, http.MethodGet, "/orders/"+id, nil, &order); err != nil {
			return err
		}
		if order.Status == "in_progress" {
			return fmt.Errorf("order %s: workflow completed, yet the API shows it in progress", id)
		}
	}
	return nil
}

// bareRun is the bare baseline of one round, run on its own task queue by a worker inside
// loadgen: one or more phases of plain starts (starts), then the runs of those starts and the
// 50-child orders holding as many jobs as the shotflow run (finish).
type bareRun struct {
	o      options
	c      client.Client
	m      meter
	prefix string
	w      worker.Worker // started before the first starts or, with -start-only, after the last
	r      bareResult
	runs   []client.WorkflowRun
	window cpuSample // the CPU ticks spent within the start phases
}

func newBareRun(o options, c client.Client, m meter) *bareRun {
	return &bareRun{o: o, c: c, m: m, prefix: fmt.Sprintf("loadgen-bare-%d", time.Now().UnixNano()),
		r: bareResult{children: max(o.bareChildren, 1)}, window: cpuSample{}}
}

// stop stops the bare worker, if it was started.
func (b *bareRun) stop() {
	if b.w != nil {
		b.w.Stop()
	}
}

// starts measures one phase of -bare-starts plain starts (default -orders). The phases of a round
// add up: their rate is all their starts over all their seconds.
func (b *bareRun) starts(ctx context.Context) error {
	if b.w == nil && !b.o.startOnly {
		w, err := startBareWorker(b.c, b.prefix)
		if err != nil {
			return err
		}
		b.w = w
	}
	if err := b.m.settleBefore(ctx, b.o.settle, "the bare starts"); err != nil {
		return err
	}
	before, err := b.m.sample()
	if err != nil {
		return err
	}
	n := cmp.Or(b.o.bareStarts, b.o.orders)
	p, runs, err := bareStarts(ctx, b.c, b.prefix, fmt.Sprintf("%s-%d", b.prefix, len(b.runs)), b.o.bareShape, n, b.o.concurrency)
	if err != nil {
		return err
	}
	after, err := b.m.sample()
	if err != nil {
		return err
	}
	b.window.add(before, after)
	b.runs = append(b.runs, runs...)
	b.r.starts = b.r.starts.join(p)
	return nil
}

// finish measures a start phase if none was, waits for every started run, then runs the bare
// orders, and returns the round's bare result.
func (b *bareRun) finish(ctx context.Context) (bareResult, error) {
	r := &b.r
	if len(b.runs) == 0 {
		if err := b.starts(ctx); err != nil {
			return *r, err
		}
	}
	n := len(b.runs)
	r.startWindowCPU = b.window.perJob(n)
	before, err := b.m.sample()
	if err != nil {
		return *r, err
	}
	if b.w == nil {
		if b.w, err = startBareWorker(b.c, b.prefix); err != nil {
			return *r, err
		}
	}
	if err := waitAll(ctx, b.runs); err != nil {
		return *r, err
	}
	after, err := b.m.sample()
	if err != nil {
		return *r, err
	}
	// The starts' CPU: within their phases, and while their runs ran to the end.
	spent := maps.Clone(b.window)
	spent.add(before, after)
	r.startCPU = spent.perJob(n)
	parents := max(1, (b.o.jobsMeasured()+r.children-1)/r.children)
	if err := b.m.settleBefore(ctx, b.o.settle, "the bare jobs"); err != nil {
		return *r, err
	}
	if before, err = b.m.sample(); err != nil {
		return *r, err
	}
	var parentIDs []string
	r.jobs, parentIDs, err = bareOrders(ctx, b.c, b.prefix, b.prefix, parents, r.children, b.o.concurrency)
	if err != nil {
		return *r, err
	}
	if r.cpu, err = b.m.perJob(before, r.jobs.count); err != nil {
		return *r, err
	}
	if b.o.history {
		var childIDs []string
		for i := range min(r.children, maxSample) {
			childIDs = append(childIDs, fmt.Sprintf("%s/%d", parentIDs[0], i))
		}
		r.cost, err = jobCost(ctx, b.c, childIDs, parentIDs, r.children)
	}
	return *r, err
}

// meter samples the CPU of the watched processes.
type meter struct {
	proc  procFS
	watch []watched
}

func (m meter) sample() (cpuSample, error) { return m.proc.sample(m.watch) }

// perJob is the CPU seconds per job each watched process spent since before.
func (m meter) perJob(before cpuSample, jobs int) (map[string]float64, error) {
	after, err := m.sample()
	if err != nil {
		return nil, err
	}
	return cpuSecondsPerJob(before, after, jobs), nil
}

// jobCost is the cost of one job: the mean of the job histories plus the mean parent history
// spread over its jobsPerParent jobs.
func jobCost(ctx context.Context, c client.Client, jobIDs, parentIDs []string, jobsPerParent int) (perJobCost, error) {
	jobs, err := sampleHistories(ctx, c, jobIDs)
	if err != nil {
		return perJobCost{}, err
	}
	parents, err := sampleHistories(ctx, c, parentIDs)
	return perJobCost{job: jobs, parent: parents, jobsPerParent: jobsPerParent}, err
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(time.Millisecond)
}

// setupProducts uploads one packshot image and registers it for n new products; it returns their
// refs and the upload's asset ID.
func setupProducts(ctx context.Context, a *api, prefix string, n int) ([]string, string, error) {
	img := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	for y := range 200 {
		for x := range 200 {
			c := color.NRGBA{255, 255, 255, 255}
			if x > 60 && x < 140 && y > 30 && y < 180 {
				c = color.NRGBA{40, 120, 60, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	var up struct {
		AssetID   string `json:"asset_id"`
		UploadURL string `json:"upload_url"`
	}
	if _, err := a.call(ctx, http.MethodPost, "/assets/upload", map[string]any{
		"mode": "presigned", "filename": "p.png", "content_type": "image/png", "size_bytes": buf.Len(),
	}, &up); err != nil {
		return nil, "", err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, up.UploadURL, bytes.NewReader(buf.Bytes()))
	req.Header.Set("Content-Type", "image/png")
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("upload: %s", resp.Status)
	}
	var refs []string
	for start := 0; start < n; start += 100 {
		var items []map[string]any
		for i := start; i < min(n, start+100); i++ {
			ref := fmt.Sprintf("%s-%03d", prefix, i)
			refs = append(refs, ref)
			items = append(items, map[string]any{"asset_id": up.AssetID, "product_ref": ref,
				"product_metadata": map[string]any{"display_name": ref}})
		}
		if _, err := a.call(ctx, http.MethodPost, "/packshots", map[string]any{"packshots": items}, nil); err != nil {
			return nil, "", err
		}
	}
	return refs, up.AssetID, nil
}

// waitPrepared waits until the PrepareInputWorkflow of the packshot upload has finished (the API
// starts it when the bytes are stored, the sweeper if that start failed), so that the measured
// sessions find their packshot ready, as a shop's sessions find packshots uploaded long before.
// A job accepted while its input is still being prepared waits for that workflow's input-ready
// signal: one more event in its history, and the preparation's signals to every such job would
// load the measurement.
func waitPrepared(ctx context.Context, c client.Client, assetID string) error {
	return awaitWorkflow(ctx, c, workflows.PrepareInputWorkflowID(assetID), time.Now().Add(time.Minute))
}

// temporalConnection reaches Temporal the way shotflow's processes do (TEMPORAL_* variables,
// profiles, TLS), with -temporal and -namespace winning when given.
func temporalConnection(o options) (temporalconn.Connection, error) {
	cfg, err := config.Load()
	if err != nil {
		return temporalconn.Connection{}, err
	}
	cfg.TemporalAddress = cmp.Or(o.temporal, cfg.TemporalAddress)
	cfg.TemporalNamespace = cmp.Or(o.namespace, cfg.TemporalNamespace)
	return temporalconn.Resolve(cfg)
}
