// Package devserver runs the Temporal CLI's development server (`temporal server start-dev`) as a
// child process of `shotflow dev`: persistent SQLite file, Web UI, shotflow's search attributes.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// Options describe the dev server to start.
type Options struct {
	CLIPath          string   // the temporal binary
	DBFile           string   // SQLite file that keeps workflows across restarts
	Port             int      // frontend gRPC port
	UIPort           int      // Web UI port
	Namespace        string   // namespace to create
	SearchAttributes []string // search attributes to register, as NAME=TYPE (ShotflowOrderID=Keyword)
	LogFile          string   // where the server's output goes
}

// Server is a running dev server.
type Server struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	log    *os.File
}

// Address is the frontend address of the server.
func (o Options) Address() string { return "127.0.0.1:" + strconv.Itoa(o.Port) }

// Start launches the dev server and waits until its frontend answers health checks.
func Start(ctx context.Context, o Options) (*Server, error) {
	path, err := exec.LookPath(o.CLIPath)
	if err != nil {
		return nil, fmt.Errorf("temporal CLI not found at %s (`make run` installs it into bin/; TEMPORAL_CLI_PATH points elsewhere): %w", o.CLIPath, err)
	}
	for _, port := range []int{o.Port, o.UIPort} {
		if err := portFree(port); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.DBFile), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := []string{"server", "start-dev",
		"--ip", "127.0.0.1", "--port", strconv.Itoa(o.Port),
		"--ui-ip", "127.0.0.1", "--ui-port", strconv.Itoa(o.UIPort),
		"--db-filename", o.DBFile, "--namespace", o.Namespace,
		"--log-level", "warn",
	}
	for _, sa := range o.SearchAttributes {
		args = append(args, "--search-attribute", sa)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group so a Ctrl+C in the terminal reaches us first and we stop the server in
	// order; Pdeathsig so it dies with us even if we are killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	s := &Server{cmd: cmd, exited: make(chan struct{}), log: logf}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitHealthy(ctx, o); err != nil {
		s.Stop(5 * time.Second)
		return nil, err
	}
	return s, nil
}

func (s *Server) waitHealthy(ctx context.Context, o Options) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("temporal dev server exited during start-up (%v); see %s", s.err, o.LogFile)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := client.Dial(client.Options{HostPort: o.Address(), Namespace: o.Namespace, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))}); err == nil {
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, herr := c.CheckHealth(hctx, &client.CheckHealthRequest{})
			cancel()
			c.Close()
			if herr == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal dev server did not become healthy within 90s; see %s", o.LogFile)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Stop sends SIGTERM to the server's process group, waits up to grace, then kills it.
func (s *Server) Stop(grace time.Duration) error {
	defer s.log.Close()
	select {
	case <-s.exited:
		return nil
	default:
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-s.exited
	return errors.New("temporal dev server did not stop in time and was killed")
}

// Exited is closed when the server process ends.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Pid is the server's process ID.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

func portFree(port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("port %d is already in use (is another `shotflow dev` running? change DEV_TEMPORAL_PORT / DEV_TEMPORAL_UI_PORT): %w", port, err)
	}
	return ln.Close()
}
