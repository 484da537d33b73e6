package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"onorca.dev/push/shared/hostclient"
)

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"signin", "register ios|android", "devices", "send", "dismiss", "delete ID", "receipts SEQ...", "watch",
			"-gateway", "-origin", "-key", "-json", gatewayVar, "Exit codes"}},
		{[]string{"send", "-h"}, []string{"-title", "-body", "-to", "-all", "-silent", "-id", "-seq", "-json", "-wait",
			"-timeout", "-interval"}},
		{[]string{"receipts", "-h"}, []string{"-epoch", "-dismiss", "-json"}},
		{[]string{"register", "ios", "-h"}, []string{"-token", "-sandbox", "-device"}},
		{[]string{"watch", "--help"}, []string{"-count", "-interval"}},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
		if !errors.Is(err, flag.ErrHelp) || exitCode(err, &stderr) != 0 {
			t.Errorf("run(%q) = %v, want flag.ErrHelp and exit 0", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("run(%q) usage does not mention %q:\n%s", tt.args, w, stdout.String())
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, {"bogus"}, {"register"}, {"register", "web"}, {"register", "android", "--sandbox"},
		{"send"}, {"send", "--title", "x", "--to", "r1", "--all"}, {"dismiss"}, {"delete"}, {"devices", "extra"},
		{"send", "--no-such-flag"}, {"watch", "--interval", "0s"}, {"badge"}, {"badge", "r1"}, {"badge", "r1", "2.5"},
	} {
		var stdout, stderr bytes.Buffer
		config := t.TempDir()
		err := run(context.Background(), args, func(k string) string { return map[string]string{"XDG_CONFIG_HOME": config}[k] }, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 2 {
			t.Errorf("run(%q) = %v, exit %d, want 2", args, err, code)
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		code int
		say  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{usagef("no command"), 2, "no command"},
		{fmt.Errorf("send: %w", &hostclient.APIError{Status: 400, Code: "invalid_request"}), 1, "refused by the gateway: 400 invalid_request"},
		{fmt.Errorf("sign in: %w", &hostclient.OriginError{Expected: "http://localhost:8080", Received: "http://127.0.0.1:8080"}), 1,
			"--origin http://127.0.0.1:8080"},
		{errors.New("connection refused"), 1, "connection refused"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		if code := exitCode(tt.err, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.say) {
			t.Errorf("exitCode(%v) = %d, printed %q; want %d, printing %q", tt.err, code, stderr.String(), tt.code, tt.say)
		}
	}
}
