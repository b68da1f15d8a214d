// Package testcerts makes the certificates of TLS tests: a CA, a server certificate for 127.0.0.1
// and localhost, and client certificates, written as PEM files.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority whose files live in a test's temporary directory.
type CA struct {
	// CertFile is the CA certificate, in PEM.
	CertFile string
	// Pool holds the CA certificate, for a server that verifies client certificates.
	Pool *x509.CertPool

	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Pair is a certificate signed by the CA and its private key.
type Pair struct {
	// CertFile and KeyFile are the certificate and its PKCS #8 key, in PEM.
	CertFile, KeyFile string
	// TLS is the pair for a tls.Config.
	TLS tls.Certificate
}

// NewCA makes a CA valid for an hour.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca := &CA{t: t, dir: t.TempDir(), key: newKey(t)}
	tmpl := template(pkix.Name{CommonName: "shotflow test CA"})
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.Pool = x509.NewCertPool()
	ca.Pool.AddCert(ca.cert)
	ca.CertFile = ca.write("ca.pem", "CERTIFICATE", der)
	return ca
}

// Server makes a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server() Pair {
	ca.t.Helper()
	tmpl := template(pkix.Name{CommonName: "localhost"})
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue("server", tmpl)
}

// Client makes a client certificate whose common name is name.
func (ca *CA) Client(name string) Pair {
	ca.t.Helper()
	tmpl := template(pkix.Name{CommonName: name})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue("client-"+name, tmpl)
}

func (ca *CA) issue(file string, tmpl *x509.Certificate) Pair {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	p := Pair{
		CertFile: ca.write(file+".pem", "CERTIFICATE", der),
		KeyFile:  ca.write(file+"-key.pem", "PRIVATE KEY", keyDER),
	}
	if p.TLS, err = tls.LoadX509KeyPair(p.CertFile, p.KeyFile); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

func (ca *CA) write(name, blockType string, der []byte) string {
	ca.t.Helper()
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func template(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
	}
}
