package delivery

import (
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/seal/sealtest"
	"onorca.dev/push/shared/store"
)

// benchAlert is a typical agent alert.
func benchAlert(seq int64) contract.Notification {
	return contract.Notification{
		NotificationID: fmt.Sprintf("agent-task-%d", seq), Seq: seq, Epoch: "3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69",
		Source: contract.SourceAgentTaskComplete, AgentState: contract.AgentFinished, Title: "Refactor finished",
		Body:       "Claude finished the refactor of shared/store: 14 files changed, all tests pass.",
		WorktreeID: "wt-orca-main",
	}
}

// openBatchOf returns an open batch of registration "r" holding n typical
// alerts, sealed by p.
func openBatchOf(p payloads, n int) store.OpenBatch {
	ns := make([]contract.Notification, n)
	for i := range ns {
		ns[i] = benchAlert(int64(i))
	}
	return store.OpenBatch{ID: "b", Payload: p.encode("b", "r", ns), Members: n,
		DueAt: 10, ExpiresAt: 1000}
}

// benchAdmission is an Admission that can only decide joins.
func benchAdmission(b *testing.B) *Admission {
	return &Admission{payloads: payloads{sealtest.Ring(b)}}
}

// BenchmarkJoin measures the join decision (opening the open batch's
// members for their summary fields, then building both provider payloads) when the 2nd, 16th and 27th typical alert
// arrives; 27 is the most such alerts (with a UUID epoch) that fit.
func BenchmarkJoin(b *testing.B) {
	adm := benchAdmission(b)
	for _, n := range []int{1, 15, 26} {
		open := openBatchOf(adm.payloads, n)
		a := benchAlert(99)
		ev := newEvent("AbCdEfGhIjKlMnOp", &a, 0, sealtest.DigestKey(b))
		b.Run(fmt.Sprintf("members=%d", n+1), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok, err := adm.join(ev, "r", open, 1000); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkJoinParts splits the join decision for 27 members.
func BenchmarkJoinParts(b *testing.B) {
	p := benchAdmission(b).payloads
	open := openBatchOf(p, 27)
	members, err := p.decode(open.ID, "r", open.Payload, false)
	if err != nil {
		b.Fatal(err)
	}
	m := push.Build("AbCdEfGhIjKlMnOp", members, 1000)
	parts := []struct {
		name string
		fn   func()
	}{
		{"decode", func() { p.decode(open.ID, "r", open.Payload, false) }},
		{"summaries", func() { p.summaries(open.ID, "r", open.Payload) }},
		{"build", func() { push.Build("AbCdEfGhIjKlMnOp", members, 1000) }},
		{"apns", func() { apns.Body(m) }},
		{"fcm", func() { fcm.Size(m) }},
	}
	for _, part := range parts {
		b.Run(part.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				part.fn()
			}
		})
	}
}
