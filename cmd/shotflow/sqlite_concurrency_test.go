package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/status"
)

// lockedDatabase are the words of SQLite's SQLITE_BUSY errors ("database is locked", with (5) or,
// for a stale snapshot, (517)) as the driver, the logs and the API's answers spell them.
var lockedDatabase = []string{"database is locked", "SQLITE_BUSY", "(517)"}

func mentionsLockedDatabase(s string) bool {
	for _, w := range lockedDatabase {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// TestEmbeddedDatabaseIsNeverLockedUnderConcurrentUse runs `shotflow dev` (the API and the worker
// on one embedded SQLite file, as `make run` does) while the plugin API registers products and
// submits sessions whose jobs the worker renders, and `shotflow admin` commands, each its own
// process with its own connection to the same file, create accounts, installations and keys and
// grant credits to the account the sessions charge. Under WAL, a transaction that read before
// another process wrote fails at its first write with SQLITE_BUSY_SNAPSHOT ("database is locked
// (517)"), which no busy timeout cures; every transaction must begin immediate. None of the
// commands, requests or jobs may fail, and no process may log a locked database.
func TestEmbeddedDatabaseIsNeverLockedUnderConcurrentUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole dev stack; skipped by -short")
	}
	dir := t.TempDir()
	ports := newDevPorts(t)
	env := devEnv(t, ports, "RATE_LIMIT_PER_MINUTE=100000", "RENDER_LONG_EDGE=64", "DEV_SEED_CREDITS=100000")
	baseURL := "http://127.0.0.1:" + strconv.Itoa(ports.http)
	bin := testenv.Binary(t)
	p := startDev(t, dir, env)
	p.waitReady(t, baseURL, 90*time.Second)
	creds := readCredentials(t, dir, ports)
	api := &pluginClient{base: baseURL + "/api/v1/plugin", key: creds["plugin_api_key"]}
	assetID := api.uploadPackshot(t)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const (
		adminRounds    = 5 // of 9 commands each, in each of two goroutines
		apiClients     = 2
		sessionsPerAPI = 12
	)
	var (
		mu       sync.Mutex
		failures []string
		orders   []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	var wg sync.WaitGroup
	adminRan := make([]int, 2)
	for g := range 2 {
		wg.Go(func() {
			for round := range adminRounds {
				if !adminRound(ctx, bin, dir, env, creds["account_id"], func() string {
					mu.Lock()
					defer mu.Unlock()
					if len(orders) == 0 {
						return ""
					}
					return orders[len(orders)-1]
				}, fmt.Sprintf("g%d-r%d", g, round), &adminRan[g], fail) {
					return
				}
			}
		})
	}
	for c := range apiClients {
		wg.Go(func() {
			for i := range sessionsPerAPI {
				ref := fmt.Sprintf("lock-%d-%d", c, i)
				if err := api.call(ctx, http.MethodPost, "/packshots", map[string]any{"packshots": []map[string]any{{
					"asset_id": assetID, "product_ref": ref, "product_metadata": map[string]any{"display_name": ref},
				}}}, nil); err != nil {
					fail("register packshot %s: %v", ref, err)
					return
				}
				var session struct {
					OrderID string `json:"order_id"`
				}
				if err := api.call(ctx, http.MethodPost, "/jobs", map[string]any{
					"session_config": map[string]any{"aspect_ratio": "1:1"},
					"subjects":       []map[string]any{{"product_ref": ref, "images_count": 2, "ai_model": "local/studio-v1"}},
				}, &session); err != nil {
					fail("session for %s: %v", ref, err)
					return
				}
				mu.Lock()
				orders = append(orders, session.OrderID)
				mu.Unlock()
				if err := api.call(ctx, http.MethodGet, "/me", nil, nil); err != nil {
					fail("GET /me: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		t.FailNow()
	}
	if got, want := adminRan[0]+adminRan[1], 2*adminRounds*9; got != want {
		t.Fatalf("%d admin commands ran, want %d", got, want)
	}
	// Every job of every session completes: the worker's activities never failed for good.
	for _, id := range orders {
		var order struct {
			Status        string `json:"status"`
			JobsTotal     int    `json:"jobs_total"`
			JobsCompleted int    `json:"jobs_completed"`
		}
		for {
			if err := api.call(ctx, http.MethodGet, "/orders/"+id, nil, &order); err != nil {
				t.Fatalf("GET /orders/%s: %v", id, err)
			}
			if order.Status != status.OrderInProgress {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("order %s still %s: %v", id, order.Status, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
		if order.Status != status.OrderCompleted || order.JobsCompleted != order.JobsTotal || order.JobsTotal != 2 {
			t.Errorf("order %s: %+v, want all of its 2 jobs completed", id, order)
		}
	}
	if len(orders) != apiClients*sessionsPerAPI {
		t.Errorf("%d sessions accepted, want %d", len(orders), apiClients*sessionsPerAPI)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("shotflow dev exited %d after SIGTERM, want 0", code)
	}
	// Retried activities and refused requests leave their error in the logs: none may be a
	// locked database.
	for name, out := range map[string]string{"stdout": p.stdout.String(), "stderr": p.stderr.String()} {
		for line := range strings.SplitSeq(out, "\n") {
			if mentionsLockedDatabase(line) {
				t.Errorf("shotflow dev's %s mentions a locked database: %s", name, line)
			}
		}
	}
}

// adminRound runs one round of admin commands (bin admin …) and `shotflow migrate`, each its own
// process in dir (where `shotflow dev` keeps its database and secret key), and reports whether
// every one succeeded; a failure is passed to fail. ran counts the commands that succeeded.
// lastOrder is an order the API accepted so far ("" before the first).
func adminRound(ctx context.Context, bin, dir string, env []string, devAccount string, lastOrder func() string, name string, ran *int, fail func(string, ...any)) bool {
	run := func(out any, args ...string) bool {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil || mentionsLockedDatabase(stderr.String()) || mentionsLockedDatabase(stdout.String()) {
			fail("shotflow %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
			return false
		}
		if out != nil {
			if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
				fail("shotflow %s printed %q: %v", strings.Join(args, " "), stdout.String(), err)
				return false
			}
		}
		*ran++
		return true
	}
	admin := func(out any, args ...string) bool { return run(out, append([]string{"admin"}, args...)...) }
	var account struct {
		ID string `json:"account_id"`
	}
	var key struct {
		ID string `json:"key_id"`
	}
	var installation map[string]any
	order := lastOrder()
	showOrder := []string{"jobs", "list", "--status", "completed", "--limit", "5"} // until an order exists
	if order != "" {
		showOrder = []string{"orders", "show", order}
	}
	return admin(&account, "account", "create", "--name", "lock-"+name, "--credits", "10") &&
		admin(&installation, "installation", "create", "--account", account.ID, "--name", "shop-"+name) &&
		admin(nil, "credits", "grant", "--account", devAccount, "--amount", "5") &&
		admin(&key, "keys", "issue", "--account", account.ID, "--name", "key-"+name) &&
		admin(nil, "keys", "list", "--account", account.ID) &&
		admin(nil, "keys", "revoke", key.ID) &&
		admin(nil, "jobs", "list", "--status", "completed", "--limit", "5") &&
		admin(nil, showOrder...) &&
		run(nil, "migrate") // goose, on a database already at its version: it reads and writes nothing
}

// pluginClient calls the plugin API with one key.
type pluginClient struct {
	base, key string
}

var pluginHTTP = &http.Client{Timeout: 30 * time.Second}

// call sends one request and decodes a 2xx answer into out; any other answer is an error.
func (c *pluginClient) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := pluginHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// uploadPackshot uploads a product on white as a packshot and returns its asset ID.
func (c *pluginClient) uploadPackshot(t *testing.T) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 200, 200))
	for y := range 200 {
		for x := range 200 {
			px := color.NRGBA{255, 255, 255, 255}
			if x > 60 && x < 140 && y > 30 && y < 180 {
				px = color.NRGBA{40, 120, 60, 255}
			}
			img.SetNRGBA(x, y, px)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	var up struct {
		AssetID   string `json:"asset_id"`
		UploadURL string `json:"upload_url"`
	}
	ctx := context.Background()
	if err := c.call(ctx, http.MethodPost, "/assets/upload", map[string]any{
		"mode": "presigned", "filename": "p.png", "content_type": "image/png", "size_bytes": buf.Len(),
	}, &up); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, up.UploadURL, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "image/png")
	resp, err := pluginHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload the packshot: %s", resp.Status)
	}
	return up.AssetID
}
