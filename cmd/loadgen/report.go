package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// phase is one measured stretch of a run: count things (sessions, starts or jobs) in secs, with
// the sorted latencies of the calls that started them when they were timed one by one.
type phase struct {
	count   int
	secs    float64
	latency []time.Duration
}

// rate is the phase's things per second.
func (p phase) rate() float64 {
	if p.secs <= 0 {
		return 0
	}
	return float64(p.count) / p.secs
}

// join is the phase of p and q taken together: their counts over their seconds, their latencies
// merged.
func (p phase) join(q phase) phase {
	latency := slices.Concat(p.latency, q.latency)
	slices.Sort(latency)
	return phase{count: p.count + q.count, secs: p.secs + q.secs, latency: latency}
}

// perJobCost is what one job costs in history: its own workflow and its share of its parent's.
type perJobCost struct {
	job, parent   historySample
	jobsPerParent int
}

// events is the history events per job, its parent's share included.
func (c perJobCost) events() float64 { return c.job.events + c.share(c.parent.events) }

// actions is the Temporal actions per job, its parent's share included.
func (c perJobCost) actions() float64 { return c.job.actions + c.share(c.parent.actions) }

func (c perJobCost) share(v float64) float64 {
	if c.jobsPerParent <= 0 {
		return 0
	}
	return v / float64(c.jobsPerParent)
}

// shotflowResult is the measurement of shotflow: sessions accepted by the API, jobs completed end
// to end, what a job costs in history, and the CPU seconds per job of the watched processes.
type shotflowResult struct {
	accepted, jobs phase
	// jobsPerOrder is how many jobs each order of the jobs phase held.
	jobsPerOrder int
	// acceptedJobs are, with -order-jobs, the accepted sessions' own jobs (jobsPerAccepted each),
	// timed from the worker's resume (or the first session) until their last order finished:
	// printed, not compared.
	acceptedJobs    phase
	jobsPerAccepted int
	cost            perJobCost
	cpu             map[string]float64
	// acceptCPU is the CPU per session spent while the sessions were being accepted: the
	// acceptance itself and the work of the orders already accepted, which competes with it.
	acceptCPU map[string]float64
}

// bareResult is the measurement of the bare baseline: plain starts (and their CPU per start),
// jobs of the 50-child orders completed end to end (and their CPU per job), and their history.
type bareResult struct {
	starts, jobs  phase
	children      int
	cost          perJobCost
	startCPU, cpu map[string]float64
	// startWindowCPU is the CPU per start spent until the last start returned (startCPU also
	// counts the workflows' runs after it).
	startWindowCPU map[string]float64
}

func (r shotflowResult) print(w io.Writer) {
	fmt.Fprintf(w, "sessions accepted:   %d in %.2fs = %.1f sessions/s (p50 %v, p95 %v)\n",
		r.accepted.count, r.accepted.secs, r.accepted.rate(), pct(r.accepted.latency, 50), pct(r.accepted.latency, 95))
	if r.acceptedJobs.count > 0 {
		fmt.Fprintf(w, "accepted jobs done:  %d in %.2fs = %.1f jobs/s end to end (orders of %d jobs)\n",
			r.acceptedJobs.count, r.acceptedJobs.secs, r.acceptedJobs.rate(), r.jobsPerAccepted)
	}
	fmt.Fprintf(w, "jobs completed:      %d in %.2fs = %.1f jobs/s end to end (orders of %d jobs)\n",
		r.jobs.count, r.jobs.secs, r.jobs.rate(), r.jobsPerOrder)
	printCost(w, "JobWorkflow", "OrderWorkflow run", r.cost)
	printCPU(w, "CPU per session while accepting:", r.acceptCPU)
	printCPU(w, "CPU per job:", r.cpu)
}

func (r bareResult) print(w io.Writer) {
	fmt.Fprintf(w, "bare starts:         %d in %.2fs = %.1f starts/s (p50 %v, p95 %v)\n",
		r.starts.count, r.starts.secs, r.starts.rate(), pct(r.starts.latency, 50), pct(r.starts.latency, 95))
	printCPU(w, "bare CPU per start while starting:", r.startWindowCPU)
	printCPU(w, "bare CPU per start:", r.startCPU)
	fmt.Fprintf(w, "bare jobs completed: %d in %.2fs = %.1f jobs/s end to end (orders of %d children)\n",
		r.jobs.count, r.jobs.secs, r.jobs.rate(), r.children)
	printCost(w, "bare child", "bare parent", r.cost)
	printCPU(w, "bare CPU per job:", r.cpu)
}

func printCost(w io.Writer, job, parent string, c perJobCost) {
	if c.job.workflows == 0 {
		return
	}
	fmt.Fprintf(w, "history events:      %.1f per job = %.1f per %s + %.1f per %s / %d jobs\n",
		c.events(), c.job.events, job, c.parent.events, parent, c.jobsPerParent)
	fmt.Fprintf(w, "actions:             %.1f per job = %.1f per %s + %.1f per %s / %d jobs\n",
		c.actions(), c.job.actions, job, c.parent.actions, parent, c.jobsPerParent)
}

func printCPU(w io.Writer, label string, cpu map[string]float64) {
	if len(cpu) == 0 {
		return
	}
	parts := make([]string, 0, len(cpu))
	for _, name := range slices.Sorted(maps.Keys(cpu)) {
		parts = append(parts, fmt.Sprintf("%s %.1f ms", name, cpu[name]*1000))
	}
	fmt.Fprintf(w, "%-20s %s\n", label, strings.Join(parts, ", "))
}

// ratio compares one rate of shotflow with the baseline's on the same server in the same run.
type ratio struct {
	name           string
	shotflow, bare float64
	goal           float64 // the least share of the baseline issue 28 asks for
}

// share is shotflow's rate as a fraction of the baseline's (0 when the baseline measured nothing).
func (r ratio) share() float64 {
	if r.bare <= 0 {
		return 0
	}
	return r.shotflow / r.bare
}

// met says whether the share reaches the goal.
func (r ratio) met() bool { return r.share() >= r.goal }

// ratiosOf are issue 28's two ratios: jobs per second end to end against the bare 50-child
// orders' (goal 80%), and sessions accepted per second against bare workflow starts (goal 85%).
func ratiosOf(s shotflowResult, b bareResult) []ratio {
	return []ratio{
		{name: "jobs/s end to end vs bare child jobs/s", shotflow: s.jobs.rate(), bare: b.jobs.rate(), goal: 0.8},
		{name: "sessions accepted/s vs bare starts/s", shotflow: s.accepted.rate(), bare: b.starts.rate(), goal: 0.85},
	}
}

// medianRatios is each ratio's median over rounds (the ratios of every round, in the order
// ratiosOf returns them): the round whose share is the median, for an even count the lower of the
// two in the middle.
func medianRatios(rounds [][]ratio) []ratio {
	if len(rounds) == 0 {
		return nil
	}
	out := make([]ratio, len(rounds[0]))
	for i := range out {
		column := make([]ratio, len(rounds))
		for r := range rounds {
			column[r] = rounds[r][i]
		}
		slices.SortFunc(column, func(a, b ratio) int { return cmp.Compare(a.share(), b.share()) })
		out[i] = column[(len(column)-1)/2]
	}
	return out
}

func printRatios(w io.Writer, rs []ratio) {
	for _, r := range rs {
		verdict := "below"
		if r.met() {
			verdict = "meets"
		}
		fmt.Fprintf(w, "ratio %-40s %.1f / %.1f = %.0f%% (%s the goal of %.0f%%)\n",
			r.name+":", r.shotflow, r.bare, r.share()*100, verdict, r.goal*100)
	}
}
