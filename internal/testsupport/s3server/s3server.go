// Package s3server runs a real S3-compatible server for tests: versitygw (pinned in the Makefile,
// installed into bin/ by `make versitygw`, which `make test` runs) over its posix backend, where a
// bucket is a folder of the server's directory. It listens on a free port below 32768 (the
// kernel's outgoing range starts there) and can be killed and restarted on the same port and
// directory, for outage tests.
package s3server

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/testsupport/testenv"
)

// RequireEnv names the environment variable that makes a missing server binary fail the test
// instead of skipping it; `make test` sets it, and so does CI (CI=true).
const RequireEnv = "SHOTFLOW_REQUIRE_S3"

// The root credentials of every server Start runs: the same for all, so that tests of one process,
// whose S3 clients read them from the process's environment, can run their servers in parallel.
const (
	AccessKey = "shotflow-test"
	SecretKey = "shotflow-test-secret"
)

// Server is a running versitygw.
type Server struct {
	// Addr is the host:port it listens on.
	Addr string
	// Dir holds its buckets, one folder each.
	Dir string
	// Bucket is the bucket Start created.
	Bucket string
	// AccessKey and SecretKey are its root credentials.
	AccessKey, SecretKey string

	bin    string
	proc   *os.Process
	exited chan error
	log    *os.File
}

// Binary is the path of bin/versitygw. When it is missing the test is skipped, or failed when
// RequireEnv or CI is set.
func Binary(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		msg := "s3server: bin/versitygw is missing; `make versitygw` installs it"
		if os.Getenv(RequireEnv) != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Start runs versitygw with one bucket, "shotflow", and stops it at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		Dir: t.TempDir(), Bucket: "shotflow", bin: Binary(t),
		AccessKey: AccessKey, SecretKey: SecretKey,
	}
	if err := os.Mkdir(filepath.Join(s.Dir, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 20 {
		s.Addr = "127.0.0.1:" + strconv.Itoa(20000+rand.IntN(12000))
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// URL is the BLOB_URL of the bucket (gocloud.dev s3blob, path-style, plain HTTP).
func (s *Server) URL() string {
	q := url.Values{}
	q.Set("endpoint", "http://"+s.Addr)
	q.Set("region", "us-east-1")
	q.Set("use_path_style", "true")
	q.Set("disable_https", "true")
	return "s3://" + s.Bucket + "?" + q.Encode()
}

// Env is the environment a process needs to reach the bucket: its URL and credentials.
func (s *Server) Env() []string {
	return []string{
		"BLOB_URL=" + s.URL(),
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Setenv puts the servers' credentials in this process's environment, for a blob store opened here
// (the S3 client reads them there). They are the same for every server, so tests that call it may
// run in parallel; they stay set for the rest of the process.
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	setenvOnce.Do(func() {
		for _, kv := range s.Env()[1:] {
			k, v, _ := cutEnv(kv)
			setenvErr = os.Setenv(k, v)
			if setenvErr != nil {
				return
			}
		}
	})
	if setenvErr != nil {
		t.Fatal(setenvErr)
	}
}

var (
	setenvOnce sync.Once
	setenvErr  error
)

func cutEnv(kv string) (string, string, bool) {
	for i := range kv {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// Kill stops the server with SIGKILL; a stopped server is left alone.
func (s *Server) Kill() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Signal(syscall.SIGKILL)
	<-s.exited
	s.proc = nil
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}

// Restart starts a killed server again on its port and directory: every file is still there.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var err error
	for range 50 { // the port may linger for a moment after the kill
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("s3server: restart: %v", err)
}

// start runs the server and waits until it accepts connections.
func (s *Server) start() error {
	log, err := os.CreateTemp("", "versitygw-*.log")
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--port", s.Addr, "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(log.Name())
			log.Close()
			return fmt.Errorf("versitygw on %s exited: %v\n%s", s.Addr, err, out)
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond); err == nil {
			c.Close()
			s.proc, s.exited, s.log = cmd.Process, exited, log
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	log.Close()
	return fmt.Errorf("versitygw on %s did not listen within 15 s", s.Addr)
}
