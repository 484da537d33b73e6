package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/secretbox"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/store/storetest"
)

// e2eLabel is what today's desktop and phone derive the sealing key from,
// with the phone's pairing token as the HMAC key.
const e2eLabel = "orca-push-e2e-v1"

// envelope is the sealed content a paneKey carries.
type envelope struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// phoneKey is the secretbox key of a phone paired with pairingToken.
func phoneKey(pairingToken string) *[32]byte {
	mac := hmac.New(sha256.New, []byte(pairingToken))
	mac.Write([]byte(e2eLabel))
	var key [32]byte
	copy(key[:], mac.Sum(nil))
	return &key
}

// opaque returns an id or epoch as the desktop makes them for a sealed
// notification: "e2e1." and 32 base64url characters.
func opaque(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2e1." + base64.RawURLEncoding.EncodeToString(b)
}

// sealAlert makes a sealed alert exactly as today's desktop does: the
// routing fields kept, a placeholder title, an empty body, an opaque id and
// epoch, and paneKey = "e2e1:" + base64(nonce || secretbox(envelope)) with
// a random nonce.
func sealAlert(t *testing.T, pairingToken string, seq int64, epoch string, env envelope) contract.Notification {
	t.Helper()
	plain, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	var nonce [24]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		t.Fatal(err)
	}
	box := secretbox.Seal(nonce[:], plain, &nonce, phoneKey(pairingToken))
	return contract.Notification{
		NotificationID: opaque(t), Seq: seq, Epoch: epoch, Source: contract.SourceAgentTaskComplete,
		AgentState: contract.AgentNeedsInput, Title: "Agent needs input", Body: "",
		PaneKey:       contract.SealedPaneKeyPrefix + base64.StdEncoding.EncodeToString(box),
		ExecutionHost: "runtime:env%201",
	}
}

// openPaneKey opens a sealed paneKey as the phone does.
func openPaneKey(t *testing.T, pairingToken, paneKey string) envelope {
	t.Helper()
	raw, ok := strings.CutPrefix(paneKey, contract.SealedPaneKeyPrefix)
	box, err := base64.StdEncoding.DecodeString(raw)
	if !ok || err != nil || len(box) < 24 {
		t.Fatalf("paneKey %q is not e2e1: and base64 (%v)", paneKey, err)
	}
	var nonce [24]byte
	copy(nonce[:], box)
	plain, ok := secretbox.Open(nil, box[24:], &nonce, phoneKey(pairingToken))
	if !ok {
		t.Fatal("the phone's key does not open the delivered paneKey")
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// fcmMessage is the parsed v1 message of an FCM delivery.
type fcmMessage struct {
	Notification json.RawMessage            `json:"notification"`
	Android      map[string]json.RawMessage `json:"android"`
	Data         map[string]string          `json:"data"`
}

func parseFCM(t *testing.T, d standin.Delivery) fcmMessage {
	t.Helper()
	var b struct{ Message fcmMessage }
	if err := json.Unmarshal(d.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Message
}

// dataOnly reports whether m is Gen D's data-only message: android holds
// only priority and ttl, and there is no notification block.
func (m fcmMessage) dataOnly() bool {
	_, p := m.Android["priority"]
	_, ttl := m.Android["ttl"]
	return m.Notification == nil && len(m.Android) == 2 && p && ttl
}

// TestSealedAlertEndToEnd: a sealed alert made as the desktop makes it goes
// through /v1/send to an Android and an iPhone registration, at once (no
// window), as a data-only FCM message (under the default
// ORCA_PUSH_FCM_MESSAGE) and in APNs' orca, and each phone opens the
// paneKey it received with its own key: the bytes travelled verbatim. The
// desktop's identical retry is queued and delivers nothing more.
func TestSealedAlertEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := startEmu(t, d)
			android, ios := e.registerAndroid("pixel"), e.registerIOS("iphone")
			const pairing = "pairing-token-3f1c2a9e5b7d4c1e"
			want := envelope{Title: "Claude needs input", Body: "Approve the migration of shared/store? <y/n> & 😀"}
			n := sealAlert(t, pairing, 1, opaque(t), want)
			for range 2 { // the send, then the desktop's retry of the identical object
				res, err := e.host.Send(context.Background(), []string{android, ios}, n)
				if err != nil || len(res) != 2 || res[0].Status != contract.StatusQueued || res[1].Status != contract.StatusQueued {
					t.Fatalf("Send = %v, %v; want both queued", res, err)
				}
			}
			e.advance(0)
			in := e.inbox()
			if len(in) != 2 {
				t.Fatalf("at once the stand-ins got %d requests, want 2", len(in))
			}
			for _, d := range in {
				var paneKey string
				switch d.Provider {
				case standin.FCM:
					m := parseFCM(t, d)
					if !m.dataOnly() || m.Data["title"] != n.Title || m.Data["message"] != "" ||
						m.Data["channelId"] != contract.AndroidChannel || m.Data["tag"] == "" ||
						m.Data["notificationId"] != n.NotificationID || m.Data["executionHost"] != n.ExecutionHost {
						t.Errorf("FCM message is not the sealed data-only alert: %s", d.Body)
					}
					paneKey = m.Data["paneKey"]
				case standin.APNS:
					b := parseAPNs(t, d)
					if b.APS.Alert == nil || b.APS.Alert.Title != n.Title || b.Orca["executionHost"] != n.ExecutionHost {
						t.Errorf("APNs body = %s", d.Body)
					}
					paneKey, _ = b.Orca["paneKey"].(string)
				}
				if !d.Sealed {
					t.Errorf("%s inbox entry not marked sealed", d.Provider)
				}
				if got := openPaneKey(t, pairing, paneKey); got != want {
					t.Errorf("%s: the phone opened %+v, want %+v", d.Provider, got, want)
				}
			}
			e.advance(60_000)
			if n := len(e.inbox()); n != 2 {
				t.Errorf("after the retry and a minute the stand-ins got %d requests, want 2", n)
			}
		})
	}
}

// TestSealedBurst: five sealed alerts in one burst to one phone are five
// deliveries, none a summary, all at once (one registration has one
// delivery in flight at a time, and each that ends wakes the next); a burst
// of unsealed alerts to another phone still waits for the window and
// arrives as one summary.
func TestSealedBurst(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0])
	sealedPhone, other := e.registerAndroid("sealed"), e.registerIOS("other")
	epoch := opaque(t)
	for i := range 5 {
		n := sealAlert(t, "pairing", int64(i), epoch, envelope{Title: fmt.Sprint("t", i), Body: "b"})
		if s := e.send(sealedPhone, n); s != contract.StatusQueued {
			t.Fatalf("sealed send %d = %s", i, s)
		}
		if s := e.send(other, alert(fmt.Sprint("n", i), int64(i))); s != contract.StatusQueued {
			t.Fatalf("unsealed send %d = %s", i, s)
		}
	}
	byProvider := func() (fcm, apns []standin.Delivery) {
		for _, d := range e.inbox() {
			if d.Provider == standin.FCM {
				fcm = append(fcm, d)
			} else {
				apns = append(apns, d)
			}
		}
		return fcm, apns
	}
	e.advance(0)
	if sealed, summary := byProvider(); len(sealed) != 5 || len(summary) != 0 {
		t.Fatalf("at once: %d sealed deliveries and %d others, want 5 sealed and no other", len(sealed), len(summary))
	}
	window := contract.DefaultCoalesce.Milliseconds()
	for _, step := range []int64{1000, 1000, window - 2001} {
		e.advance(step)
	}
	if _, summary := byProvider(); len(summary) != 0 {
		t.Fatalf("1 ms before the window closed the other phone got %d deliveries, want 0", len(summary))
	}
	e.advance(1)
	sealed, summary := byProvider()
	if len(summary) != 1 || parseAPNs(t, summary[0]).Orca["coalescedCount"] != float64(5) {
		t.Fatalf("the other phone got %d deliveries, want one summary of 5", len(summary))
	}
	if len(sealed) != 5 {
		t.Fatalf("the sealed phone got %d deliveries, want 5", len(sealed))
	}
	for _, d := range sealed {
		m := parseFCM(t, d)
		if !d.Sealed || !m.dataOnly() || m.Data["coalescedCount"] != "1" || m.Data["summaryMembers"] != "" {
			t.Errorf("sealed delivery = %s, want a data-only single alert", d.Body)
		}
	}
}

// TestTodaysPhones: with the settings README's "Which phones?" gives a fleet
// of today's phones (ORCA_PUSH_FCM_MESSAGE=data, ORCA_PUSH_COALESCE_MS=0),
// every Android message is data-only and every alert goes alone, without
// waiting for a window; a dismissal is data-only too.
func TestTodaysPhones(t *testing.T) {
	e := startEmu(t, storetest.Dialects(t)[0], "ORCA_PUSH_FCM_MESSAGE=data", "ORCA_PUSH_COALESCE_MS=0")
	reg := e.registerAndroid("pixel")
	off := false
	quiet := alert("n2", 2)
	quiet.Sound = &off
	dismiss := alert("n9", 3) // of another notification: it cancels nothing
	dismiss.Kind = contract.KindDismiss
	for _, n := range []contract.Notification{alert("n1", 1), quiet, dismiss} {
		if s := e.send(reg, n); s != contract.StatusQueued {
			t.Fatalf("send = %s", s)
		}
	}
	// All due at once, one in flight at a time (see TestSealedBurst).
	e.advance(0)
	in := e.inbox()
	if len(in) != 3 {
		t.Fatalf("the stand-in got %d requests, want 3", len(in))
	}
	// Keyed by notificationId: the three go in any order.
	want := map[string]map[string]string{
		"n1": {"title": "Agent finished", "message": "build n1", "channelId": contract.AndroidChannel, "coalescedCount": "1"},
		"n2": {"title": "Agent finished", "message": "build n2", "channelId": contract.AndroidSilentChannel, "sound": ""},
		"n9": {"kind": "dismiss"},
	}
	for _, d := range in {
		m := parseFCM(t, d)
		id := m.Data["notificationId"]
		if !m.dataOnly() || d.Sealed || want[id] == nil {
			t.Errorf("delivery of %q is not an unsealed data-only message of n1, n2 or n9: %s", id, d.Body)
		}
		for k, v := range want[id] {
			if got, ok := m.Data[k]; !ok || got != v {
				t.Errorf("delivery of %s: data[%q] = %q, want %q", id, k, got, v)
			}
		}
		if _, ok := m.Data["sound"]; ok && id != "n2" {
			t.Errorf("%s carries data.sound: %s", id, d.Body)
		}
		if _, ok := m.Data["title"]; ok && id == "n9" {
			t.Errorf("the dismissal carries an alert's keys: %s", d.Body)
		}
		delete(want, id)
	}
}
