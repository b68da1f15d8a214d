package e2e_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/api/plugin"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/testsupport/testcerts"
	"github.com/shotflow/shotflow/internal/testsupport/testenv"
	"github.com/shotflow/shotflow/models/status"
)

// tlsProxy stands for a Temporal cluster that only accepts mutual TLS: it terminates TLS,
// requiring a client certificate signed by its CA, and pipes the decrypted bytes (gRPC over h2)
// to the dev server's plaintext frontend.
type tlsProxy struct {
	addr string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	clients []string // common names of the client certificates it verified
}

func startTLSProxy(t *testing.T, ca *testcerts.CA, target string) *tlsProxy {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{ca.Server().TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsProxy{addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(c.(*tls.Conn), target) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// track remembers c for the cleanup to close; false (c closed) when the proxy is closing.
func (p *tlsProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *tlsProxy) serve(conn *tls.Conn, target string) {
	if !p.track(conn) {
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := conn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		// No certificate, or one the CA did not sign. Close as a server that flushed its alert
		// does: read what the client still sends until it hangs up, so that it reads the alert
		// rather than a reset (closing with its bytes unread would send one).
		raw := conn.NetConn()
		_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, raw)
		return
	}
	p.mu.Lock()
	p.clients = append(p.clients, conn.ConnectionState().PeerCertificates[0].Subject.CommonName)
	p.mu.Unlock()
	server, err := net.Dial("tcp", target)
	if err != nil || !p.track(server) {
		return
	}
	defer server.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(server, conn)
		close(done)
	}()
	_, _ = io.Copy(conn, server)
	conn.Close()
	server.Close()
	<-done
}

// verified lists the common names of the client certificates the proxy accepted so far.
func (p *tlsProxy) verified() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.clients)
}

// TestOrderRunsOverMutualTLS reaches Temporal only through a proxy that requires mutual TLS, as a
// production cluster would. The API (in process) and a real `shotflow worker` process, each with
// its own client certificate in the TEMPORAL_TLS_* settings, run an order to completion; a client
// without a certificate, and a worker without one, are refused with the reason.
func TestOrderRunsOverMutualTLS(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA(t)
	proxy := startTLSProxy(t, ca, temporalServer.FrontendHostPort())
	mtls := func(cert testcerts.Pair) map[string]string {
		return map[string]string{
			"TEMPORAL_ADDRESS":                 proxy.addr,
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH": ca.CertFile,
			"TEMPORAL_TLS_SERVER_NAME":         "localhost",
			"TEMPORAL_TLS_CLIENT_CERT_PATH":    cert.CertFile,
			"TEMPORAL_TLS_CLIENT_KEY_PATH":     cert.KeyFile,
		}
	}
	env := testenv.New(t, temporalServer, testenv.Options{NoWorker: true, Environment: mtls(ca.Client("shotflow-api"))})
	if env.App.Config.TemporalAddress != proxy.addr {
		t.Fatalf("the app's Temporal address is %s, want the proxy %s", env.App.Config.TemporalAddress, proxy.addr)
	}
	var workerEnv []string
	for k, v := range mtls(ca.Client("shotflow-worker")) {
		workerEnv = append(workerEnv, k+"="+v)
	}
	worker := env.StartWorkerProcess(t, workerEnv...)

	tenant := env.NewTenant(t, 10)
	api := &client{t: t, base: env.BaseURL + plugin.Base, key: tenant.PluginKey}
	registerPackshot(t, env, api, "lamp", packshotPNG(t))
	session := startSession(t, api, "lamp", "local/studio-v1", 1)
	for id, job := range waitTerminal(t, api, session.Subjects[0].JobIDs) {
		if job.Status != status.JobCompleted || len(job.Outputs) != 1 {
			t.Errorf("job %s: %s with %d outputs, want completed with 1", id, job.Status, len(job.Outputs))
		}
	}
	select {
	case <-worker.Exited():
		t.Fatalf("the worker exited:\n%s", worker.Output())
	default:
	}
	if got := proxy.verified(); !slices.Contains(got, "shotflow-api") || !slices.Contains(got, "shotflow-worker") {
		t.Errorf("the proxy verified client certificates %v, want the API's and the worker's", got)
	}

	// The same settings without a client certificate: refused during the handshake.
	cfg := env.Config
	cfg.TemporalConnection.TLSClientCertPath, cfg.TemporalConnection.TLSClientKeyPath = "", ""
	conn, err := temporalconn.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if c, err := conn.Dial(ctx, zap.NewNop()); err == nil {
		c.Close()
		t.Fatal("a client without a certificate connected")
	} else if msg := err.Error(); !strings.Contains(msg, "connect to Temporal at "+proxy.addr) || !strings.Contains(msg, "certificate required") {
		t.Errorf("refused client's error = %q, want it to name the address and say a certificate is required", msg)
	}

	// A worker without one stops at start-up and says why.
	refused := env.StartWorkerProcess(t, append(workerEnv, "TEMPORAL_TLS_CLIENT_CERT_PATH=", "TEMPORAL_TLS_CLIENT_KEY_PATH=")...)
	select {
	case <-refused.Exited():
	case <-time.After(60 * time.Second):
		t.Fatalf("a worker without a client certificate is still running:\n%s", refused.Output())
	}
	if out := refused.Output(); !strings.Contains(out, "connect to Temporal at "+proxy.addr) || !strings.Contains(out, "certificate required") {
		t.Errorf("the refused worker printed %q, want the address and that a certificate is required", out)
	}
}
