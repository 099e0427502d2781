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
//
// Field names are one vocabulary across processes: "caller" is the
// authenticated peer (the code location is "src"), "task" the task id
// (a field written as task_id is renamed), and durations are text with
// their unit ("1.5ms").
func NewLogger(level string) (*zap.Logger, error) {
	cfg, err := loggerConfig(level)
	if err != nil {
		return nil, err
	}
	log, err := cfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return renaming{c} }))
	if err != nil {
		return nil, fmt.Errorf("new logger: %w", err)
	}
	return log, nil
}

// fieldNames renames fields to the names every Ambit log line uses.
var fieldNames = map[string]string{"task_id": "task"}

// renaming is a zapcore.Core that renames fields by fieldNames.
type renaming struct{ zapcore.Core }

func rename(fields []zapcore.Field) []zapcore.Field {
	var out []zapcore.Field
	for i, f := range fields {
		name, ok := fieldNames[f.Key]
		if !ok {
			continue
		}
		if out == nil {
			out = append([]zapcore.Field(nil), fields...)
		}
		out[i].Key = name
	}
	if out == nil {
		return fields
	}
	return out
}

func (r renaming) With(fields []zapcore.Field) zapcore.Core {
	return renaming{r.Core.With(rename(fields))}
}

func (r renaming) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if r.Enabled(e.Level) {
		return ce.AddCore(e, r)
	}
	return ce
}

func (r renaming) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return r.Core.Write(e, rename(fields))
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
	// "caller" is the authenticated peer in Ambit's lines; zap's own
	// caller (the code location) would repeat the key.
	cfg.EncoderConfig.CallerKey = "src"
	cfg.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	return cfg, nil
}
