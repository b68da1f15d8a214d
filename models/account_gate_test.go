package models

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestAccountGateLetsOneReservationOfAnAccountThrough(t *testing.T) {
	var g accountGate
	ctx := context.Background()
	done, err := g.enter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another account is not held up.
	other, err := g.enter(ctx, "b")
	if err != nil {
		t.Fatalf("account b waited for a: %v", err)
	}
	other()
	// The same account waits for its turn...
	var entered atomic.Bool
	second := make(chan func())
	go func() {
		d, err := g.enter(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		entered.Store(true)
		second <- d
	}()
	time.Sleep(50 * time.Millisecond)
	if entered.Load() {
		t.Fatal("a second reservation of account a entered while the first held the gate")
	}
	// ...and enters when the first ends.
	done()
	select {
	case d := <-second:
		d()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting reservation did not enter after the first ended")
	}
	if n := g.waiting(); n != 0 {
		t.Fatalf("%d gates kept after every reservation ended, want 0", n)
	}
}

func TestAccountGateWaiterGivesUpWithItsContext(t *testing.T) {
	var g accountGate
	done, err := g.enter(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: err = %v, want context.DeadlineExceeded", err)
	}
	done()
	if n := g.waiting(); n != 0 {
		t.Fatalf("%d gates kept after the waiter gave up and the holder ended, want 0", n)
	}
	// The gate still works after a waiter gave up.
	again, err := g.enter(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	again()
}

// waiting is how many accounts have a gate held or waited for.
func (g *accountGate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.gates)
}
