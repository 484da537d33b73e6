package delivery_test

import (
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store/storetest"
)

// TestUrgencyIsContentAndStored: the urgency is stored with the pending
// alert (the batch's payload), so delivery reads it back; in the content
// fingerprint an explicit high is the omitted urgency, and normal is other
// content under the same identity, refused with nothing recorded.
func TestUrgencyIsContentAndStored(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			e := mustEnv(t, d)
			p := e.device(t, "hostA", "phone")
			n := alert("n", 1)
			e.mustSend(t, contract.StatusQueued, "hostA", n, p)
			calls := e.sched.take()
			if len(calls) != 1 {
				t.Fatalf("scheduled %v, want one batch", calls)
			}
			high, normal := n, n
			high.Urgency, normal.Urgency = contract.UrgencyHigh, contract.UrgencyNormal
			e.mustSend(t, contract.StatusQueued, "hostA", high, p)
			before := e.rows(t)
			e.mustSend(t, contract.StatusError, "hostA", normal, p)
			e.mustRows(t, before)
			if ms := e.members(t, calls[0].BatchID); len(ms) != 1 || ms[0].Urgency != "" {
				t.Errorf("stored members %+v, want the first send alone, its urgency absent", ms)
			}

			other := alert("m", 2)
			other.Urgency = contract.UrgencyNormal
			e.mustSend(t, contract.StatusQueued, "hostA", other, p)
			ms := e.members(t, calls[0].BatchID)
			if len(ms) != 2 || ms[0].EffectiveUrgency() != contract.UrgencyHigh || ms[1].Urgency != contract.UrgencyNormal {
				t.Errorf("stored members %+v, want an absent urgency and then normal", ms)
			}
		})
	}
}
