package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
)

// cloudSeverities are the severities Cloud Logging reads from a line's
// severity field.
var cloudSeverities = map[string]bool{
	"DEBUG": true, "INFO": true, "NOTICE": true, "WARNING": true, "ERROR": true, "CRITICAL": true,
}

// stdoutLines signals the emulator process p to stop, waits for it, and
// returns each line it wrote to stdout after its ready line, decoded; it
// fails t unless every one is a JSON object with a Cloud Logging severity
// and a message, and none has slog's own level or msg.
func stdoutLines(t *testing.T, p *process) []map[string]any {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(3 * contract.ProviderTimeout): // a process boundary
		t.Fatal("the emulator did not exit after SIGTERM")
	}
	var out []map[string]any
	for _, text := range p.stdout() {
		var line map[string]any
		if err := json.Unmarshal([]byte(text), &line); err != nil {
			t.Errorf("stdout line %q is not JSON: %v", text, err)
			continue
		}
		if sev, _ := line["severity"].(string); !cloudSeverities[sev] {
			t.Errorf("stdout line %s has no Cloud Logging severity", text)
		}
		if msg, _ := line["message"].(string); msg == "" {
			t.Errorf("stdout line %s has no message", text)
		}
		for _, k := range []string{"level", "msg"} {
			if _, ok := line[k]; ok {
				t.Errorf("stdout line %s holds %q, which Cloud Logging does not read", text, k)
			}
		}
		out = append(out, line)
	}
	return out
}

// Every line the emulator writes to stdout but its ready line is Cloud
// Logging's structured JSON, as a deployed function's are: here the
// counters of a delivery and a refused request, flushed at shutdown.
func TestStdoutIsCloudLoggingJSON(t *testing.T) {
	p := startEmulator(t, "ORCA_PUSH_COALESCE_MS=0")
	e := newLiveEmulator(t, p)
	reg := e.phone(t, "phone")
	e.send(t, alert("n1", 1), reg)
	e.awaitDelivered(t, "n1")
	resp, err := http.Post(p.origin+"/v1/host/challenge", "application/json", strings.NewReader(`{`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session, _ := e.host.Session()
	lines := stdoutLines(t, p)
	// The privacy rule: counters only, never what the suite sent.
	n := alert("n1", 1)
	all := strings.Join(p.stdout(), "\n")
	for _, secret := range []string{phoneToken("phone"), session, n.Title, n.Body, reg} {
		if strings.Contains(all, secret) {
			t.Errorf("stdout holds %q: %s", secret, all)
		}
	}
	var counters map[string]any
	for _, l := range lines {
		if l["message"] == "orca_push_counters" {
			counters = l
		}
	}
	if counters == nil || counters["severity"] != "INFO" || counters["delivery_sent"] != float64(1) {
		t.Fatalf("stdout = %v, want an INFO counters line with delivery_sent 1", lines)
	}
	// The delivery was counted by lateness and by latency, once each.
	late := map[string]float64{}
	for k, v := range counters {
		for _, prefix := range []string{"delivery_late_", "alert_latency_"} {
			if strings.HasPrefix(k, prefix) {
				late[prefix] += v.(float64)
			}
		}
	}
	if late["delivery_late_"] != 1 || late["alert_latency_"] != 1 {
		t.Errorf("counters = %v, want one delivery_late_* and one alert_latency_*", counters)
	}
}
