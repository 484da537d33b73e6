package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/obs"
)

// Each level is written as Cloud Logging's severity, with message and time,
// and never with slog's own level and msg keys, which Cloud Logging reads
// as a DEFAULT line's payload.
func TestLoggerWritesCloudLoggingJSON(t *testing.T) {
	levels := []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelInfo, "INFO"},
		{obs.LevelNotice, "NOTICE"},
		{slog.LevelWarn, "WARNING"},
		{slog.LevelError, "ERROR"},
		{obs.LevelCritical, "CRITICAL"},
	}
	var buf bytes.Buffer
	log := obs.NewLogger(&buf)
	log.Debug("orca_push_debug")
	for _, l := range levels {
		log.Log(context.Background(), l.level, "orca_push_event", slog.String("error", "store"))
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(levels) {
		t.Fatalf("%d lines, want %d (DEBUG dropped): %s", len(lines), len(levels), buf.String())
	}
	for i, text := range lines {
		var line map[string]any
		if err := json.Unmarshal([]byte(text), &line); err != nil {
			t.Fatalf("line %q: %v", text, err)
		}
		if line["severity"] != levels[i].want || line["message"] != "orca_push_event" || line["error"] != "store" {
			t.Errorf("line = %v, want severity %s, message and the attribute", line, levels[i].want)
		}
		if _, err := time.Parse(time.RFC3339Nano, line["time"].(string)); err != nil {
			t.Errorf("time %v: %v", line["time"], err)
		}
		if _, ok := line["level"]; ok {
			t.Errorf("line %s holds level", text)
		}
		if _, ok := line["msg"]; ok {
			t.Errorf("line %s holds msg", text)
		}
	}
}

func TestSeverityBetweenLevels(t *testing.T) {
	for l, want := range map[slog.Level]string{
		slog.LevelDebug: "DEBUG", slog.LevelInfo - 1: "DEBUG", slog.LevelInfo + 1: "INFO",
		slog.LevelWarn - 1: "NOTICE", slog.LevelError - 1: "WARNING", obs.LevelCritical - 1: "ERROR",
		obs.LevelCritical + 4: "CRITICAL",
	} {
		if got := obs.Severity(l); got != want {
			t.Errorf("Severity(%v) = %s, want %s", l, got, want)
		}
	}
}

// A line logged for a request carries its trace as Cloud Logging links it;
// a header that holds no trace id adds nothing, so no client text is
// logged, and off Cloud Run (no project) nothing is added.
func TestTrace(t *testing.T) {
	const id = "105445aa7843bc8bf206b12000100000"
	tests := []struct {
		project, header, want string
	}{
		{"onorca-cloud", id + "/1;o=1", "projects/onorca-cloud/traces/" + id},
		{"onorca-cloud", id, "projects/onorca-cloud/traces/" + id},
		{"onorca-cloud", id + ";o=0", "projects/onorca-cloud/traces/" + id},
		{"", id + "/1;o=1", ""},
		{"onorca-cloud", "", ""},
		{"onorca-cloud", "token=SECRET-TOKEN-0123456789abcdef/1", ""},
		{"onorca-cloud", strings.Repeat("g", 32) + "/1", ""},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		ctx := obs.WithTrace(context.Background(), tt.project, tt.header)
		obs.NewLogger(&buf).With("function", "send").ErrorContext(ctx, "orca_push_request_failed")
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		got, _ := line[obs.TraceKey].(string)
		if got != tt.want {
			t.Errorf("project %q, header %q: trace %q, want %q", tt.project, tt.header, got, tt.want)
		}
	}
}
