package main

import (
	"strings"
	"testing"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/contract"
)

// The receipts command and send --wait, driven as a person would against the
// emulator process: what became of each phone's push, exit 0 only when every
// phone got it.
func TestReceiptsCommand(t *testing.T) {
	origin := startEmulator(t) // manual clock
	h := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin, "XDG_CONFIG_HOME=" + t.TempDir()}}
	var ios, android struct{ RegistrationID, Token string }
	h.ok(&ios, "register", "ios", "--json")
	h.ok(&android, "register", "android", "--json")
	var sent sendOutput
	h.ok(&sent, "send", "--title", "hello", "--json")

	var got contract.ReceiptsResponse
	h.ok(&got, "receipts", "1", "2", "--json")
	if len(got.Receipts) != 2 || !got.Receipts[0].Known || got.Receipts[1].Known ||
		len(got.Receipts[0].Recipients) != 2 || got.Receipts[0].Recipients[0].Status != contract.ReceiptQueued {
		t.Fatalf("receipts 1 2 = %+v, want seq 1 queued to both, seq 2 unknown", got)
	}
	emulatortest.Control(t, origin, "POST", "/_emulator/faults",
		`{"provider":"fcm","token":"`+android.Token+`","status":404,"reason":"UNREGISTERED"}`, nil)
	advance(t, origin, "3000")
	r := h.run("receipts", "1", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "alert seq 1 (epoch "+sent.NotificationEpoch+"): 2 recipient(s)") ||
		!strings.Contains(r.stdout, ios.RegistrationID+"  sent") ||
		!strings.Contains(r.stdout, android.RegistrationID+"  dead") || !strings.Contains(r.stdout, "UNREGISTERED") ||
		!strings.Contains(r.stdout, "alert seq 2 (epoch "+sent.NotificationEpoch+"): unknown") {
		t.Fatalf("receipts 1 2 = %+v", r)
	}
	// The dismissal's own receipt.
	h.ok(&sent, "dismiss", "--id", sent.NotificationID, "--to", ios.RegistrationID, "--json")
	advance(t, origin, "0")
	h.ok(&got, "receipts", "--dismiss", "2", "--json")
	if !got.Receipts[0].Known || got.Receipts[0].Kind != contract.KindDismiss ||
		got.Receipts[0].Recipients[0].Status != contract.ReceiptSent {
		t.Fatalf("receipts --dismiss 2 = %+v", got)
	}

	// On the manual clock nothing moves while send waits: it gives up,
	// exits 1, and shows where the push stands.
	r = h.run("send", "--title", "stuck", "--to", ios.RegistrationID, "--wait", "--timeout", "1s", "--interval", "100ms")
	if r.code != 1 || !strings.Contains(r.stderr, "still on the way after 1s") || !strings.Contains(r.stdout, "queued") {
		t.Fatalf("send --wait on a frozen clock = %+v", r)
	}

	for _, args := range [][]string{{"receipts"}, {"receipts", "x"}, {"receipts", "-1"},
		{"send", "--title", "t", "--wait", "--timeout", "0s"}} {
		if r := h.run(args...); r.code != 2 {
			t.Errorf("host %q = %+v, want exit 2", args, r)
		}
	}
	other := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin, "XDG_CONFIG_HOME=" + t.TempDir()}}
	if r := other.run("receipts", "1"); r.code != 1 || !strings.Contains(r.stderr, "give --epoch") {
		t.Errorf("receipts from a key that sent nothing = %+v", r)
	}
}

// send --wait on the real clock with no coalescing: it returns once every
// phone's push ended, 0 when each was sent and 1 naming the ones that were
// not.
func TestSendWait(t *testing.T) {
	origin := emulatortest.Start(t, emulatortest.FreePort(), []string{"ORCA_PUSH_COALESCE_MS=0"}, nil).Origin
	h := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin, "XDG_CONFIG_HOME=" + t.TempDir()}}
	var ios, android struct{ RegistrationID, Token string }
	h.ok(&ios, "register", "ios", "--json")
	h.ok(&android, "register", "android", "--json")
	r := h.run("send", "--title", "hello", "--wait", "--timeout", "30s")
	if r.code != 0 || strings.Count(r.stdout, "  sent  ") != 2 {
		t.Fatalf("send --wait = %+v, want both sent", r)
	}
	emulatortest.Control(t, origin, "POST", "/_emulator/faults",
		`{"provider":"apns","token":"`+ios.Token+`","status":400,"reason":"BadTopic"}`, nil)
	r = h.run("send", "--title", "hello", "--wait", "--timeout", "30s")
	if r.code != 1 || !strings.Contains(r.stderr, "not sent: "+ios.RegistrationID+" error") ||
		!strings.Contains(r.stdout, "BadTopic") || !strings.Contains(r.stdout, android.RegistrationID+"  sent") {
		t.Fatalf("send --wait with a refusal = %+v", r)
	}
}
