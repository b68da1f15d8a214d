package logging_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/shotflow/shotflow/internal/platform/logging"
)

func TestTemporalLoggerWritesThroughZap(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := logging.NewTemporal(zap.New(core)).With("WorkflowID", "order/1")
	l.Info("started", "Attempt", 2, "odd")
	l.Error("failed", "error", "boom")
	entries := logs.All()
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	got := entries[0].ContextMap()
	if entries[0].Message != "started" || got["WorkflowID"] != "order/1" || got["Attempt"] != int64(2) ||
		got["component"] != "temporal" || got["extra"] != "odd" {
		t.Fatalf("entry = %q %v", entries[0].Message, got)
	}
	if entries[1].Level != zapcore.ErrorLevel || entries[1].ContextMap()["error"] != "boom" {
		t.Fatalf("entry = %+v", entries[1])
	}
}

func TestNewValidatesLevelAndFormat(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		l, err := logging.New("warn", format)
		if err != nil {
			t.Fatal(err)
		}
		if l.Core().Enabled(zapcore.InfoLevel) || !l.Core().Enabled(zapcore.WarnLevel) {
			t.Errorf("%s logger at warn has the wrong level", format)
		}
	}
	if _, err := logging.New("loud", "json"); err == nil {
		t.Fatal("unknown level accepted")
	}
}
