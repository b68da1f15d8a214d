package temporalconn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/temporalconn"
	"github.com/shotflow/shotflow/internal/testsupport/testcerts"
)

// load is config.LoadFrom of env, failing the test on a configuration error.
func load(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.LoadFrom(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeFile writes a file in a fresh temporary directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// isolateCLIConfig points the Temporal CLI's own config file (~/.config/temporalio/temporal.toml)
// at a fresh directory holding text, and returns that file's path.
func isolateCLIConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	path := filepath.Join(dir, "temporalio", "temporal.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const profiles = `
[profile.default]
address = "default.example.com:7233"
namespace = "from-default"

[profile.cloud]
address = "shop.a1b2c.tmprl.cloud:7233"
namespace = "shop.a1b2c"
api_key = "key-from-profile"
`

func TestNothingConfiguredIsTheLocalDevServer(t *testing.T) {
	// Even with a default profile in the Temporal CLI's file: it is read only when asked for.
	isolateCLIConfig(t, profiles)
	conn, err := temporalconn.Resolve(load(t, map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	o := conn.Options
	if o.HostPort != "127.0.0.1:7233" || o.Namespace != "default" || o.ConnectionOptions.TLS != nil || o.Credentials != nil {
		t.Errorf("options = %s %s, TLS %v, credentials %v; want a plaintext 127.0.0.1:7233 default", o.HostPort, o.Namespace, o.ConnectionOptions.TLS, o.Credentials)
	}
}

func TestProfileGivesAddressNamespaceAndAPIKey(t *testing.T) {
	file := writeFile(t, "temporal.toml", profiles)
	conn, err := temporalconn.Resolve(load(t, map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "cloud"}))
	if err != nil {
		t.Fatal(err)
	}
	o := conn.Options
	if o.HostPort != "shop.a1b2c.tmprl.cloud:7233" || o.Namespace != "shop.a1b2c" {
		t.Errorf("address %q, namespace %q; want the cloud profile's", o.HostPort, o.Namespace)
	}
	if o.Credentials == nil || o.ConnectionOptions.TLS == nil {
		t.Errorf("credentials %v, TLS %v; an API key must bring both", o.Credentials, o.ConnectionOptions.TLS)
	}

	// Without TEMPORAL_PROFILE the file's default profile applies.
	conn, err = temporalconn.Resolve(load(t, map[string]string{"TEMPORAL_CONFIG_FILE": file}))
	if err != nil {
		t.Fatal(err)
	}
	if conn.Options.HostPort != "default.example.com:7233" || conn.Options.Namespace != "from-default" {
		t.Errorf("default profile: %q %q", conn.Options.HostPort, conn.Options.Namespace)
	}
}

func TestProfileOfTheCLIConfigFile(t *testing.T) {
	isolateCLIConfig(t, profiles)
	conn, err := temporalconn.Resolve(load(t, map[string]string{"TEMPORAL_PROFILE": "cloud"}))
	if err != nil {
		t.Fatal(err)
	}
	if conn.Options.HostPort != "shop.a1b2c.tmprl.cloud:7233" {
		t.Errorf("address %q, want the cloud profile's of the CLI's file", conn.Options.HostPort)
	}
}

func TestVariablesWinOverTheProfile(t *testing.T) {
	file := writeFile(t, "temporal.toml", profiles)
	conn, err := temporalconn.Resolve(load(t, map[string]string{
		"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "cloud",
		"TEMPORAL_ADDRESS": "temporal.internal:7233", "TEMPORAL_NAMESPACE": "prod", "TEMPORAL_TLS": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	o := conn.Options
	if o.HostPort != "temporal.internal:7233" || o.Namespace != "prod" {
		t.Errorf("address %q, namespace %q; want TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE", o.HostPort, o.Namespace)
	}
	if !o.ConnectionOptions.TLSDisabled || o.ConnectionOptions.TLS != nil || o.Credentials == nil {
		t.Errorf("TLSDisabled %v, TLS %v, credentials %v; want TEMPORAL_TLS=false to win, the profile's key kept",
			o.ConnectionOptions.TLSDisabled, o.ConnectionOptions.TLS, o.Credentials)
	}
}

func TestMutualTLSSettings(t *testing.T) {
	ca := testcerts.NewCA(t)
	client := ca.Client("worker")
	conn, err := temporalconn.Resolve(load(t, map[string]string{
		"TEMPORAL_ADDRESS":                 "temporal.internal:7233",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": ca.CertFile,
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    client.CertFile,
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     client.KeyFile,
		"TEMPORAL_TLS_SERVER_NAME":         "temporal.example.com",
	}))
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := conn.Options.ConnectionOptions.TLS
	if tlsConf == nil || len(tlsConf.Certificates) != 1 || tlsConf.RootCAs == nil || tlsConf.ServerName != "temporal.example.com" || tlsConf.InsecureSkipVerify {
		t.Fatalf("TLS config = %+v; want the client certificate, the CA and the server name", tlsConf)
	}
	if conn.Options.Credentials != nil {
		t.Errorf("credentials %v without an API key", conn.Options.Credentials)
	}

	// The same material inline.
	certPEM, _ := os.ReadFile(client.CertFile)
	keyPEM, _ := os.ReadFile(client.KeyFile)
	caPEM, _ := os.ReadFile(ca.CertFile)
	conn, err = temporalconn.Resolve(load(t, map[string]string{
		"TEMPORAL_TLS_SERVER_CA_CERT_DATA": string(caPEM),
		"TEMPORAL_TLS_CLIENT_CERT_DATA":    string(certPEM),
		"TEMPORAL_TLS_CLIENT_KEY_DATA":     string(keyPEM),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if tlsConf := conn.Options.ConnectionOptions.TLS; tlsConf == nil || len(tlsConf.Certificates) != 1 || tlsConf.RootCAs == nil {
		t.Errorf("TLS config from data = %+v", tlsConf)
	}
}

// TestBadTLSSettingsAreNamed pins the start-up errors of bad Temporal settings: each names the
// setting at fault (a variable, or a profile's key) and says what is wrong with it.
func TestBadTLSSettingsAreNamed(t *testing.T) {
	ca := testcerts.NewCA(t)
	client := ca.Client("api")
	other := testcerts.NewCA(t).Client("other")
	garbage := writeFile(t, "garbage.pem", "not a certificate")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	profileFile := writeFile(t, "temporal.toml", `
[profile.prod]
address = "temporal.internal:7233"
[profile.prod.tls]
client_cert_path = "`+missing+`"
client_key_path = "`+client.KeyFile+`"
[profile.mixed.tls]
client_cert_path = "`+client.CertFile+`"
`)
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"missing client certificate",
			map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": missing, "TEMPORAL_TLS_CLIENT_KEY_PATH": client.KeyFile},
			"TEMPORAL_TLS_CLIENT_CERT_PATH: open " + missing + ": no such file or directory"},
		{"missing client key",
			map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": client.CertFile, "TEMPORAL_TLS_CLIENT_KEY_PATH": missing},
			"TEMPORAL_TLS_CLIENT_KEY_PATH: open " + missing + ": no such file or directory"},
		{"missing server CA",
			map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": missing},
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH: open " + missing + ": no such file or directory"},
		{"server CA is a directory",
			map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": t.TempDir()},
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH: read "},
		{"server CA is not PEM",
			map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH": garbage},
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH: no PEM certificate in " + garbage},
		{"inline server CA is not PEM",
			map[string]string{"TEMPORAL_TLS_SERVER_CA_CERT_DATA": "nope"},
			"TEMPORAL_TLS_SERVER_CA_CERT_DATA: no PEM certificate in it"},
		{"certificate without its key",
			map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": client.CertFile},
			"TEMPORAL_TLS_CLIENT_CERT_PATH is set but not the client key"},
		{"key without its certificate",
			map[string]string{"TEMPORAL_TLS_CLIENT_KEY_PATH": client.KeyFile},
			"TEMPORAL_TLS_CLIENT_KEY_PATH is set but not the client certificate"},
		{"certificate and key that do not match",
			map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": client.CertFile, "TEMPORAL_TLS_CLIENT_KEY_PATH": other.KeyFile},
			"TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH: tls: private key does not match public key"},
		{"certificate that is not PEM",
			map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": garbage, "TEMPORAL_TLS_CLIENT_KEY_PATH": client.KeyFile},
			"TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH: tls: failed to find any PEM data in certificate input"},
		{"a profile's missing certificate",
			map[string]string{"TEMPORAL_CONFIG_FILE": profileFile, "TEMPORAL_PROFILE": "prod"},
			`tls.client_cert_path in profile "prod" of ` + profileFile + ": open " + missing + ": no such file or directory"},
		{"a profile's certificate with the variable's key",
			map[string]string{"TEMPORAL_CONFIG_FILE": profileFile, "TEMPORAL_PROFILE": "mixed", "TEMPORAL_TLS_CLIENT_KEY_PATH": other.KeyFile},
			`tls.client_cert_path in profile "mixed" of ` + profileFile + ", TEMPORAL_TLS_CLIENT_KEY_PATH: tls: private key does not match public key"},
		{"missing config file",
			map[string]string{"TEMPORAL_CONFIG_FILE": missing},
			"TEMPORAL_CONFIG_FILE: open " + missing + ": no such file or directory"},
		{"config file that is not TOML",
			map[string]string{"TEMPORAL_CONFIG_FILE": garbage},
			"TEMPORAL_CONFIG_FILE: " + garbage + ": "},
		{"unknown profile",
			map[string]string{"TEMPORAL_CONFIG_FILE": profileFile, "TEMPORAL_PROFILE": "staging"},
			`TEMPORAL_PROFILE: no profile "staging" in ` + profileFile},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := temporalconn.Resolve(load(t, tc.env))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Resolve = %v\nwant an error starting %q", err, tc.want)
			}
		})
	}
}

func TestTLSSettingsAreIgnoredWhenTLSIsOff(t *testing.T) {
	_, err := temporalconn.Resolve(load(t, map[string]string{
		"TEMPORAL_TLS": "false", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": filepath.Join(t.TempDir(), "missing.pem"),
	}))
	if err != nil {
		t.Errorf("Resolve with TEMPORAL_TLS=false = %v; the TLS files are not used", err)
	}
}

func TestProfileOfTheCLIConfigFileMissing(t *testing.T) {
	path := isolateCLIConfig(t, "")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err := temporalconn.Resolve(load(t, map[string]string{"TEMPORAL_PROFILE": "cloud"}))
	if err == nil || !strings.HasPrefix(err.Error(), "TEMPORAL_PROFILE: open "+path+": no such file or directory") ||
		!strings.Contains(err.Error(), "set TEMPORAL_CONFIG_FILE") {
		t.Errorf("Resolve = %v", err)
	}
}

func TestDialErrorNamesTheAddressAndItsSource(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TEMPORAL_ADDRESS": "127.0.0.1:1"}, "connect to Temporal at 127.0.0.1:1 (TEMPORAL_ADDRESS): "},
		{map[string]string{"TEMPORAL_CONFIG_FILE": writeFile(t, "t.toml", "[profile.default]\naddress = \"127.0.0.1:1\"\n")},
			`connect to Temporal at 127.0.0.1:1 (profile "default" of `},
	} {
		conn, err := temporalconn.Resolve(load(t, tc.env))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err := conn.Dial(ctx, nil)
		cancel()
		if err == nil {
			c.Close()
			t.Fatal("Dial to a closed port succeeded")
		}
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Dial = %v, want it to start %q", err, tc.want)
		}
	}
}

// TEMPORAL_GRPC_COMPRESSION=none turns the SDK's request compression off; unset or gzip leaves
// the SDK's default, gzip.
func TestGRPCCompression(t *testing.T) {
	for _, tc := range []struct {
		setting string
		none    bool
	}{{"", false}, {"gzip", false}, {"none", true}} {
		conn, err := temporalconn.Resolve(load(t, map[string]string{"TEMPORAL_GRPC_COMPRESSION": tc.setting}))
		if err != nil {
			t.Fatal(err)
		}
		got := conn.Options.ConnectionOptions.GrpcCompression
		if _, none := got.(*client.GrpcCompressionNone); none != tc.none || (!tc.none && got != nil) {
			t.Errorf("TEMPORAL_GRPC_COMPRESSION=%q: GrpcCompression %#v, want none: %v", tc.setting, got, tc.none)
		}
	}
	if _, err := config.LoadFrom(map[string]string{"TEMPORAL_GRPC_COMPRESSION": "zstd"}); err == nil ||
		!strings.Contains(err.Error(), "TEMPORAL_GRPC_COMPRESSION") {
		t.Errorf("TEMPORAL_GRPC_COMPRESSION=zstd: %v, want a refusal naming it", err)
	}
}
