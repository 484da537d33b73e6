package fcm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/push"
)

// TestMarshalIsJSONMarshal: marshal (the SDK's MarshalJSON alone) writes
// the bytes json.Marshal writes, for every form: an alert, a summary, a
// dismissal, a sealed alert, text with the characters the encoders escape,
// a badge, each as the notification form and the data-only form.
func TestMarshalIsJSONMarshal(t *testing.T) {
	var members []contract.Notification
	for i := range 5 {
		members = append(members, contract.Notification{NotificationID: fmt.Sprintf("n%d", i), Seq: int64(i + 1),
			Epoch: "3f1c2a9e-5b7d-4c1e-9a4f-1e2d3c4b5a69", Source: contract.SourceAgentTaskComplete,
			AgentState: contract.AgentFinished, Title: "Done <b> & \u2028", Body: fmt.Sprintf("pane %d > \u2029 é 🐳", i),
			WorktreeID: "wt-1"})
	}
	dismiss := members[0]
	dismiss.Kind = contract.KindDismiss
	single := push.Build("AbCdEfGhIjKlMnOp", members[:1], 1_800_000_000_000)
	badged := single
	badged.Badge = 7
	sealed := single
	sealed.Sealed = true
	msgs := map[string]push.Message{
		"alert":   single,
		"summary": push.Build("AbCdEfGhIjKlMnOp", members, 1_800_000_000_000),
		"dismiss": push.Build("AbCdEfGhIjKlMnOp", []contract.Notification{dismiss}, 1_800_000_000_000),
		"badge":   badged,
		"sealed":  sealed,
	}
	for name, m := range msgs {
		for _, dataOnly := range []bool{false, true} {
			msg := build(m, "tok", 1_799_999_000_000, dataOnly)
			want, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := marshal(msg); !bytes.Equal(got, want) {
				t.Errorf("%s (data-only %v): marshal wrote\n%s\njson.Marshal\n%s", name, dataOnly, got, want)
			}
		}
	}
}
