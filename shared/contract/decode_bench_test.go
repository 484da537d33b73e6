package contract_test

import (
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
)

// benchAlert is a typical agent alert as the desktop sends it.
const benchAlert = `{"v":1,"registrationIds":["9b2f6c1e-4a7d-4e3b-8c5f-2d1a0e9f7b36"],"notification":{"notificationId":"agent-task-7","notificationSeq":7,"notificationEpoch":"3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69","source":"agent-task-complete","agentState":"finished","title":"Refactor finished","body":"Claude finished the refactor of shared/store: 14 files changed, all tests pass.","worktreeId":"wt-orca-main"}}`

// benchAlertWide is the alert sent to five devices with a 400-character
// paneKey, the largest body an agent sends routinely.
var benchAlertWide = `{"v":1,"registrationIds":["9b2f6c1e-4a7d-4e3b-8c5f-2d1a0e9f7b36","0c8e1f4a-2b3d-4c5e-9f6a-7b8c9d0e1f2a","5d6e7f80-9a1b-4c2d-8e3f-4a5b6c7d8e9f","a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","f0e1d2c3-b4a5-4968-8776-655443322110"],"notification":{"notificationId":"agent-task-7","notificationSeq":7,"notificationEpoch":"3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69","source":"agent-task-complete","agentState":"finished","title":"Refactor finished","body":"Claude finished the refactor of shared/store: 14 files changed, all tests pass.","worktreeId":"wt-orca-main","paneKey":"` + strings.Repeat("p", 400) + `"}}`

func BenchmarkDecodeSendRequest(b *testing.B) {
	for _, bb := range []struct{ name, body string }{
		{"alert", benchAlert},
		{"5ids-paneKey400", benchAlertWide},
	} {
		body := []byte(bb.body)
		if _, err := contract.DecodeSendRequest(body); err != nil {
			b.Fatalf("DecodeSendRequest(%s) = %v", bb.name, err)
		}
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := contract.DecodeSendRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
