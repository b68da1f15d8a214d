package models

import (
	"context"
	"sync"
)

// accountGate lets one reservation of an account at a time through, per process. Every order's
// reservation updates its account's row (and a plugin order's installation's), so PostgreSQL
// writes the orders of one account one after the other whatever the callers do; without the gate,
// a burst of one account's requests waits inside the database, each waiter holding a connection of
// the pool and costing the database a lock wait and a re-check of the row's latest version
// (1.89–2.44 ms of PostgreSQL CPU per order with 8 clients on one account, 0.76 ms with the gate;
// docs/benchmarks.md, "One account's row"). With it the waiters queue in the process, outside the
// pool, and the other tenants' requests keep their connections. Orders of different accounts
// never wait for each other, and several processes still meet at the row, where PostgreSQL orders
// them.
//
// A waiter gives up when its context ends. The gate is never held while waiting for anything but
// the reservation's own statement or transaction, so it cannot deadlock with the database.
type accountGate struct {
	mu    sync.Mutex
	gates map[string]*gate
}

// gate is one account's: a token in turn, and how many hold or wait for it.
type gate struct {
	turn  chan struct{}
	users int
}

// enter waits for the account's turn and returns the function that ends it, or ctx's error.
func (g *accountGate) enter(ctx context.Context, accountID string) (func(), error) {
	g.mu.Lock()
	if g.gates == nil {
		g.gates = map[string]*gate{}
	}
	a := g.gates[accountID]
	if a == nil {
		a = &gate{turn: make(chan struct{}, 1)}
		g.gates[accountID] = a
	}
	a.users++
	g.mu.Unlock()
	select {
	case a.turn <- struct{}{}:
		return func() { <-a.turn; g.leave(accountID, a) }, nil
	case <-ctx.Done():
		g.leave(accountID, a)
		return nil, ctx.Err()
	}
}

// leave forgets the account's gate when nobody holds or waits for it any more.
func (g *accountGate) leave(accountID string, a *gate) {
	g.mu.Lock()
	if a.users--; a.users == 0 {
		delete(g.gates, accountID)
	}
	g.mu.Unlock()
}
