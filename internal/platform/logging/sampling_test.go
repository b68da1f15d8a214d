package logging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Request lines repeat one message many times a second; none may be dropped, in either format.
func TestNoLineIsSampledAway(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		cfg, err := config("info", format)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "log")
		cfg.OutputPaths = []string{out}
		log, err := cfg.Build()
		if err != nil {
			t.Fatal(err)
		}
		const lines = 1000 // zap's production preset would keep 100 + 9 of these
		for range lines {
			log.Info("request")
		}
		_ = log.Sync()
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(data), "request"); got != lines {
			t.Errorf("%s: %d of %d request lines written", format, got, lines)
		}
	}
}
