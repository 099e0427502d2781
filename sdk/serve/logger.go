package serve

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns a JSON logger writing to stderr at level "debug", "info"
// (also the empty string), "warn" or "error". Timestamps are ISO 8601.
//
// Sampling is off: zap's production default drops repeated lines, and a
// dropped authorisation decision or internal error is a hole in the record.
// Automatic stack traces are off too; the lines that need one (a recovered
// panic) carry it explicitly.
func NewLogger(level string) (*zap.Logger, error) {
	cfg, err := loggerConfig(level)
	if err != nil {
		return nil, err
	}
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("new logger: %w", err)
	}
	return log, nil
}

func loggerConfig(level string) (zap.Config, error) {
	var lvl zapcore.Level
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "", "info":
		lvl = zapcore.InfoLevel
	case "warn":
		lvl = zapcore.WarnLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		return zap.Config{}, fmt.Errorf("new logger: level %q: want debug, info, warn or error", level)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.DisableStacktrace = true
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	return cfg, nil
}
