package obs

import (
	"context"
	"io"
	"log/slog"
	"strings"
)

// Cloud Logging severities that slog has no level for. Debug, Info, Warn and
// Error are slog's own and map to DEBUG, INFO, WARNING and ERROR.
const (
	// LevelNotice is Cloud Logging's NOTICE: normal but significant.
	LevelNotice = slog.Level(2)
	// LevelCritical is Cloud Logging's CRITICAL: the process cannot serve,
	// as when it refuses to start on a bad configuration.
	LevelCritical = slog.Level(12)
)

// The keys Cloud Logging reads from a structured JSON line on Cloud Run
// (cloud.google.com/logging/docs/structured-logging, "Special JSON fields").
const (
	// SeverityKey holds the line's severity ([Severity]).
	SeverityKey = "severity"
	// MessageKey holds the event's name, such as orca_push_counters.
	MessageKey = "message"
	// TraceKey holds projects/PROJECT/traces/TRACE_ID, which links the line
	// to its request in the Logs Explorer.
	TraceKey = "logging.googleapis.com/trace"
)

// NewLogger returns a logger that writes Cloud Logging's structured JSON to
// w, one object a line: severity (DEBUG, INFO, NOTICE, WARNING, ERROR or
// CRITICAL), message and time, then the attributes, and TraceKey when the
// line is logged with a context that [WithTrace] gave a trace. Lines below
// INFO are dropped.
func NewLogger(w io.Writer) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: cloudLoggingAttr})
	return slog.New(traceHandler{h})
}

// cloudLoggingAttr renames slog's level and msg to Cloud Logging's severity
// and message; time keeps its key and RFC 3339 form, which Cloud Logging
// reads.
func cloudLoggingAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		l, _ := a.Value.Any().(slog.Level)
		return slog.String(SeverityKey, Severity(l))
	case slog.MessageKey:
		a.Key = MessageKey
	}
	return a
}

// Severity returns the Cloud Logging severity of a slog level: the highest
// severity at or below it.
func Severity(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < LevelNotice:
		return "INFO"
	case l < slog.LevelWarn:
		return "NOTICE"
	case l < slog.LevelError:
		return "WARNING"
	case l < LevelCritical:
		return "ERROR"
	}
	return "CRITICAL"
}

type traceKey struct{}

// WithTrace returns ctx carrying the Cloud Logging trace of its request:
// projects/PROJECT/traces/TRACE_ID from an X-Cloud-Trace-Context header
// ("TRACE_ID/SPAN_ID;o=OPTIONS"). It returns ctx itself when project is
// empty (not on Cloud Run) or the header holds no valid trace id (32
// lower-case hex digits), so that nothing a client sent is logged.
func WithTrace(ctx context.Context, project, header string) context.Context {
	id, _, _ := strings.Cut(header, "/")
	id, _, _ = strings.Cut(id, ";")
	if project == "" || !traceID(id) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, "projects/"+project+"/traces/"+id)
}

// traceID reports whether s is a trace id: 32 hex digits.
func traceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// traceHandler adds TraceKey to each line logged with a context that
// carries a trace.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if t, ok := ctx.Value(traceKey{}).(string); ok {
		r.AddAttrs(slog.String(TraceKey, t))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
