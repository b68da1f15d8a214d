package ratelimit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// hangingRedis returns the address of a server that accepts connections and never answers: a
// Redis that hangs (stalled, or behind a network that drops its answers).
func hangingRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// returnsSoon runs call and fails the test unless it returns well before the Redis client's own
// timeouts (a minute here) would end it.
func returnsSoon(t *testing.T, what string, call func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		call()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting on a Redis that does not answer after 10 s", what)
	}
}

// A Redis that hangs costs a request at most CallTimeout per call, not the client's timeouts and
// retries: the rate limit and a slot admit the request with the error, as when Redis is down.
func TestRedisThatHangsAdmitsWithinTheCallTimeout(t *testing.T) {
	opts := &redis.Options{Addr: hangingRedis(t), DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	opts.ContextTimeoutEnabled = true // as Open sets it
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })

	returnsSoon(t, "Admit", func() {
		h := http.Header{}
		ok, err := Admit(context.Background(), NewRedis(client, nil), h, "k", 10)
		if !ok || err == nil {
			t.Errorf("Admit with Redis hanging: %v, %v; want admitted with the error", ok, err)
		}
	})
	returnsSoon(t, "Acquire", func() {
		slot, ok, err := NewRedisSlots(client, nil).Acquire(context.Background(), "k", 10, time.Minute)
		if !ok || err == nil || slot == nil {
			t.Errorf("Acquire with Redis hanging: %v, %v, %v; want admitted with the error", slot, ok, err)
		}
	})
}

// Open's client lets a call's deadline bound its reads and writes, so CallTimeout holds.
func TestOpenRedisBoundsCallsByTheirDeadline(t *testing.T) {
	b, err := Open(testRedisURL())
	if err != nil {
		t.Fatalf("Open(%s): %v", testRedisURL(), err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if !b.client.Options().ContextTimeoutEnabled {
		t.Fatal("Open's Redis client ignores the deadlines of its calls")
	}
}

// lostReplies is a go-redis hook that sends every script to Redis, which runs it, and then reports
// the reply lost, as a deadline that ends, or a connection that breaks, after Redis ran it does.
type lostReplies struct{}

var errReplyLost = errors.New("reply lost")

func (lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); err == nil && (name == "evalsha" || name == "eval") {
			cmd.SetErr(errReplyLost)
			return errReplyLost
		}
		return err
	}
}

func (lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An acquisition whose reply is lost after Redis took the slot admits the request with the error,
// with a Slot that holds nothing, so the request never releases what Redis holds: the acquisition
// gives the slot back itself, or the key would count it until its lease ended (the 17 minutes of an
// event stream's), refusing the key's requests at its cap meanwhile.
func TestRedisSlotsLostReplyLeaksNoSlot(t *testing.T) {
	s := openTestRedisSlots(t, nil)
	s.client.AddHook(lostReplies{})
	slot, ok, err := s.Acquire(context.Background(), "k", 1, time.Hour)
	if !ok || !errors.Is(err, errReplyLost) || slot == nil {
		t.Fatalf("Acquire with its reply lost: %v, %v, %v; want admitted with the error", slot, ok, err)
	}
	check := newTestRedis(t)
	if n, err := check.ZCard(context.Background(), s.prefix+"k").Result(); err != nil || n != 0 {
		t.Fatalf("slots held after an acquisition whose reply was lost: %d, %v; want 0", n, err)
	}
}

// deadlineStore is a slot store that records the deadline its release was given.
type deadlineStore struct{ left time.Duration }

func (d *deadlineStore) release(ctx context.Context, _, _ string) error {
	if dl, ok := ctx.Deadline(); ok {
		d.left = time.Until(dl)
	}
	return nil
}

func (d *deadlineStore) extend(context.Context, string, string, int64) (bool, error) {
	return true, nil
}

// A slot's release, which runs before the request's answer is flushed, waits on the store no
// longer than any other call of a request (CallTimeout), so a Redis that hangs holds no answer back
// for seconds.
func TestASlotsReleaseIsBoundedLikeEveryCall(t *testing.T) {
	store := &deadlineStore{}
	slot := &Slot{store: store, key: "k", id: "1", lease: int64(time.Minute / time.Microsecond)}
	if err := slot.Release(); err != nil {
		t.Fatal(err)
	}
	if store.left <= 0 || store.left > CallTimeout {
		t.Errorf("the release had %v to run; want at most CallTimeout (%v)", store.left, CallTimeout)
	}
}
