// Package temporalconn builds the Temporal client of every shotflow process (api, worker, dev,
// admin, cmd/loadgen) from its configuration with go.temporal.io/sdk/contrib/envconfig, so any
// deployment can be reached: a local dev server, a self-hosted cluster with TLS or mTLS, or
// Temporal Cloud with an API key or a client certificate.
package temporalconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/logging"
)

const (
	// DefaultAddress is the frontend used when neither TEMPORAL_ADDRESS nor a profile names one:
	// a local dev server.
	DefaultAddress = "127.0.0.1:7233"
	// DefaultNamespace is the namespace used when neither TEMPORAL_NAMESPACE nor a profile names one.
	DefaultNamespace = "default"
)

// Connection is how a process reaches Temporal, resolved from its configuration.
type Connection struct {
	// Options are the client options; HostPort and Namespace are always set, Logger never is.
	Options client.Options
	// from says where HostPort comes from, for error messages.
	from string
}

// Resolve builds the connection of cfg: the profile of the Temporal config file (only when
// TEMPORAL_CONFIG_FILE or TEMPORAL_PROFILE is set), overlaid field by field by the Temporal
// variables that are set (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*),
// then DefaultAddress and DefaultNamespace for what is still unset, and TEMPORAL_GRPC_COMPRESSION
// (which envconfig does not know). Every TLS file and PEM
// setting is read and parsed here, so a bad one is reported by name before anything connects.
func Resolve(cfg config.Config) (Connection, error) {
	vars := variablesOf(cfg)
	prof, src, err := loadProfile(cfg.TemporalConnection)
	if err != nil {
		return Connection{}, err
	}
	fromProfile := prof.Address != ""
	// The variables come from cfg, which names each of them; ApplyEnvVars never fails on them.
	if err := prof.ApplyEnvVars(vars); err != nil {
		return Connection{}, fmt.Errorf("temporal settings: %w", err)
	}
	from := "the default; set TEMPORAL_ADDRESS or TEMPORAL_PROFILE"
	switch {
	case cfg.TemporalAddress != "":
		from = "TEMPORAL_ADDRESS"
	case fromProfile:
		from = src.String()
	}
	prof.Address = cmp.Or(prof.Address, DefaultAddress)
	prof.Namespace = cmp.Or(prof.Namespace, DefaultNamespace)
	if prof.TLS != nil && !prof.TLS.Disabled {
		if err := checkTLS(prof.TLS, namer{vars: vars, src: src}); err != nil {
			return Connection{}, err
		}
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return Connection{}, fmt.Errorf("temporal settings: %w", err)
	}
	if cfg.TemporalGRPCCompression == "none" {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	return Connection{Options: opts, from: from}, nil
}

// Dial connects to Temporal and checks the server answers; the SDK logs through log (nil: the
// SDK's own logger). The error names the address and where it comes from.
func (c Connection) Dial(ctx context.Context, log *zap.Logger) (client.Client, error) {
	opts := c.Options
	if log != nil {
		opts.Logger = logging.NewTemporal(log)
	}
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (%s): %w", opts.HostPort, c.from, err)
	}
	return cl, nil
}

// variables are the set (non-empty) variables of cfg, as envconfig looks them up: only those
// shotflow's configuration reads and validates, never the rest of the process environment.
type variables map[string]string

func variablesOf(cfg config.Config) variables {
	vars := variables{}
	for _, kv := range cfg.Environ() {
		if k, v, _ := strings.Cut(kv, "="); v != "" && strings.HasPrefix(k, "TEMPORAL_") {
			vars[k] = v
		}
	}
	return vars
}

// Environ lists the variables as NAME=value pairs.
func (v variables) Environ() []string {
	out := make([]string, 0, len(v))
	for k, val := range v {
		out = append(out, k+"="+val)
	}
	return out
}

// LookupEnv returns a variable and whether it is set.
func (v variables) LookupEnv(name string) (string, bool) {
	val, ok := v[name]
	return val, ok
}

// source is the profile a connection was read from; its zero value means none.
type source struct{ profile, file string }

func (s source) String() string { return fmt.Sprintf("profile %q of %s", s.profile, s.file) }

// loadProfile reads the profile of the Temporal config file when TEMPORAL_CONFIG_FILE or
// TEMPORAL_PROFILE is set. A file that was named but cannot be read, or a profile that was named
// but is not in it, is an error; an unnamed "default" profile may be missing.
func loadProfile(c config.TemporalConnection) (envconfig.ClientConfigProfile, source, error) {
	if c.ConfigFile == "" && c.Profile == "" {
		return envconfig.ClientConfigProfile{}, source{}, nil
	}
	src := source{profile: cmp.Or(c.Profile, envconfig.DefaultConfigFileProfile), file: c.ConfigFile}
	setting, hint := "TEMPORAL_CONFIG_FILE", ""
	if src.file == "" {
		src.file, setting = envconfig.DefaultConfigFilePath(), "TEMPORAL_PROFILE"
		hint = " (the Temporal CLI's config file; set TEMPORAL_CONFIG_FILE to read another)"
	}
	data, err := os.ReadFile(src.file)
	if err != nil {
		return envconfig.ClientConfigProfile{}, src, fmt.Errorf("%s: %w%s", setting, err, hint)
	}
	var conf envconfig.ClientConfig
	if err := conf.FromTOML(data, envconfig.ClientConfigFromTOMLOptions{}); err != nil {
		return envconfig.ClientConfigProfile{}, src, fmt.Errorf("%s: %s: %w", setting, src.file, err)
	}
	prof, ok := conf.Profiles[src.profile]
	switch {
	case ok && prof != nil:
		return *prof, src, nil
	case c.Profile != "":
		return envconfig.ClientConfigProfile{}, src, fmt.Errorf("TEMPORAL_PROFILE: no profile %q in %s", src.profile, src.file)
	}
	return envconfig.ClientConfigProfile{}, src, nil
}

// namer names a setting: its variable when that is set, else its key in the profile.
type namer struct {
	vars variables
	src  source
}

func (n namer) name(variable, key string) string {
	if _, ok := n.vars[variable]; ok {
		return variable
	}
	return key + " in " + n.src.String()
}

// checkTLS reads and parses the client certificate, its key and the server CA the way envconfig
// will, reporting a problem under the name of the setting that causes it.
func checkTLS(t *envconfig.ClientConfigTLS, n namer) error {
	cert, certName, err := material(t.ClientCertPath, t.ClientCertData,
		n.name("TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert_path"), n.name("TEMPORAL_TLS_CLIENT_CERT_DATA", "tls.client_cert_data"))
	if err != nil {
		return err
	}
	key, keyName, err := material(t.ClientKeyPath, t.ClientKeyData,
		n.name("TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key_path"), n.name("TEMPORAL_TLS_CLIENT_KEY_DATA", "tls.client_key_data"))
	if err != nil {
		return err
	}
	switch {
	case cert != nil && key == nil:
		return fmt.Errorf("%s is set but not the client key (TEMPORAL_TLS_CLIENT_KEY_PATH or TEMPORAL_TLS_CLIENT_KEY_DATA)", certName)
	case key != nil && cert == nil:
		return fmt.Errorf("%s is set but not the client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH or TEMPORAL_TLS_CLIENT_CERT_DATA)", keyName)
	case cert != nil:
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
	}
	ca, caName, err := material(t.ServerCACertPath, t.ServerCACertData,
		n.name("TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca_cert_path"), n.name("TEMPORAL_TLS_SERVER_CA_CERT_DATA", "tls.server_ca_cert_data"))
	if err != nil {
		return err
	}
	if ca != nil && !x509.NewCertPool().AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s: no PEM certificate in %s", caName, cmp.Or(t.ServerCACertPath, "it"))
	}
	return nil
}

// material returns the PEM bytes of a setting given either as a file (pathName) or inline
// (dataName), nil when neither is set, and the name of the setting that gave them.
func material(path string, data []byte, pathName, dataName string) ([]byte, string, error) {
	switch {
	case path != "" && len(data) > 0:
		return nil, "", fmt.Errorf("%s and %s are both set; set one of them", pathName, dataName)
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, pathName, fmt.Errorf("%s: %w", pathName, err)
		}
		return b, pathName, nil
	case len(data) > 0:
		return data, dataName, nil
	}
	return nil, "", nil
}
