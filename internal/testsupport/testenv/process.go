package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string // the temporary directory of buildPath, removed by RemoveBinary
	buildPath string
	buildErr  error
)

// CoverDirEnv names the environment variable that, set to an existing directory, makes Binary
// build with -cover; a test then runs the binary with GOCOVERDIR set to it and reads the coverage
// with `go tool covdata percent -i=DIR`.
const CoverDirEnv = "SHOTFLOW_TEST_COVERDIR"

// Binary builds cmd/shotflow once per test process and returns its path.
func Binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "shotflow-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir, buildPath = dir, filepath.Join(dir, "shotflow")
		args := []string{"build", "-o", buildPath}
		if os.Getenv(CoverDirEnv) != "" {
			args = append(args, "-cover", "-coverpkg=github.com/shotflow/shotflow/...")
		}
		cmd := exec.Command("go", append(args, "./cmd/shotflow")...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			buildPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("testenv: build shotflow: %v\n%s", buildErr, buildPath)
	}
	return buildPath
}

// RemoveBinary deletes the binary Binary built, if any; a TestMain calls it once its tests ran.
func RemoveBinary() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// Process is a shotflow process started by a test.
type Process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// StartWorkerProcess runs `shotflow worker` with this environment's configuration in its own
// process; it is killed at cleanup if still running.
func (e *Env) StartWorkerProcess(t *testing.T, extraEnv ...string) *Process {
	t.Helper()
	return e.StartProcess(t, "worker", extraEnv...)
}

// StartProcess runs a shotflow command (api or worker) with this environment's configuration,
// overridden by extraEnv, in its own process; it is killed at cleanup if still running.
func (e *Env) StartProcess(t *testing.T, command string, extraEnv ...string) *Process {
	t.Helper()
	cmd := exec.Command(Binary(t), command)
	cmd.Env = append(append(os.Environ(), e.Config.Environ()...), extraEnv...)
	cmd.Env = append(cmd.Env, "LOG_LEVEL=warn")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", command, out.String())
		}
	})
	return p
}

// Kill sends SIGKILL, as a crash would, and waits for the process to be gone.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Pid is the process's ID (a Temporal worker's default identity starts with it and "@").
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output is what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
