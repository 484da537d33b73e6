package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
)

// sendOutput is the --json output of send and dismiss.
type sendOutput struct {
	Kind              string                `json:"kind"`
	NotificationID    string                `json:"notificationId"`
	NotificationEpoch string                `json:"notificationEpoch"`
	NotificationSeq   int64                 `json:"notificationSeq"`
	Results           []contract.SendResult `json:"results"`
}

// TestCommandLineFlow drives the built command line against the emulator
// process as a person would: signin, register both kinds, send, devices,
// dismiss, delete, checking exit codes, --json output and what the
// stand-ins received; a refused send exits 1 with the gateway's error.
func TestCommandLineFlow(t *testing.T) {
	origin := startEmulator(t)
	config := t.TempDir()
	h := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin, "XDG_CONFIG_HOME=" + config, "HOME=" + config}}

	// signin makes the key under the user's config dir, 0600.
	var signin struct {
		HostFingerprint string `json:"hostFingerprint"`
		KeyCreated      bool   `json:"keyCreated"`
	}
	h.ok(&signin, "signin", "--json")
	key := filepath.Join(config, "orca-push", "host.key")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 || !signin.KeyCreated || len(signin.HostFingerprint) != contract.FingerprintChars {
		t.Fatalf("signin = %+v; key %s: %v %v, want a new 0600 key", signin, key, fi, err)
	}
	h.ok(&signin, "signin", "--json")
	if signin.KeyCreated {
		t.Fatal("the second signin made another key")
	}
	session := keptSession(t, key)

	var ios, android struct{ RegistrationID, Token, Platform, APNSEnvironment string }
	h.ok(&ios, "register", "ios", "--sandbox", "--json")
	h.ok(&android, "register", "android", "--json")
	if ios.APNSEnvironment != "sandbox" || android.Platform != "android" || ios.Token == "" || android.Token == "" {
		t.Fatalf("registrations %+v %+v", ios, android)
	}
	var devices contract.DeviceList
	h.ok(&devices, "devices", "--json")
	if len(devices.Devices) != 2 || devices.Devices[0].Dead || devices.Devices[1].Dead {
		t.Fatalf("devices = %+v, want two alive", devices)
	}
	// The commands used the kept session: none signed in again.
	if again := keptSession(t, key); again != session {
		t.Fatalf("session %+v replaced by %+v", session, again)
	}

	var sent sendOutput
	h.ok(&sent, "send", "--title", "hello", "--body", "world", "--id", "n1", "--json")
	want := []contract.SendResult{{RegistrationID: ios.RegistrationID, Status: "queued"}, {RegistrationID: android.RegistrationID, Status: "queued"}}
	if diff := cmp.Diff(want, sent.Results, sortResults); diff != "" || sent.NotificationSeq != 1 || sent.Kind != "alert" {
		t.Fatalf("send = %+v (-want +got results):\n%s", sent, diff)
	}
	advance(t, origin, "3000")
	in := inbox(t, origin)
	if len(in) != 2 {
		t.Fatalf("the stand-ins got %d requests, want 2", len(in))
	}
	for _, e := range in {
		switch e.Provider {
		case "apns":
			if e.Path != "/3/device/"+ios.Token || e.Host != "api.sandbox.push.apple.com" || e.Body.APS.Alert == nil ||
				*e.Body.APS.Alert != (struct{ Title, Body string }{"hello", "world"}) {
				t.Errorf("APNs got %+v", e)
			}
		case "fcm":
			if e.Body.Message.Token != android.Token || e.Body.Message.Notification == nil || e.Body.Message.Notification.Title != "hello" {
				t.Errorf("FCM got %+v", e)
			}
		}
	}
	// watch prints what arrived, one line each, and stops at --count.
	if r := h.run("watch", "--count", "2"); r.code != 0 || strings.Count(r.stdout, "\n") != 2 || strings.Count(r.stdout, `"hello"`) != 2 {
		t.Errorf("watch = %d %q %q", r.code, r.stdout, r.stderr)
	}

	// The next send is a new event without being told: seq 2.
	h.ok(&sent, "dismiss", "--id", "n1", "--json")
	if sent.Kind != "dismiss" || sent.NotificationSeq != 2 || len(sent.Results) != 2 {
		t.Fatalf("dismiss = %+v", sent)
	}
	advance(t, origin, "0")
	in = inbox(t, origin)
	if len(in) != 4 || in[2].Status != 200 || in[3].Status != 200 {
		t.Fatalf("after the dismissal the stand-ins got %+v", in)
	}
	for _, e := range in[2:] {
		if e.Headers["apns-push-type"] != "background" && e.Body.Message.Data["kind"] != "dismiss" {
			t.Errorf("not a dismissal: %+v", e)
		}
	}

	h.ok(nil, "delete", android.RegistrationID)
	h.ok(&devices, "devices", "--json")
	if len(devices.Devices) != 1 || devices.Devices[0].RegistrationID != ios.RegistrationID {
		t.Fatalf("after delete: %+v", devices)
	}

	// badge ID N opts the phone in: the next alert carries N+1.
	var badge struct {
		RegistrationID string
		Count          int64
	}
	h.ok(&badge, "badge", ios.RegistrationID, "4", "--json")
	if badge.RegistrationID != ios.RegistrationID || badge.Count != 4 {
		t.Fatalf("badge = %+v", badge)
	}
	h.ok(&sent, "send", "--title", "badged", "--to", ios.RegistrationID, "--json")
	advance(t, origin, "3000")
	in = inbox(t, origin)
	if last := in[len(in)-1]; last.Provider != "apns" || last.Body.APS.Badge == nil || *last.Body.APS.Badge != 5 {
		t.Errorf("the alert after badge 4 = %+v, want aps.badge 5", last)
	}
	if r := h.run("badge", ios.RegistrationID, "100000"); r.code != 1 || !strings.Contains(r.stderr, "400 invalid_request") {
		t.Errorf("badge 100000: %+v, want exit 1 with 400 invalid_request", r)
	}
	if r := h.run("badge", android.RegistrationID, "1"); r.code != 1 || !strings.Contains(r.stderr, "404 not_found") {
		t.Errorf("badge of a deleted registration: %+v, want exit 1 with 404 not_found", r)
	}
	if r := h.run("badge", ios.RegistrationID, "x"); r.code != 2 {
		t.Errorf("badge x: %+v, want exit 2", r)
	}

	// Refusals exit 1 with the gateway's error.
	r := h.run("send", "--title", strings.Repeat("t", contract.MaxTitle+1), "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "refused by the gateway: 400 invalid_request") ||
		strings.TrimSpace(r.stdout) != `{"status":400,"error":"invalid_request"}` {
		t.Errorf("an over-long title: %+v", r)
	}
	if r := h.run("delete", android.RegistrationID); r.code != 1 || !strings.Contains(r.stderr, "404 not_found") {
		t.Errorf("deleting twice: %+v", r)
	}
	if r := h.run("register", "web"); r.code != 2 {
		t.Errorf("register web: %+v, want exit 2", r)
	}
	if r := h.run("-h"); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("-h: %+v", r)
	}
}

var sortResults = cmp.Transformer("sort", func(in []contract.SendResult) map[string]contract.Status {
	out := map[string]contract.Status{}
	for _, r := range in {
		out[r.RegistrationID] = r.Status
	}
	return out
})

// A host on the real clock signs in however far the emulator's manual clock
// was moved: the command line reads GET /_emulator/clock when the challenge's
// times are off.
func TestSignInAtAnyEmulatorTime(t *testing.T) {
	origin := startEmulator(t)
	h := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin}}
	key := filepath.Join(t.TempDir(), "host.key")
	advance(t, origin, "3600000")
	h.ok(nil, "signin", "--key", key)
	advance(t, origin, "90000000") // past the session's 24 h: the kept one expired
	var devices contract.DeviceList
	h.ok(&devices, "devices", "--key", key, "--json")
}

// Repeated sends are new events; --seq sends the given number.
func TestSequencePerKey(t *testing.T) {
	origin := startEmulator(t)
	h := hostCLI{t: t, env: []string{"ORCA_PUSH_GATEWAY_URL=" + origin}}
	key := filepath.Join(t.TempDir(), "host.key")
	h.ok(nil, "register", "ios", "--key", key)
	var seqs []int64
	for _, extra := range [][]string{nil, nil, {"--seq", "10"}, nil} {
		var out sendOutput
		h.ok(&out, append([]string{"send", "--title", "t", "--key", key, "--json"}, extra...)...)
		if out.Results[0].Status != contract.StatusQueued {
			t.Fatalf("send %v = %+v", extra, out)
		}
		seqs = append(seqs, out.NotificationSeq)
	}
	if want := []int64{1, 2, 10, 11}; !cmp.Equal(want, seqs) {
		t.Fatalf("sequences %v, want %v", seqs, want)
	}
	// Another key has its own.
	var out sendOutput
	other := filepath.Join(t.TempDir(), "host.key")
	h.ok(nil, "register", "android", "--key", other)
	h.ok(&out, "send", "--title", "t", "--key", other, "--json")
	if out.NotificationSeq != 1 {
		t.Fatalf("another key's first send has seq %d", out.NotificationSeq)
	}
}

// keptSession reads the session kept beside the key, which must be 0600.
func keptSession(t *testing.T, key string) savedSession {
	t.Helper()
	if fi, err := os.Stat(sessionPath(key)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("session file: %v %v, want 0600", fi, err)
	}
	var s savedSession
	if err := readJSON(sessionPath(key), &s); err != nil || s.SessionToken == "" {
		t.Fatalf("kept session %+v: %v", s, err)
	}
	return s
}
