package standin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

// fits is the batching rule's payload test: the APNs body and the FCM
// message (without its token, at the worst-case ttl) within
// contract.MaxProviderPayload.
func fits(m push.Message) bool {
	return len(apns.Body(m)) <= contract.MaxProviderPayload && fcm.Size(m) <= contract.MaxProviderPayload
}

// mustValid checks that n passes the contract's own decoder, limits and
// MaxNotificationBytes rule included.
func mustValid(t *testing.T, n contract.Notification) {
	t.Helper()
	body := append([]byte(`{"v":1,"registrationIds":["r"],"notification":`), n.AppendJSON(nil, true)...)
	if _, err := contract.DecodeSendRequest(append(body, '}')); err != nil {
		t.Fatalf("generated notification is invalid: %v", err)
	}
}

// TestBatchingRuleBound: whenever the rule "CanSummarize, and APNs Body and
// FCM Size within MaxProviderPayload" admits a member set, the payloads
// really built and sent are within it, in either FCM form, at any send time
// before the deadline, and the stand-ins (which refuse larger ones) accept
// them. The notifications carry Gen D's fields up to their limits.
func TestBatchingRuleBound(t *testing.T) {
	st, clk, key := mustStart(t)
	ac := mustAPNS(t, st, clk, key)
	fc, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	data, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk, DataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	r := rand.New(rand.NewPCG(7, 8))
	admitted, largest, sent := 0, 0, 0
	// At least 90 bursts, and on until some set reached the member limit
	// (bounded), so the coverage does not hang on the seed.
	for burst := 0; burst < 90 || largest < contract.MaxBatchMembers && burst < 900; burst++ {
		// Each burst draws its notifications at one scale: full limits,
		// small, or tiny (only tiny ones let 32 members fit).
		scale := []int{1, 64, 2048}[r.IntN(3)]
		var members []contract.Notification
		for range 2 * contract.MaxBatchMembers {
			n := pushtest.RandomNotification(r, false, scale)
			mustValid(t, n)
			candidate := append(members[:len(members):len(members)], n)
			if !push.CanSummarize(candidate) || !fits(push.Build(pushtest.Host, candidate, pushtest.Deadline)) {
				members = []contract.Notification{n} // flush, start a new batch
				continue
			}
			members = candidate
			admitted++
			largest = max(largest, len(members))
			m := push.Build(pushtest.Host, members, pushtest.Deadline)
			now := pushtest.Deadline - 1 - r.Int64N(contract.EventLifetime.Milliseconds())
			if a := len(apns.Body(m)); a > contract.MaxProviderPayload {
				t.Fatalf("%d members: APNs body %d bytes", len(members), a)
			}
			if f := len(fcm.MessageJSON(m, "", now)); f > contract.MaxProviderPayload || f > fcm.Size(m) {
				t.Fatalf("%d members: FCM message %d bytes at now, Size %d", len(members), f, fcm.Size(m))
			}
			if f := len(fcm.DataMessageJSON(m, "", now)); f > contract.MaxProviderPayload || f > fcm.Size(m) {
				t.Fatalf("%d members: data-only FCM message %d bytes at now, Size %d", len(members), f, fcm.Size(m))
			}
			if len(m.SummaryMembers) != len(members) {
				t.Fatalf("summaryMembers holds %d of %d members", len(m.SummaryMembers), len(members))
			}
			if r.IntN(20) == 0 || len(members) == contract.MaxBatchMembers {
				sent++
				mustSendBoth(t, ac, fc, m)
				mustSendBoth(t, ac, data, m)
			}
		}
	}
	t.Logf("admitted %d member sets, the largest of %d members; %d sent to the stand-ins", admitted, largest, sent)
	if largest < contract.MaxBatchMembers {
		t.Errorf("no set reached %d members: the generator does not cover the limit", contract.MaxBatchMembers)
	}
}

// mustSendBoth sends m through both real clients; the stand-ins refuse a
// payload over the limit.
func mustSendBoth(t *testing.T, ac *apns.Client, fc *fcm.Client, m push.Message) {
	t.Helper()
	ctx := context.Background()
	if o := ac.Send(ctx, push.Target{Platform: contract.PlatformIOS, Token: iosToken}, m); o.Kind != push.Sent {
		t.Fatalf("APNs send = %+v", o)
	}
	if o := fc.Send(ctx, push.Target{Platform: contract.PlatformAndroid, Token: fcmToken}, m); o.Kind != push.Sent {
		t.Fatalf("FCM send = %+v", o)
	}
}

// TestSingleAlertFits: a single alert that passed the contract's
// MaxNotificationBytes rule fits both providers, provided it holds none of the characters only
// Go's encoder escapes ('<', '>', '&', U+2028, U+2029; see
// TestSingleAlertEscapingOverflow). The margin is fixed: every variable
// byte costs the same in the notification's JSON and in the payloads.
func TestSingleAlertFits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worstAPNS, worstFCM, worstData := 0, 0, 0
	check := func(n contract.Notification) {
		t.Helper()
		mustValid(t, n)
		m := push.Build(pushtest.Host, []contract.Notification{n}, pushtest.Deadline)
		a, f := len(apns.Body(m)), fcm.Size(m)
		d := len(fcm.DataMessageJSON(m, "", pushtest.Deadline-contract.EventLifetime.Milliseconds()))
		worstAPNS, worstFCM, worstData = max(worstAPNS, a), max(worstFCM, f), max(worstData, d)
		if a > contract.MaxProviderPayload || f > contract.MaxProviderPayload || d > contract.MaxProviderPayload {
			t.Fatalf("a valid single alert does not fit: APNs %d, FCM %d, data-only FCM %d bytes", a, f, d)
		}
	}
	for range 2000 {
		check(pushtest.RandomNotification(r, true, 1))
	}
	// The worst case: a notification of exactly MaxNotificationBytes with every
	// optional key the payloads carry and none they drop, Gen D's included,
	// sealed (the data-only form) or not, silent or not.
	f := false
	for _, state := range []contract.AgentState{"", contract.AgentNeedsInput} {
		for _, pane := range []string{"p", contract.SealedPaneKeyPrefix} {
			for _, sound := range []*bool{nil, &f} {
				n := contract.Notification{
					NotificationID: "x", Seq: contract.MaxSafeInteger, Epoch: strings.Repeat("€", contract.MaxOpaqueID),
					Source: contract.SourceAgentTaskComplete, AgentState: state, Sound: sound,
					Title: strings.Repeat("\x01", contract.MaxTitle), Body: strings.Repeat("\x01", contract.MaxBody),
					WorktreeID: "w", PaneKey: pane, ExecutionHost: contract.ExecutionHostPrefix + "h",
				}
				n.NotificationID += strings.Repeat("a", contract.MaxNotificationBytes-len(n.AppendJSON(nil, true)))
				check(n)
			}
		}
	}
	t.Logf("largest single alert: APNs %d, FCM %d, data-only FCM %d bytes (limit %d)",
		worstAPNS, worstFCM, worstData, contract.MaxProviderPayload)
}

// TestSingleAlertEscapingOverflow pins the exception: apns2 and the
// firebase SDK encode with encoding/json, which writes '<', '>' and '&' as
// 6-byte \u escapes (U+2028 and U+2029 too), so a valid single alert can
// exceed MaxProviderPayload. Admission has to check singles as well; the stand-ins
// refuse such payloads as the providers would.
func TestSingleAlertEscapingOverflow(t *testing.T) {
	n := contract.Notification{
		NotificationID: strings.Repeat("<", 2000), Epoch: "e", Source: contract.SourcePlugin,
		Title: "t", Body: strings.Repeat("\u2028", 150),
	}
	mustValid(t, n)
	m := push.Build(pushtest.Host, []contract.Notification{n}, pushtest.Deadline)
	a, f := len(apns.Body(m)), fcm.Size(m)
	t.Logf("notification %d bytes → APNs %d, FCM %d bytes", len(n.AppendJSON(nil, true)), a, f)
	if a <= contract.MaxProviderPayload || f <= contract.MaxProviderPayload {
		t.Fatalf("APNs %d, FCM %d bytes: expected both over %d", a, f, contract.MaxProviderPayload)
	}
	st, clk, key := mustStart(t)
	ac := mustAPNS(t, st, clk, key)
	fc, err := fcm.New(context.Background(), fcm.Options{Endpoint: st.FCMEndpoint(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	got := []push.Outcome{
		ac.Send(context.Background(), push.Target{Platform: contract.PlatformIOS, Token: iosToken}, m),
		fc.Send(context.Background(), push.Target{Platform: contract.PlatformAndroid, Token: fcmToken}, m),
	}
	want := []push.Outcome{{Kind: push.Terminal, Reason: "PayloadTooLarge"}, {Kind: push.Terminal, Reason: "INVALID_ARGUMENT"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes = %+v, want %+v", got, want)
	}
	var wire struct {
		Message json.RawMessage `json:"message"`
	}
	if in := st.Inbox(); len(in) != 2 || json.Unmarshal(in[1].Body, &wire) != nil || len(in[0].Body) != a {
		t.Errorf("inbox = %d entries; the APNs body on the wire must be Body's %d bytes", len(in), a)
	}
}
