// Command loadgen measures a running shotflow through its plugin API: how many sessions per second
// the API accepts, how many jobs per second complete end to end, and how many Temporal history
// events each job costs. It only talks to the addresses it is given (loopback by default), stops by
// itself, and prints a summary for docs/benchmarks.md.
//
//	loadgen -base http://localhost:8080 -key pk_live_… -orders 50 -images 4
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
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shotflow/shotflow/internal/config"
	"github.com/shotflow/shotflow/internal/temporalconn"
)

type options struct {
	base, key, model, temporal, namespace string
	history                               bool
	orders, images, products, concurrency int
	timeout                               time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.base, "base", "http://localhost:8080", "API base URL")
	flag.StringVar(&o.key, "key", "", "plugin API key (default: from .data/dev-credentials.json)")
	flag.StringVar(&o.model, "model", "local/studio-v1", "ai_model of every subject")
	flag.BoolVar(&o.history, "history", true, "count the Temporal history events of each workflow")
	flag.StringVar(&o.temporal, "temporal", "", "Temporal frontend (default: TEMPORAL_ADDRESS, else the Temporal profile's, else 127.0.0.1:7233)")
	flag.StringVar(&o.namespace, "namespace", "", "Temporal namespace (default: TEMPORAL_NAMESPACE, else the Temporal profile's, else default)")
	flag.IntVar(&o.orders, "orders", 20, "sessions to submit")
	flag.IntVar(&o.products, "products", 1, "subjects (products) per session")
	flag.IntVar(&o.images, "images", 5, "images_count per subject")
	flag.IntVar(&o.concurrency, "concurrency", 8, "sessions submitted at once")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	if o.key == "" {
		o.key = keyFromDevCredentials()
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
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
	if o.key == "" {
		return errors.New("no -key and no .data/dev-credentials.json")
	}
	// Resolved first, so a bad Temporal setting is reported before the load runs.
	var temporal *temporalconn.Connection
	if o.history {
		conn, err := temporalConnection(o)
		if err != nil {
			return err
		}
		temporal = &conn
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	a := &api{base: strings.TrimRight(o.base, "/"), key: o.key, http: &http.Client{Timeout: time.Minute}}
	prefix := fmt.Sprintf("load-%d", time.Now().UnixNano())
	refs, err := setupProducts(ctx, a, prefix, o.products)
	if err != nil {
		return err
	}

	// Phase 1: submit sessions.
	subjects := make([]map[string]any, len(refs))
	for i, ref := range refs {
		subjects[i] = map[string]any{"product_ref": ref, "images_count": o.images, "ai_model": o.model}
	}
	var (
		mu       sync.Mutex
		jobIDs   []string
		orders   []string
		latency  []time.Duration
		wg       sync.WaitGroup
		firstErr error
	)
	sem := make(chan struct{}, o.concurrency)
	start := time.Now()
	for range o.orders {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
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
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			latency = append(latency, time.Since(t0))
			orders = append(orders, resp.OrderID)
			for _, s := range resp.Subjects {
				jobIDs = append(jobIDs, s.JobIDs...)
			}
		}()
	}
	wg.Wait()
	acceptSecs := time.Since(start).Seconds()
	if firstErr != nil {
		return firstErr
	}
	slices.Sort(latency)

	// Phase 2: wait until every order is finished.
	for _, id := range orders {
		for {
			var order struct {
				Status string `json:"status"`
			}
			if _, err := a.call(ctx, http.MethodGet, "/orders/"+id, nil, &order); err != nil {
				return err
			}
			if order.Status != "in_progress" {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	totalSecs := time.Since(start).Seconds()

	fmt.Printf("sessions accepted:   %d in %.2fs = %.1f sessions/s (p50 %v, p95 %v)\n",
		len(orders), acceptSecs, float64(len(orders))/acceptSecs, pct(latency, 50), pct(latency, 95))
	fmt.Printf("jobs completed:      %d in %.2fs = %.1f jobs/s end to end\n", len(jobIDs), totalSecs, float64(len(jobIDs))/totalSecs)
	if temporal != nil {
		perJob, perOrder, err := historySizes(ctx, *temporal, orders, jobIDs)
		if err != nil {
			return err
		}
		fmt.Printf("history events:      %.1f per JobWorkflow, %.1f per OrderWorkflow run\n", perJob, perOrder)
	}
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(time.Millisecond)
}

// setupProducts uploads one packshot image and registers it for n new products.
func setupProducts(ctx context.Context, a *api, prefix string, n int) ([]string, error) {
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
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, up.UploadURL, bytes.NewReader(buf.Bytes()))
	req.Header.Set("Content-Type", "image/png")
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upload: %s", resp.Status)
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
			return nil, err
		}
	}
	return refs, nil
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

// historySizes averages history lengths over a sample of job and order workflows.
func historySizes(ctx context.Context, temporal temporalconn.Connection, orders, jobIDs []string) (float64, float64, error) {
	c, err := temporal.Dial(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	count := func(id string) (int, error) {
		n := 0
		it := c.GetWorkflowHistory(ctx, id, "", false, 0)
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				return 0, err
			}
			n++
		}
		return n, nil
	}
	sample := func(ids []string, prefix string) (float64, error) {
		if len(ids) > 50 {
			ids = ids[:50]
		}
		total := 0
		for _, id := range ids {
			n, err := count(prefix + id)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return float64(total) / float64(len(ids)), nil
	}
	perJob, err := sample(jobIDs, "job/")
	if err != nil {
		return 0, 0, err
	}
	perOrder, err := sample(orders, "order/")
	return perJob, perOrder, err
}
