package contract_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
)

// hasControl reports whether an id holds a control character, which no
// accepted id may (PostgreSQL cannot store NUL in text; issue "Hardening"
// §3).
func hasControl(id string) bool { return strings.ContainsFunc(id, unicode.IsControl) }

// FuzzDecodeRegisterRequest checks that the strict decoder never panics and
// accepts only well-formed JSON objects whose fields pass the rules again.
func FuzzDecodeRegisterRequest(f *testing.F) {
	for _, c := range contracttest.Registrations() {
		f.Add([]byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := contract.DecodeRegisterRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if hasControl(r.DeviceID) {
			t.Fatalf("accepted a control character in deviceId %q", r.DeviceID)
		}
		// Re-encode what was accepted and decode it again: same result.
		again := map[string]any{"v": 1, "deviceId": r.DeviceID, "platform": r.Platform, "token": r.Token}
		if r.APNSEnvironment != "" {
			again["apnsEnvironment"] = r.APNSEnvironment
		}
		if r.Filter != nil {
			again["filter"] = r.Filter
		}
		b, _ := json.Marshal(again)
		if _, err := contract.DecodeRegisterRequest(b); err != nil {
			t.Fatalf("re-encoded %q refused: %v", b, err)
		}
	})
}

// FuzzDecodeSendRequest checks that the send decoder never panics, accepts
// only valid JSON, and that an accepted notification's stored form decodes
// back to the same notification within the 3000-byte limit.
func FuzzDecodeSendRequest(f *testing.F) {
	for _, c := range contracttest.Sends() {
		f.Add([]byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := contract.DecodeSendRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(req.RegistrationIDs) == 0 || len(req.RegistrationIDs) > contract.MaxRegistrationIDs {
			t.Fatalf("accepted %d registration ids", len(req.RegistrationIDs))
		}
		for _, id := range append([]string{req.Notification.Epoch}, req.RegistrationIDs...) {
			if hasControl(id) {
				t.Fatalf("accepted a control character in an id: %q", id)
			}
		}
		stored, _ := req.Notification.MarshalJSON()
		if len(stored) > contract.MaxNotificationBytes {
			t.Fatalf("accepted a notification of %d bytes", len(stored))
		}
		var back contract.Notification
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatalf("stored form %q does not decode: %v", stored, err)
		}
		again, _ := back.MarshalJSON()
		if string(again) != string(stored) {
			t.Fatalf("round trip changed %q to %q", stored, again)
		}
	})
}
