package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statLine is a /proc/<pid>/stat line with the given command name, ppid and times; the other
// fields are those of a real process.
func statLine(comm string, ppid int, utime, stime, cutime, cstime uint64) string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return "4242 (" + comm + ") S " + strconv.Itoa(ppid) + " 4242 4242 0 -1 4194560 2837 0 0 0 " +
		u(utime) + " " + u(stime) + " " + u(cutime) + " " + u(cstime) + " 20 0 9 0 12345 1308762112 11019 18446744073709551615\n"
}

func TestParseProcStat(t *testing.T) {
	got, err := parseProcStat(statLine("temporal", 1, 1234, 567, 89, 10))
	require.NoError(t, err)
	assert.Equal(t, procTimes{ppid: 1, utime: 1234, stime: 567, cutime: 89, cstime: 10}, got)

	// A command name with spaces and parentheses does not shift the fields.
	got, err = parseProcStat(statLine("postgres: w) (x", 7, 1, 2, 3, 4))
	require.NoError(t, err)
	assert.Equal(t, procTimes{ppid: 7, utime: 1, stime: 2, cutime: 3, cstime: 4}, got)

	_, err = parseProcStat("4242 (short) S 1 2 3")
	assert.ErrorContains(t, err, "fields")
	_, err = parseProcStat("no parenthesis")
	assert.Error(t, err)
}

func TestParseProcStatOfThisProcess(t *testing.T) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc on this system")
	}
	got, err := parseProcStat(string(data))
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), got.ppid)
}

func TestParsePids(t *testing.T) {
	got, err := parsePids("temporal=10, postgres=20,worker=30+")
	require.NoError(t, err)
	assert.Equal(t, []watched{
		{name: "temporal", pid: 10},
		{name: "postgres", pid: 20, children: true},
		{name: "worker", pid: 30, children: true},
	}, got)

	got, err = parsePids("")
	require.NoError(t, err)
	assert.Empty(t, got)

	for _, bad := range []string{"temporal", "=10", "temporal=x", "temporal=-1", "a=1,a=2"} {
		_, err := parsePids(bad)
		assert.Error(t, err, bad)
	}
}

// writeProc writes a fake /proc with one stat file per process.
func writeProc(t *testing.T, stats map[int]string) procFS {
	dir := t.TempDir()
	for pid, line := range stats {
		require.NoError(t, os.Mkdir(filepath.Join(dir, strconv.Itoa(pid)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(pid), "stat"), []byte(line), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "self"), 0o755)) // not a pid: ignored
	return procFS(dir)
}

func TestCPUTicksCountsChildrenOnlyWhenAsked(t *testing.T) {
	proc := writeProc(t, map[int]string{
		100: statLine("postgres", 1, 10, 5, 300, 200), // 500 ticks of reaped backends
		101: statLine("postgres: checkpointer", 100, 7, 3, 0, 0),
		102: statLine("postgres: shotflow", 100, 40, 20, 0, 0),
		200: statLine("other", 1, 1000, 1000, 0, 0),
	})
	alone, err := proc.cpuTicks(watched{name: "postgres", pid: 100})
	require.NoError(t, err)
	assert.Equal(t, uint64(15), alone)

	tree, err := proc.cpuTicks(watched{name: "postgres", pid: 100, children: true})
	require.NoError(t, err)
	assert.Equal(t, uint64(15+500+10+60), tree)

	_, err = proc.cpuTicks(watched{name: "gone", pid: 999})
	assert.ErrorContains(t, err, "gone (pid 999)")
}

func TestCPUSecondsPerJob(t *testing.T) {
	before := cpuSample{"temporal": 1000, "worker": 50, "restarted": 900}
	after := cpuSample{"temporal": 3000, "worker": 450, "restarted": 10, "new": 5}
	got := cpuSecondsPerJob(before, after, 200)
	assert.InDeltaMapValues(t, map[string]float64{"temporal": 0.1, "worker": 0.02}, got, 1e-9)
	assert.Empty(t, cpuSecondsPerJob(before, after, 0))
}

// procState is the state letter of /proc/<pid>/stat (T: stopped).
func procState(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	return rest[:1]
}

func TestPauseProcessStopsAndResumesTheWorkerProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	watch := []watched{{name: "temporal", pid: os.Getpid()}, {name: "worker", pid: cmd.Process.Pid}}
	pid, ok := workerPID(watch)
	if !ok || pid != cmd.Process.Pid {
		t.Fatalf("workerPID = %d, %v", pid, ok)
	}
	resume, err := pauseProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	waitState := func(want func(string) bool, what string) {
		t.Helper()
		for range 100 {
			if want(procState(t, cmd.Process.Pid)) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("worker never %s (state %s)", what, procState(t, cmd.Process.Pid))
	}
	waitState(func(s string) bool { return s == "T" }, "stopped")
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	waitState(func(s string) bool { return s != "T" }, "resumed")
	if _, ok := workerPID(watch[:1]); ok {
		t.Fatal("workerPID found a worker among the other processes")
	}
}

func TestCPUSampleAddsTheTicksOfSeveralWindows(t *testing.T) {
	spent := cpuSample{}
	spent.add(cpuSample{"temporal": 100, "api": 50}, cpuSample{"temporal": 130, "api": 60})
	// A restarted process (fewer ticks than before) adds nothing; one missing before, too.
	spent.add(cpuSample{"temporal": 200, "api": 90}, cpuSample{"temporal": 250, "api": 10, "worker": 5})
	assert.Equal(t, cpuSample{"temporal": 80, "api": 10}, spent)
	assert.Equal(t, map[string]float64{"temporal": 0.2, "api": 0.025}, spent.perJob(4))
	assert.Empty(t, spent.perJob(0))
}
