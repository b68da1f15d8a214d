package faultproxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string, timeout time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

func TestModes(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(open, "one", time.Second); err != nil || got != "one\n" {
		t.Fatalf("forward: %q, %v", got, err)
	}

	// Black-holed: new connections are accepted but answer nothing; open ones stall.
	if err := p.SetMode(Blackhole); err != nil {
		t.Fatal(err)
	}
	fresh, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("black-holed proxy refused a connection: %v", err)
	}
	var ne net.Error
	if _, err := roundTrip(fresh, "lost", 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("black-holed new connection answered: %v", err)
	}
	if _, err := roundTrip(open, "held", 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("black-holed open connection answered: %v", err)
	}

	// Forwarding again: the stalled connection delivers what it held.
	if err := p.SetMode(Forward); err != nil {
		t.Fatal(err)
	}
	_ = open.SetDeadline(time.Now().Add(time.Second))
	if line, err := bufio.NewReader(open).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("held bytes after the partition: %q, %v", line, err)
	}

	// Refused: the port answers RST and open connections are cut.
	if err := p.SetMode(Refuse); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refusing proxy: dial error %v, want connection refused", err)
	}
	if _, err := roundTrip(open, "cut", time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection survived refusal: %v", err)
	}

	if err := p.SetMode(Forward); err != nil {
		t.Fatal(err)
	}
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(again, "back", time.Second); err != nil || got != "back\n" {
		t.Fatalf("forward after refusal: %q, %v", got, err)
	}
}
