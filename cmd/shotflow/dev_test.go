package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/workflows"
)

// The tests in this file run the real `shotflow dev` binary as a child process, with the real
// Temporal CLI dev server from bin/temporal.
//
// Set SHOTFLOW_TEST_COVERDIR (testenv.CoverDirEnv) to an existing directory to build the binary
// with -cover and collect its coverage there (go tool covdata percent -i=DIR).

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinary()
	os.Exit(code)
}

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// temporalCLI is the absolute path of bin/temporal; the test fails (never skips) without it.
func temporalCLI(t *testing.T) string {
	t.Helper()
	cli := filepath.Join(repoRoot(t), "bin", "temporal")
	if st, err := os.Stat(cli); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("the Temporal CLI is missing at %s (%v): run `make temporal-cli` (or `make test`) to install it", cli, err)
	}
	return cli
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// devPorts are the four ports of one `shotflow dev`.
type devPorts struct{ http, temporal, ui, metrics int }

func newDevPorts(t *testing.T) devPorts {
	t.Helper()
	for {
		p := devPorts{freePort(t), freePort(t), freePort(t), freePort(t)}
		l := p.list()
		slices.Sort(l)
		if len(slices.Compact(l)) == 4 {
			return p
		}
	}
}

func (p devPorts) list() []int { return []int{p.http, p.temporal, p.ui, p.metrics} }

// devEnv is the parent's environment without any shotflow variable, plus the test's settings.
func devEnv(t *testing.T, ports devPorts, extra ...string) []string {
	t.Helper()
	drop := map[string]bool{"GOCOVERDIR": true}
	for _, name := range configVars() {
		drop[name] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env,
		"TEMPORAL_CLI_PATH="+temporalCLI(t),
		"HTTP_ADDR=127.0.0.1:"+strconv.Itoa(ports.http),
		"DEV_TEMPORAL_PORT="+strconv.Itoa(ports.temporal),
		"DEV_TEMPORAL_UI_PORT="+strconv.Itoa(ports.ui),
		"WORKER_METRICS_ADDR=127.0.0.1:"+strconv.Itoa(ports.metrics),
	)
	if dir := os.Getenv(testenv.CoverDirEnv); dir != "" {
		env = append(env, "GOCOVERDIR="+dir)
	}
	return append(env, extra...)
}

// syncBuffer is a bytes.Buffer safe for the exec copier and the test to share.
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

// devProc is one running `shotflow dev`.
type devProc struct {
	cmd            *exec.Cmd
	dir            string
	stdout, stderr *syncBuffer
	done           chan struct{}
	waitErr        error
}

// startDev starts `shotflow dev` in dir. Whatever happens, the test's cleanup kills the process
// group and any process left behind in dir.
func startDev(t *testing.T, dir string, env []string) *devProc {
	t.Helper()
	bin := testenv.Binary(t)
	cmd := exec.Command(bin, "dev")
	cmd.Dir = dir
	cmd.Env = env
	p := &devProc{cmd: cmd, dir: dir, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start shotflow dev: %v", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		for _, pid := range leftoverProcesses(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("shotflow dev stdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
			if log, err := os.ReadFile(filepath.Join(dir, ".data", "temporal.log")); err == nil {
				t.Logf("temporal.log (last 4 KiB):\n%s", tail(log, 4096))
			}
		}
	})
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (p *devProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode waits up to d for the process to end and returns its exit code.
func (p *devProc) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("shotflow dev did not exit within %v", d)
	}
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return 0
	case errors.As(p.waitErr, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("wait for shotflow dev: %v", p.waitErr)
		return -1
	}
}

// leftoverProcesses lists processes that belong to a `shotflow dev` run in dir: a command line
// that mentions dir, or a working directory inside it. (`shotflow dev` passes the Temporal dev
// server a relative --db-filename .data/temporal.db, so the working directory is what identifies
// it.)
func leftoverProcesses(dir string) []int {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	self := os.Getpid()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a zombie
		}
		cl := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(cl, dir) || strings.Contains(cl, real) ||
			cwd == dir || cwd == real || strings.HasPrefix(cwd, real+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func describeProcesses(pids []int) string {
	var out []string
	for _, pid := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '})))
	}
	return strings.Join(out, "\n")
}

// checkCleanExit asserts nothing of the run in dir is left: no process, no listener.
func checkCleanExit(t *testing.T, dir string, ports devPorts) {
	t.Helper()
	if pids := leftoverProcesses(dir); len(pids) > 0 {
		t.Errorf("processes left behind after shotflow dev exited:\n%s", describeProcesses(pids))
	}
	for _, port := range ports.list() {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d is still in use after shotflow dev exited: %v", port, err)
			continue
		}
		ln.Close()
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// waitReady polls GET /readyz until it answers 200, the process exits or d passes.
func (p *devProc) waitReady(t *testing.T, baseURL string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("shotflow dev exited before becoming ready (%v)\nstderr:\n%s", p.waitErr, p.stderr)
		}
		resp, err := httpClient.Get(baseURL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%s %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s/readyz did not answer 200 within %v (last: %s)", baseURL, d, last)
}

// waitOutput waits up to d for the process's stdout to contain every string in want.
func (p *devProc) waitOutput(t *testing.T, d time.Duration, want ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		out := p.stdout.String()
		missing := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return strings.Contains(out, s) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("stdout lacks %q:\n%s", missing, out)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readCredentials reads DATA_DIR/dev-credentials.json and checks its shape.
func readCredentials(t *testing.T, dir string, ports devPorts) map[string]string {
	t.Helper()
	path := filepath.Join(dir, ".data", "dev-credentials.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("credentials file: %v", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		t.Errorf("credentials file mode %v, want it private (0600)", st.Mode().Perm())
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("credentials file is not a JSON object: %v\n%s", err, data)
	}
	wantKeys := []string{"account_id", "base_url", "external_api_key", "external_test_api_key", "installation_id", "plugin_api_key",
		"plugin_test_api_key", "plugin_test_webhook_secret", "temporal_ui_url", "webhook_secret"}
	var keys []string
	creds := map[string]string{}
	for k, v := range raw {
		keys = append(keys, k)
		s, ok := v.(string)
		if !ok || s == "" {
			t.Errorf("credentials %s = %#v, want a non-empty string", k, v)
		}
		creds[k] = s
	}
	sort.Strings(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("credentials keys = %v, want exactly %v", keys, wantKeys)
	}
	if want := "http://localhost:" + strconv.Itoa(ports.http); creds["base_url"] != want {
		t.Errorf("base_url = %q, want %q", creds["base_url"], want)
	}
	if want := "http://localhost:" + strconv.Itoa(ports.ui); creds["temporal_ui_url"] != want {
		t.Errorf("temporal_ui_url = %q, want %q", creds["temporal_ui_url"], want)
	}
	if !strings.HasPrefix(creds["plugin_api_key"], models.PluginKeyPrefix) || !strings.HasPrefix(creds["external_api_key"], models.ExternalKeyPrefix) ||
		!strings.HasPrefix(creds["webhook_secret"], "whsec_") || !models.IsUUID(creds["installation_id"]) || !models.IsUUID(creds["account_id"]) {
		t.Errorf("credentials have the wrong form: %v", creds)
	}
	return creds
}

// checkMetrics checks that the API and the worker of one dev process serve their metrics side by
// side: the API's request counter (GET /me was made) on HTTP_ADDR, the worker's health and the
// Temporal SDK's poller gauge on WORKER_METRICS_ADDR.
func checkMetrics(t *testing.T, baseURL string, metricsPort int) {
	t.Helper()
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := httpClient.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get(baseURL + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, `shotflow_http_requests_total{method="GET",route="/api/v1/plugin/me",status="2xx"} 1`) {
		t.Errorf("the API's /metrics = %d, without the GET /me request:\n%.2000s", code, body)
	}
	// One process: what the API and the worker share is on the worker's listener alone.
	for _, shared := range []string{"temporal_", "go_goroutines", "process_"} {
		if strings.Contains(body, "\n"+shared) {
			t.Errorf("the API's /metrics of shotflow dev shows %s…, which the worker's listener shows too", shared)
		}
	}
	// The API answers before the worker has started polling.
	worker := "http://127.0.0.1:" + strconv.Itoa(metricsPort)
	deadline := time.Now().Add(30 * time.Second)
	code, body = get(worker + "/healthz")
	for code != http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		code, body = get(worker + "/healthz")
	}
	if code != http.StatusOK {
		t.Errorf("the worker's /healthz = %d %s, want 200 once it polls", code, body)
	}
	if code, body := get(worker + "/metrics"); code != http.StatusOK || !strings.Contains(body, "temporal_num_pollers{") {
		t.Errorf("the worker's /metrics = %d, without the Temporal SDK's pollers:\n%.2000s", code, body)
	}
}

// checkMe calls GET /api/v1/plugin/me with the demo plugin key.
func checkMe(t *testing.T, baseURL string, creds map[string]string, wantCredits int64) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, baseURL+"/api/v1/plugin/me", nil)
	req.Header.Set("X-Api-Key", creds["plugin_api_key"])
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET /me: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /me = %s %s", resp.Status, body)
	}
	var me struct {
		InstallationID string `json:"installation_id"`
		AccountID      string `json:"account_id"`
		Credits        struct {
			Available *int64 `json:"available"`
			Reserved  *int64 `json:"reserved"`
		} `json:"credits"`
	}
	if err := json.Unmarshal(body, &me); err != nil {
		t.Fatalf("GET /me body %s: %v", body, err)
	}
	if me.Credits.Available == nil || *me.Credits.Available != wantCredits {
		t.Errorf("GET /me credits.available = %v, want %d (body %s)", me.Credits.Available, wantCredits, body)
	}
	if me.InstallationID != creds["installation_id"] || me.AccountID != creds["account_id"] {
		t.Errorf("GET /me = installation %q account %q, want %q %q", me.InstallationID, me.AccountID, creds["installation_id"], creds["account_id"])
	}
	// A wrong key is refused.
	req.Header.Set("X-Api-Key", creds["plugin_api_key"]+"x")
	if resp, err := httpClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /me with a wrong key = %s, want 401", resp.Status)
		}
	}
}

// checkTemporalUI waits for the Web UI to answer GET / with a status below 500.
func checkTemporalUI(t *testing.T, port int) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := httpClient.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			t.Errorf("Temporal UI at %s: %v", url, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func dialTemporal(t *testing.T, port int) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  "127.0.0.1:" + strconv.Itoa(port),
		Namespace: "default",
		Logger:    tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatalf("dial the dev server's Temporal: %v", err)
	}
	return c
}

func checkSearchAttributes(t *testing.T, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	for _, key := range workflows.SearchAttributes {
		name := key.GetName()
		typ, ok := resp.GetCustomAttributes()[name]
		if !ok {
			t.Errorf("search attribute %s is not registered (custom attributes: %v)", name, resp.GetCustomAttributes())
		} else if typ != key.GetValueType() {
			t.Errorf("search attribute %s has type %v, want %v", name, typ, key.GetValueType())
		}
	}
}

func countRows(t *testing.T, dir, table string) int64 {
	t.Helper()
	db, err := models.Open("sqlite://"+filepath.Join(dir, ".data", "shotflow.db"), models.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	var n int64
	if err := db.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDevLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole dev stack; skipped by -short")
	}
	start := time.Now()
	dir := t.TempDir()
	ports := newDevPorts(t)
	// An address, profile, API key or TLS setting exported for another cluster must not pull dev
	// away from the plaintext server it starts.
	env := devEnv(t, ports, "TEMPORAL_ADDRESS=127.0.0.1:1", "TEMPORAL_PROFILE=elsewhere", "TEMPORAL_API_KEY=for-another-cluster",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH="+filepath.Join(t.TempDir(), "missing-ca.pem"))
	baseURL := "http://127.0.0.1:" + strconv.Itoa(ports.http)
	markerID := "devtest-persistence-" + randHex(t)

	// First run: fresh directory.
	p := startDev(t, dir, env)
	p.waitReady(t, baseURL, 90*time.Second)
	t.Logf("first run ready after %v", time.Since(start).Round(time.Millisecond))
	creds := readCredentials(t, dir, ports)
	checkMe(t, baseURL, creds, 1000)
	checkTemporalUI(t, ports.ui)
	checkMetrics(t, baseURL, ports.metrics)
	p.waitOutput(t, 5*time.Second,
		"API base URL", "http://localhost:"+strconv.Itoa(ports.http),
		"Temporal UI", "http://localhost:"+strconv.Itoa(ports.ui),
		"Metrics", "http://127.0.0.1:"+strconv.Itoa(ports.metrics)+"/metrics",
		creds["plugin_api_key"])
	for _, f := range []string{"secret.key", "shotflow.db", "temporal.db"} {
		st, err := os.Stat(filepath.Join(dir, ".data", f))
		if err != nil {
			t.Errorf("DATA_DIR file: %v", err)
		} else if f == "secret.key" && st.Mode().Perm()&0o077 != 0 {
			t.Errorf("secret.key mode %v, want 0600", st.Mode().Perm())
		}
	}
	c := dialTemporal(t, ports.temporal)
	checkSearchAttributes(t, c)
	// A workflow nobody executes (no worker polls its task queue): it must survive a restart.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: markerID, TaskQueue: "devtest-no-worker"}, "DevTestMarker")
	cancel()
	if err != nil {
		t.Fatalf("start the marker workflow: %v", err)
	}
	c.Close()
	// The leak scan must see what it is meant to catch: shotflow itself and its Temporal dev server.
	running := describeProcesses(leftoverProcesses(dir))
	if !strings.Contains(running, "shotflow dev") || !strings.Contains(running, "server start-dev") {
		t.Errorf("the process scan does not see the running dev processes:\n%s", running)
	}

	stopAt := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("shotflow dev exited %d after SIGTERM, want 0\nstderr:\n%s", code, p.stderr)
	}
	t.Logf("SIGTERM to exit: %v", time.Since(stopAt).Round(time.Millisecond))
	if strings.Contains(p.stderr.String(), "did not stop in time") {
		t.Errorf("the Temporal dev server had to be killed:\n%s", p.stderr)
	}
	checkCleanExit(t, dir, ports)
	// The demo account, and the test twins of its installation and of itself (docs/test-mode.md).
	if n := countRows(t, dir, "accounts"); n != 3 {
		t.Errorf("after the first run: %d accounts, want 3 (the demo account and 2 test twins)", n)
	}

	// Second run in the same directory: same data, same demo credentials.
	second := time.Now()
	p = startDev(t, dir, env)
	p.waitReady(t, baseURL, 90*time.Second)
	t.Logf("second run ready after %v", time.Since(second).Round(time.Millisecond))
	creds2 := readCredentials(t, dir, ports)
	for _, k := range []string{"plugin_api_key", "installation_id", "external_api_key", "account_id", "webhook_secret",
		"plugin_test_api_key", "external_test_api_key", "plugin_test_webhook_secret"} {
		if creds2[k] != creds[k] {
			t.Errorf("restart changed %s: %q → %q", k, creds[k], creds2[k])
		}
	}
	checkMe(t, baseURL, creds2, 1000)
	p.waitOutput(t, 5*time.Second, "API base URL", creds["plugin_api_key"])
	c = dialTemporal(t, ports.temporal)
	checkSearchAttributes(t, c)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	desc, err := c.DescribeWorkflowExecution(ctx, markerID, "")
	cancel()
	if err != nil {
		t.Errorf("the workflow started in the first run is gone after the restart: %v", err)
	} else if got := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(); got != run.GetRunID() {
		t.Errorf("marker workflow run ID = %s, want %s", got, run.GetRunID())
	}
	c.Close()

	stopAt = time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("shotflow dev exited %d after SIGINT, want 0\nstderr:\n%s", code, p.stderr)
	}
	t.Logf("SIGINT to exit: %v", time.Since(stopAt).Round(time.Millisecond))
	checkCleanExit(t, dir, ports)
	if n := countRows(t, dir, "accounts"); n != 3 {
		t.Errorf("after the second run: %d accounts, want still 3", n)
	}
	if n := countRows(t, dir, "installations"); n != 2 {
		t.Errorf("after the second run: %d installations, want still 2 (the demo shop and its test twin)", n)
	}
}

func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func TestDevPortInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole dev stack; skipped by -short")
	}
	cases := []struct {
		name  string
		taken func(devPorts) int
		want  string
	}{
		{"http", func(p devPorts) int { return p.http }, "HTTP_ADDR"},
		{"temporal", func(p devPorts) int { return p.temporal }, "DEV_TEMPORAL_PORT"},
		{"temporal ui", func(p devPorts) int { return p.ui }, "DEV_TEMPORAL_UI_PORT"},
		{"worker metrics", func(p devPorts) int { return p.metrics }, "WORKER_METRICS_ADDR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ports := newDevPorts(t)
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(tc.taken(ports)))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			start := time.Now()
			p := startDev(t, dir, devEnv(t, ports))
			code := p.exitCode(t, 15*time.Second)
			if code == 0 {
				t.Errorf("shotflow dev with port %d taken exited 0", tc.taken(ports))
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("shotflow dev took %v to give up", d)
			}
			if !strings.Contains(p.stderr.String(), tc.want) {
				t.Errorf("stderr does not name %s:\n%s", tc.want, p.stderr)
			}
			if pids := leftoverProcesses(dir); len(pids) > 0 {
				t.Errorf("processes left behind:\n%s", describeProcesses(pids))
			}
			for _, port := range ports.list() {
				if port == tc.taken(ports) {
					continue
				}
				if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err != nil {
					t.Errorf("port %d is in use after shotflow dev gave up: %v", port, err)
				} else {
					l.Close()
				}
			}
			if tc.name == "http" || tc.name == "worker metrics" {
				if _, err := os.Stat(filepath.Join(dir, ".data", "temporal.db")); err == nil {
					t.Errorf("the Temporal dev server was started although %s was taken", tc.want)
				}
			}
		})
	}
}
