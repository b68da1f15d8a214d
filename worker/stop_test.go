package worker

import (
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
)

// drainingWorker is a worker whose Stop drains until every worker of its group has been told to
// stop, as a real one lets its running activities finish: it records that it was told, then
// waits for the others (or gives up after a while, reporting that it drained alone).
type drainingWorker struct {
	worker.Worker
	told    *sync.WaitGroup
	all     chan struct{}
	drained bool // every worker had been told to stop while this one drained
}

func (w *drainingWorker) Stop() {
	w.told.Done()
	select {
	case <-w.all:
		w.drained = true
	case <-time.After(2 * time.Second):
	}
}

// Stop tells every worker of the process to stop at once, so that they drain side by side: a
// provider's worker stops taking new generate attempts as soon as the main worker does, and the
// whole drain lasts one StopTimeout, not one per worker (SHUTDOWN_TIMEOUT bounds it).
func TestGroupStopsEveryWorkerAtOnce(t *testing.T) {
	t.Parallel()
	var told sync.WaitGroup
	all := make(chan struct{})
	ws := make([]*drainingWorker, 4) // main, watch and two providers
	g := &Group{}
	for i := range ws {
		told.Add(1)
		ws[i] = &drainingWorker{told: &told, all: all}
		g.workers = append(g.workers, ws[i])
	}
	go func() { told.Wait(); close(all) }()
	g.Stop()
	for i, w := range ws {
		if !w.drained {
			t.Errorf("worker %d drained before every worker was told to stop: the workers stop one after another", i)
		}
	}
}
