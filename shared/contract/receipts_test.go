package contract_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
)

func TestDecodeReceiptsRequest(t *testing.T) {
	for _, tt := range contracttest.Receipts() {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := contract.DecodeReceiptsRequest([]byte(tt.Body))
			if tt.OK && err != nil {
				t.Fatalf("DecodeReceiptsRequest = %v, want nil", err)
			}
			if !tt.OK && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeReceiptsRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

// The events come back in request order, repeats kept, an omitted kind read
// as an alert.
func TestDecodeReceiptsRequestEvents(t *testing.T) {
	body := contracttest.ReceiptsJSON(`"notificationEpoch":"e2","notificationSeq":7`,
		`"kind":"dismiss","notificationEpoch":"e1","notificationSeq":0`,
		`"notificationSeq":7,"notificationEpoch":"e2"`)
	got, err := contract.DecodeReceiptsRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := contract.ReceiptsRequest{Events: []contract.EventRef{
		{Kind: contract.KindAlert, Epoch: "e2", Seq: 7},
		{Kind: contract.KindDismiss, Epoch: "e1", Seq: 0},
		{Kind: contract.KindAlert, Epoch: "e2", Seq: 7},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DecodeReceiptsRequest (-want +got):\n%s", diff)
	}
}

// The receipt statuses' wire values.
func TestReceiptStatusValues(t *testing.T) {
	got := []contract.ReceiptStatus{contract.ReceiptQueued, contract.ReceiptRetrying, contract.ReceiptSent,
		contract.ReceiptDead, contract.ReceiptError, contract.ReceiptExpired, contract.ReceiptDismissed,
		contract.ReceiptDropped}
	want := []contract.ReceiptStatus{"queued", "retrying", "sent", "dead", "error", "expired", "dismissed", "dropped"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	for _, s := range got {
		if final := s != "queued" && s != "retrying"; s.Final() != final {
			t.Errorf("%q.Final() = %v, want %v", s, s.Final(), final)
		}
	}
}

// FuzzDecodeReceiptsRequest checks that the receipts decoder never panics,
// accepts only valid JSON, 1..MaxReceiptEvents events of a known kind with
// ids free of control characters, and that what it accepted, written again,
// decodes to the same request.
func FuzzDecodeReceiptsRequest(f *testing.F) {
	for _, c := range contracttest.Receipts() {
		f.Add([]byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := contract.DecodeReceiptsRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if n := len(req.Events); n == 0 || n > contract.MaxReceiptEvents {
			t.Fatalf("accepted %d events", n)
		}
		events := make([]map[string]any, len(req.Events))
		for i, e := range req.Events {
			if hasControl(e.Epoch) || e.Epoch == "" || (e.Kind != contract.KindAlert && e.Kind != contract.KindDismiss) ||
				e.Seq < 0 || e.Seq > contract.MaxSafeInteger {
				t.Fatalf("accepted event %+v", e)
			}
			events[i] = map[string]any{"kind": e.Kind, "notificationEpoch": e.Epoch, "notificationSeq": e.Seq}
		}
		b, _ := json.Marshal(map[string]any{"v": 1, "events": events})
		again, err := contract.DecodeReceiptsRequest(b)
		if err != nil {
			t.Fatalf("re-encoded %q refused: %v", b, err)
		}
		if diff := cmp.Diff(req, again); diff != "" {
			t.Fatalf("re-encoded %q decodes otherwise (-first +again):\n%s", b, diff)
		}
	})
}
