// Package linger closes HTTP connections the way nginx's lingering close does. When a server
// answers before it has read the whole request (a body over the route's limit is refused with 413
// at once) and closes the connection, a client still sending its body gets a connection reset
// instead of the answer: the kernel resets a connection closed with unread data. A lingering close
// half-closes the connection first (the client reads the answer and then an end of stream), reads
// and drops what the client still sends, within a bound of time and bytes, and only then closes.
package linger

import (
	"net"
	"sync"
	"time"
)

// Defaults of a Listener: how long a closed connection lingers at most, how long it waits for the
// client's next bytes, how many it reads and drops, and how many connections linger at once.
const (
	DefaultTime  = 10 * time.Second
	DefaultIdle  = 2 * time.Second
	DefaultBytes = 64 << 20
	DefaultMax   = 256
)

// Listener is a TCP listener whose connections close lingering.
type Listener struct {
	net.Listener
	// Time bounds how long a connection lingers, Idle how long it waits for more bytes, Bytes how
	// many it reads and drops.
	Time, Idle time.Duration
	Bytes      int64
	slots      chan struct{} // one per lingering connection; full, a connection closes at once
}

// New returns ln with lingering closes and the default bounds.
func New(ln net.Listener) *Listener {
	return &Listener{Listener: ln, Time: DefaultTime, Idle: DefaultIdle, Bytes: DefaultBytes, slots: make(chan struct{}, DefaultMax)}
}

// Accept returns the next connection; a TCP connection closes lingering.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tcp, ok := c.(*net.TCPConn); ok {
		return &conn{TCPConn: tcp, l: l}, nil
	}
	return c, nil
}

// conn is a TCP connection whose Close lingers.
type conn struct {
	*net.TCPConn
	l    *Listener
	once sync.Once
}

// Close half-closes the connection and returns; a goroutine then reads and drops what the client
// still sends until it stops (end of stream or Idle without a byte), Time has passed or Bytes were
// read, and closes. When too many connections linger already, Close closes at once.
func (c *conn) Close() error {
	err := error(nil)
	c.once.Do(func() {
		select {
		case c.l.slots <- struct{}{}:
		default:
			err = c.TCPConn.Close()
			return
		}
		if err = c.CloseWrite(); err != nil {
			<-c.l.slots
			err = c.TCPConn.Close()
			return
		}
		go c.drain()
	})
	return err
}

// drain reads and drops the client's bytes within the listener's bounds, then closes.
func (c *conn) drain() {
	defer func() { <-c.l.slots }()
	defer c.TCPConn.Close()
	end := time.Now().Add(c.l.Time)
	buf := make([]byte, 32<<10)
	for read := int64(0); read < c.l.Bytes; {
		deadline := time.Now().Add(c.l.Idle)
		if deadline.After(end) {
			deadline = end
		}
		if c.SetReadDeadline(deadline) != nil {
			return
		}
		n, err := c.Read(buf)
		read += int64(n)
		if err != nil {
			return
		}
	}
}
