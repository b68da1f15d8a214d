// Package faultproxy is a TCP proxy for fault tests: it forwards connections to a target (a
// database, Temporal) and can be switched to refuse them or to black-hole them, as a crashed
// server or a network partition would, and back.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is how the proxy treats traffic.
type Mode int

const (
	// Forward passes traffic both ways.
	Forward Mode = iota
	// Refuse closes the listener and every open connection: new connections are refused (RST),
	// as when the server is down.
	Refuse
	// Blackhole accepts connections but forwards nothing, and stalls open ones, as when packets
	// are dropped on the way. Stalled connections resume when the proxy forwards again;
	// connections accepted while black-holing are closed then.
	Blackhole
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Forward:
		return "forward"
	case Refuse:
		return "refuse"
	case Blackhole:
		return "blackhole"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards a local address to a target address.
type Proxy struct {
	addr   string
	target string

	mu      sync.Mutex
	cond    *sync.Cond
	mode    Mode
	ln      net.Listener
	conns   map[net.Conn]struct{} // every open connection, both sides
	held    map[net.Conn]struct{} // accepted while black-holing, never forwarded
	closed  bool
	serving sync.WaitGroup
}

// Start listens on a free loopback port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the proxy. Leaving Refuse listens again on the same address.
func (p *Proxy) SetMode(m Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("faultproxy: closed")
	}
	old := p.mode
	p.mode = m
	switch {
	case m == Refuse:
		if p.ln != nil {
			_ = p.ln.Close()
			p.ln = nil
		}
		for c := range p.conns {
			_ = c.Close()
		}
	case old == Refuse:
		ln, err := listenAgain(p.addr)
		if err != nil {
			p.mode = old
			return err
		}
		p.serve(ln)
	}
	if old == Blackhole && m != Blackhole {
		for c := range p.held {
			_ = c.Close()
		}
	}
	p.cond.Broadcast()
	return nil
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.serving.Wait()
	return nil
}

func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("faultproxy: listen again on %s: %w", addr, err)
}

// serve accepts on ln until it is closed; p.mu is held by the caller or not yet shared.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.serving.Add(1)
	go func() {
		defer p.serving.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Refuse {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		delete(p.held, c)
		_ = c.Close()
	}
}

func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		return
	}
	p.mu.Lock()
	if p.mode == Blackhole {
		p.held[client] = struct{}{}
		p.mu.Unlock()
		// Swallow what the client sends until it gives up or the proxy forwards again.
		_, _ = io.Copy(io.Discard, client)
		p.untrack(client)
		return
	}
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			_ = server.Close()
		}
		p.untrack(client)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(server, client) }()
	go func() { defer wg.Done(); p.pipe(client, server) }()
	wg.Wait()
	p.untrack(client, server)
}

// pipe copies src to dst, holding the bytes while the proxy black-holes.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == Blackhole && !p.closed {
				p.cond.Wait()
			}
			stop := p.closed || p.mode == Refuse
			p.mu.Unlock()
			if stop {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
