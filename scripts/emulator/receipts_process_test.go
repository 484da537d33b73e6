package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/scripts/emulator/emulatortest"
	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store/storetest"
)

// TestReceiptsThroughTheProcess reaches every receipt state a host can bring
// about from outside (queued, retrying, sent, dead, error, expired, dismissed,
// dropped, and unknown for an event of another host) through the emulator
// process on its manual clock, on SQLite and on PostgreSQL: a desktop's view
// of the deployed gateway. The states that need a deliverer to die mid-flight
// are reached in process (TestReceiptsDismissedInFlight, TestReceiptsDropped).
func TestReceiptsThroughTheProcess(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			env := []string{"ORCA_PUSH_MANUAL_CLOCK=1"}
			if url := d.Options(t).DatabaseURL; url != "" {
				env = append(env, "ORCA_PUSH_DATABASE_URL="+url)
			}
			p := startEmulator(t, env...)
			ctx := context.Background()
			control := func(method, path, body string, out any) {
				t.Helper()
				emulatortest.Control(t, p.origin, method, path, body, out)
			}
			advance := func(ms int64) {
				t.Helper()
				control("POST", "/_emulator/clock", fmt.Sprintf(`{"advanceMs":%d}`, ms), nil)
				control("POST", "/_emulator/tasks/run-due", "", nil)
			}
			// The manual clock starts at the real time and the test moves it
			// by seconds only, so a host on the real clock signs in.
			newHost := func() *hostclient.Client {
				t.Helper()
				kp, err := hostclient.GenerateKeypair(rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				h, err := hostclient.New(hostclient.Options{BaseURL: p.origin, Keypair: kp,
					HTTPClient: http.DefaultClient, Clock: clock.Real{}})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			h := newHost()
			phone := func(name string) (reg, token string) {
				t.Helper()
				token = fmt.Sprintf("%x", name) + strings.Repeat("0", 64)
				reg, err := h.Register(ctx, hostclient.RegisterParams{DeviceID: name, Platform: contract.PlatformIOS,
					Token: token, APNSEnvironment: contract.APNSSandbox})
				if err != nil {
					t.Fatal(err)
				}
				return reg, token
			}
			send := func(n contract.Notification, regs ...string) {
				t.Helper()
				res, err := h.Send(ctx, regs, n)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if r.Status != contract.StatusQueued {
						t.Fatalf("Send(seq %d) to %s = %s, want queued", n.Seq, r.RegistrationID, r.Status)
					}
				}
			}
			fault := func(token, f string) {
				t.Helper()
				control("POST", "/_emulator/faults", `{"provider":"apns","token":"`+token+`",`+f+`}`, nil)
			}
			var clk struct{ Now int64 }
			control("GET", "/_emulator/clock", "", &clk)
			t0 := clk.Now

			names := []string{"sent", "retrying", "dead", "error", "expired", "dismissed", "dropped"}
			regs := map[string]string{}
			events := map[string]contract.Notification{}
			for i, name := range names {
				reg, token := phone(name)
				regs[name] = reg
				switch name {
				case "retrying":
					fault(token, `"status":503,"reason":"ServiceUnavailable","times":1`)
				case "dead":
					fault(token, `"status":410,"reason":"Unregistered"`)
				case "error":
					fault(token, `"status":400,"reason":"BadTopic"`)
				case "expired":
					fault(token, `"status":429,"reason":"TooManyRequests","retryAfter":"600"`)
				}
				n := alert("n-"+name, int64(i+1))
				events[name] = n
				send(n, reg)
			}
			dismissal := events["dismissed"]
			dismissal.Kind = contract.KindDismiss
			send(dismissal, regs["dismissed"])
			if err := h.Delete(ctx, regs["dropped"]); err != nil {
				t.Fatal(err)
			}

			check := func(want map[string]contract.RecipientReceipt) {
				t.Helper()
				var refs []contract.EventRef
				for _, name := range names {
					refs = append(refs, hostclient.EventOf(events[name]))
				}
				got, err := h.Receipts(ctx, refs)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range names {
					r := got[i]
					w := want[name]
					w.RegistrationID = regs[name]
					if !r.Known || len(r.Recipients) != 1 {
						t.Errorf("%s: receipt %+v, want one known recipient", name, r)
						continue
					}
					if diff := cmp.Diff(w, r.Recipients[0]); diff != "" {
						t.Errorf("%s (-want +got):\n%s", name, diff)
					}
				}
			}
			queued := fate("", contract.ReceiptQueued, t0, "")
			check(map[string]contract.RecipientReceipt{
				"sent": queued, "retrying": queued, "dead": queued, "error": queued, "expired": queued,
				"dismissed": fate("", contract.ReceiptDismissed, t0, ""),
				"dropped":   fate("", contract.ReceiptDropped, t0, ""),
			})
			advance(3000)
			check(map[string]contract.RecipientReceipt{
				"sent":      fate("", contract.ReceiptSent, t0+3000, ""),
				"retrying":  fate("", contract.ReceiptRetrying, t0+3000, "ServiceUnavailable"),
				"dead":      fate("", contract.ReceiptDead, t0+3000, "Unregistered"),
				"error":     fate("", contract.ReceiptError, t0+3000, "BadTopic"),
				"expired":   fate("", contract.ReceiptExpired, t0+3000, "TooManyRequests"),
				"dismissed": fate("", contract.ReceiptDismissed, t0, ""),
				"dropped":   fate("", contract.ReceiptDropped, t0, ""),
			})
			advance(2000) // the backoff after one attempt
			check(map[string]contract.RecipientReceipt{
				"sent":      fate("", contract.ReceiptSent, t0+3000, ""),
				"retrying":  fate("", contract.ReceiptSent, t0+5000, ""),
				"dead":      fate("", contract.ReceiptDead, t0+3000, "Unregistered"),
				"error":     fate("", contract.ReceiptError, t0+3000, "BadTopic"),
				"expired":   fate("", contract.ReceiptExpired, t0+3000, "TooManyRequests"),
				"dismissed": fate("", contract.ReceiptDismissed, t0, ""),
				"dropped":   fate("", contract.ReceiptDropped, t0, ""),
			})

			// Another host asking for the same identities learns nothing.
			other := newHost()
			got, err := other.Receipts(ctx, []contract.EventRef{hostclient.EventOf(events["sent"])})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Known || len(got[0].Recipients) != 0 {
				t.Fatalf("another host's receipt = %+v, want unknown", got)
			}
		})
	}
}
