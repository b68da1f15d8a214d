package render

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// BenchmarkPhotoShoot1024 and BenchmarkPhotoShoot1024Concurrent8 live in render_test.go.

func BenchmarkPackshot1024(b *testing.B) {
	photo := benchShot()
	opts := PackshotOptions{AspectRatio: "1:1", LongEdge: 1024, Seed: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Packshot(photo, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIdea1024(b *testing.B) {
	for _, bc := range []struct {
		kind IdeaKind
		text string
	}{
		{IdeaModel, "elegant woman, long dark hair, navy dress, warm studio"},
		{IdeaScenery, "warm oak wooden table, cozy kitchen, golden morning light"},
	} {
		b.Run(string(bc.kind), func(b *testing.B) {
			opts := IdeaOptions{AspectRatio: "1:1", LongEdge: 1024, Seed: 1}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Idea(bc.kind, bc.text, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPhotoShootJobs renders the 5 photo-shoot jobs of a product (seeds 0 to 4) from its
// 1024×1024 PNG packshot at long edge 64 as the local provider's Generate does (PhotoShootFile,
// then EncodePNG), as a worker with RENDER_LONG_EDGE=64 does; one op is one job. "cold" empties
// the cache before every job (each job decodes and mattes the packshot, as before the cache),
// "warm" only before each product (the first of its 5 jobs does), "hit" never after the first job
// (every other job is a cache hit).
func BenchmarkPhotoShootJobs(b *testing.B) {
	data, err := EncodePNG(benchShot())
	if err != nil {
		b.Fatal(err)
	}
	const jobsPerProduct = 5
	for _, bc := range []struct {
		name  string
		every int // jobs between two resets of the cache; 0: only before the first
	}{{"cold", 1}, {"warm", jobsPerProduct}, {"hit", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			c := NewMatteCache(MatteCacheBytes)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i == 0 || bc.every > 0 && i%bc.every == 0 {
					c.reset()
				}
				img, err := c.PhotoShootFile(data, PhotoShootOptions{LongEdge: 64, Seed: int64(i % jobsPerProduct)})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := EncodePNG(img); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPhotoShootParallel8 renders eight 1024² photo shoots at once per iteration and reports
// the largest heap growth seen during an iteration (sampled every 250µs from a collected heap) as
// peak-MiB: the memory a worker needs to run eight renders concurrently.
func BenchmarkPhotoShootParallel8(b *testing.B) {
	shot := benchShot()
	styles := []string{"warm wood", "cool marble", "dark studio", "pastel", "outdoor beach", "forest", "minimal", "industrial"}
	var peak uint64
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		watch := watchHeap()
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make([]error, len(styles))
		for i, s := range styles {
			wg.Go(func() {
				_, errs[i] = PhotoShoot(shot, PhotoShootOptions{LongEdge: 1024, Seed: int64(i), Style: s})
			})
		}
		wg.Wait()
		b.StopTimer()
		peak = max(peak, watch())
		b.StartTimer()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}

// watchHeap samples the bytes of heap objects until the returned function is called, which
// reports the largest growth over the first sample.
func watchHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		tick := time.NewTicker(250 * time.Microsecond)
		defer tick.Stop()
		top := base
		for {
			select {
			case <-stop:
				done <- max(top, read()) - base
				return
			case <-tick.C:
				top = max(top, read())
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-done
	}
}
