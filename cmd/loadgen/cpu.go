package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on every Linux
// architecture user space sees, whatever the kernel's internal HZ.
const clockTicks = 100

// procTimes are the CPU times of one process in clock ticks, from /proc/<pid>/stat.
type procTimes struct {
	ppid                         int
	utime, stime, cutime, cstime uint64
}

// parseProcStat reads the fields loadgen needs from the contents of /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may itself hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseProcStat(data string) (procTimes, error) {
	end := strings.LastIndexByte(data, ')')
	if end < 0 {
		return procTimes{}, errors.New("no ')' after the command name")
	}
	f := strings.Fields(data[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
	if len(f) < 15 {
		return procTimes{}, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	var t procTimes
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procTimes{}, fmt.Errorf("ppid: %w", err)
	}
	t.ppid = ppid
	for i, dst := range []*uint64{&t.utime, &t.stime, &t.cutime, &t.cstime} {
		if *dst, err = strconv.ParseUint(f[11+i], 10, 64); err != nil {
			return procTimes{}, fmt.Errorf("field %d: %w", 14+i, err)
		}
	}
	return t, nil
}

// watched is one process whose CPU loadgen reports: a name (temporal, postgres, worker, …), its
// pid, and whether its child processes count too.
type watched struct {
	name     string
	pid      int
	children bool
}

// parsePids parses the -pids flag: comma-separated name=pid pairs. A pid ending in '+', and every
// pid named postgres, counts the process's children too (PostgreSQL's backends are children of
// the postmaster), including those that exit during the run.
func parsePids(s string) ([]watched, error) {
	var out []watched
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		name, pid, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("-pids: %q is not name=pid", item)
		}
		w := watched{name: name, children: name == "postgres"}
		if p, found := strings.CutSuffix(pid, "+"); found {
			pid, w.children = p, true
		}
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-pids: %s=%q is not a process id", name, pid)
		}
		if slices.ContainsFunc(out, func(o watched) bool { return o.name == name }) {
			return nil, fmt.Errorf("-pids: %s is named twice", name)
		}
		w.pid = n
		out = append(out, w)
	}
	return out, nil
}

// procFS reads process times under a /proc root (a fixture directory in tests).
type procFS string

func (p procFS) times(pid int) (procTimes, error) {
	data, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "stat"))
	if err != nil {
		return procTimes{}, err
	}
	t, err := parseProcStat(string(data))
	if err != nil {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return t, nil
}

// children lists the live processes whose parent is pid.
func (p procFS) children(pid int) []procTimes {
	entries, _ := os.ReadDir(string(p))
	var out []procTimes
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t, err := p.times(n) // a process may exit while we look: skip it
		if err == nil && t.ppid == pid {
			out = append(out, t)
		}
	}
	return out
}

// cpuTicks is the CPU a watched process has used so far, in clock ticks: its own user and system
// time and, with children, the times of its live children and of those it has reaped.
func (p procFS) cpuTicks(w watched) (uint64, error) {
	t, err := p.times(w.pid)
	if err != nil {
		return 0, fmt.Errorf("%s (pid %d): %w", w.name, w.pid, err)
	}
	total := t.utime + t.stime
	if w.children {
		total += t.cutime + t.cstime
		for _, c := range p.children(w.pid) {
			total += c.utime + c.stime + c.cutime + c.cstime
		}
	}
	return total, nil
}

// cpuSample is the CPU ticks of every watched process at one moment.
type cpuSample map[string]uint64

// sample reads the ticks of every watched process.
func (p procFS) sample(ws []watched) (cpuSample, error) {
	s := cpuSample{}
	for _, w := range ws {
		n, err := p.cpuTicks(w)
		if err != nil {
			return nil, err
		}
		s[w.name] = n
	}
	return s, nil
}

// add adds to s the ticks each process spent between two samples (a restarted process's, which
// mean nothing, are left out).
func (s cpuSample) add(before, after cpuSample) {
	for name, a := range after {
		if b, ok := before[name]; ok && a >= b {
			s[name] += a - b
		}
	}
}

// perJob is the ticks of s (spent, as add sums them) in CPU seconds per job.
func (s cpuSample) perJob(jobs int) map[string]float64 {
	out := map[string]float64{}
	if jobs <= 0 {
		return out
	}
	for name, ticks := range s {
		out[name] = float64(ticks) / clockTicks / float64(jobs)
	}
	return out
}

// cpuSecondsPerJob is the CPU each process spent between two samples, in seconds per job.
func cpuSecondsPerJob(before, after cpuSample, jobs int) map[string]float64 {
	spent := cpuSample{}
	spent.add(before, after)
	return spent.perJob(jobs)
}

// workerPID is the pid of the watched process named worker.
func workerPID(watch []watched) (int, bool) {
	i := slices.IndexFunc(watch, func(w watched) bool { return w.name == "worker" })
	if i < 0 {
		return 0, false
	}
	return watch[i].pid, true
}

// pauseProcess stops the process (SIGSTOP) and returns the function that lets it run again
// (SIGCONT). A paused worker's Temporal polls stay open; tasks handed to it wait until it resumes.
func pauseProcess(pid int) (resume func() error, err error) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pause process %d: %w", pid, err)
	}
	return func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("resume process %d: %w", pid, err)
		}
		return nil
	}, nil
}
