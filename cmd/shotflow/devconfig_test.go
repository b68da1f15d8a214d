package main

import "testing"

// shotflow dev talks to the Temporal server it starts on loopback without compressing its calls,
// unless TEMPORAL_GRPC_COMPRESSION says otherwise.
func TestDevTalksUncompressedToItsOwnTemporalServer(t *testing.T) {
	t.Setenv("DATA_DIR", t.TempDir())
	for setting, want := range map[string]string{"": "none", "gzip": "gzip"} {
		t.Setenv("TEMPORAL_GRPC_COMPRESSION", setting)
		cfg, err := devConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.TemporalGRPCCompression != want {
			t.Errorf("TEMPORAL_GRPC_COMPRESSION=%q: dev uses %q, want %q", setting, cfg.TemporalGRPCCompression, want)
		}
	}
}
