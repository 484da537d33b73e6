package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store/storetest"
)

// countedEnv is a deliverEnv whose Deliverer counts into e.counters, which
// the test reads.
func countedEnv(t *testing.T, d storetest.Dialect) *deliverEnv {
	t.Helper()
	e := mustDeliverEnv(t, d)
	dl, err := delivery.NewDeliverer(delivery.DelivererOptions{Keys: sealtest.Ring(t), Store: e.store, Clock: e.clock,
		Counters: e.counters, Scheduler: e.sched, APNS: e.prov, FCM: e.prov})
	if err != nil {
		t.Fatal(err)
	}
	e.dl = dl
	e.counters.Consume()
	return e
}

// only returns the counters whose names contain part.
func only(n map[string]int64, part string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range n {
		if strings.Contains(k, part) && v != 0 {
			out[k] = v
		}
	}
	return out
}

// Each provider call is counted by how late it went out after its batch
// (its attempt) was due, and each alert batch a provider accepted by how
// long after its oldest alert was accepted.
func TestLatenessCounted(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := countedEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			// Out 7 s after it was due, accepted by the provider 10 s
			// after the alert was.
			id := e.queue(t, reg, alert("a", 1))
			e.clock.Advance(contract.DefaultCoalesce + 7*time.Second)
			e.deliver(t, id)
			want := map[string]int64{obs.DeliveryLate30s: 1, obs.AlertLatency30s: 1}
			if diff := cmp.Diff(want, only(e.counters.Consume(), "late")); diff != "" {
				t.Fatalf("after a delivery 7 s late (-want +got):\n%s", diff)
			}
			// On time, refused for a retry, then out 40 s after the
			// retry was due: two calls, one acceptance, 45 s after the
			// alert.
			id = e.queue(t, reg, alert("b", 2))
			e.clock.Advance(contract.DefaultCoalesce)
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				return push.Outcome{Kind: push.Retry, Reason: "ServiceUnavailable"}
			}
			e.deliver(t, id)
			due := e.batch(t, id).DueAt
			e.clock.Set(time.UnixMilli(due).Add(40 * time.Second))
			e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
				return push.Outcome{Kind: push.Sent}
			}
			e.deliver(t, id)
			want = map[string]int64{obs.DeliveryLate1s: 1, obs.DeliveryLateOver30s: 1, obs.AlertLatencyOver30s: 1}
			if diff := cmp.Diff(want, only(e.counters.Consume(), "late")); diff != "" {
				t.Fatalf("after a retry delivered 40 s late (-want +got):\n%s", diff)
			}
			// A dismissal is counted late, but is no alert.
			e.sched.take()
			id = e.queue(t, reg, dismissal("b", 2))
			e.clock.Advance(2 * time.Second)
			e.deliver(t, id)
			want = map[string]int64{obs.DeliveryLate5s: 1}
			if diff := cmp.Diff(want, only(e.counters.Consume(), "late")); diff != "" {
				t.Fatalf("after a dismissal 2 s late (-want +got):\n%s", diff)
			}
		})
	}
}

// The providers' refusals of the gateway's own credentials are counted per
// provider; a refusal for anything else is not.
func TestCredentialRefusalsCounted(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) { credentialRefusalsCounted(t, d) })
	}
}

func credentialRefusalsCounted(t *testing.T, d storetest.Dialect) {
	e := countedEnv(t, d)
	android := e.device(t, "hostA", "pixel")
	ios, err := e.store.RegisterDevice(context.Background(), "hostA", contract.RegisterRequest{
		DeviceID: "iphone", Platform: contract.PlatformIOS, Token: strings.Repeat("ab", 32),
		APNSEnvironment: contract.APNSSandbox,
	}, e.now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		reg, reason string
		want        map[string]int64
	}{
		{ios, "InvalidProviderToken", map[string]int64{obs.APNSCredentialsRejected: 1}},
		{ios, "ExpiredProviderToken", map[string]int64{obs.APNSCredentialsRejected: 1}},
		{ios, "BadTopic", map[string]int64{}},
		{android, "UNAUTHENTICATED", map[string]int64{obs.FCMCredentialsRejected: 1}},
		{android, "PERMISSION_DENIED", map[string]int64{obs.FCMCredentialsRejected: 1}},
		{android, "InvalidProviderToken", map[string]int64{}},
	}
	for i, tt := range tests {
		e.prov.step = func(context.Context, push.Target, push.Message) push.Outcome {
			return push.Outcome{Kind: push.Terminal, Reason: tt.reason}
		}
		id := e.queue(t, tt.reg, alert("c", int64(i+1)))
		e.clock.Advance(contract.DefaultCoalesce)
		e.deliver(t, id)
		if diff := cmp.Diff(tt.want, only(e.counters.Consume(), "credentials")); diff != "" {
			t.Errorf("%s refused %s (-want +got):\n%s", tt.reg, tt.reason, diff)
		}
	}
}
