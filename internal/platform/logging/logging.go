// Package logging builds shotflow's zap loggers and adapts them for the Temporal SDK.
package logging

import (
	"fmt"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a zap logger: JSON for format "json", coloured console lines for "console". No line
// is sampled away: zap's production preset keeps only every 100th repeat of a message past 100 a
// second, which would drop the access log's request lines under load.
func New(level, format string) (*zap.Logger, error) {
	cfg, err := config(level, format)
	if err != nil {
		return nil, err
	}
	return cfg.Build()
}

// config is New's zap configuration.
func config(level, format string) (zap.Config, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return zap.Config{}, err
	}
	var cfg zap.Config
	if format == "console" {
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		cfg.EncoderConfig.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		cfg.DisableStacktrace = true
	} else {
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	return cfg, nil
}

// Temporal adapts a zap logger to the Temporal SDK's logger interface.
type Temporal struct{ z *zap.Logger }

// NewTemporal wraps z for the Temporal SDK; SDK messages carry component=temporal.
func NewTemporal(z *zap.Logger) *Temporal {
	return &Temporal{z: z.WithOptions(zap.AddCallerSkip(1)).With(zap.String("component", "temporal"))}
}

// Debug logs at debug level.
func (t *Temporal) Debug(msg string, keyvals ...any) { t.z.Debug(msg, fields(keyvals)...) }

// Info logs at info level.
func (t *Temporal) Info(msg string, keyvals ...any) { t.z.Info(msg, fields(keyvals)...) }

// Warn logs at warn level.
func (t *Temporal) Warn(msg string, keyvals ...any) { t.z.Warn(msg, fields(keyvals)...) }

// Error logs at error level.
func (t *Temporal) Error(msg string, keyvals ...any) { t.z.Error(msg, fields(keyvals)...) }

// With returns a logger that adds keyvals to every message.
func (t *Temporal) With(keyvals ...any) log.Logger {
	return &Temporal{z: t.z.With(fields(keyvals)...)}
}

var _ log.WithLogger = (*Temporal)(nil)

func fields(keyvals []any) []zap.Field {
	out := make([]zap.Field, 0, len(keyvals)/2+1)
	for i := 0; i < len(keyvals); i += 2 {
		key := fmt.Sprint(keyvals[i])
		if i+1 >= len(keyvals) {
			out = append(out, zap.Any("extra", keyvals[i]))
			break
		}
		out = append(out, zap.Any(key, keyvals[i+1]))
	}
	return out
}
