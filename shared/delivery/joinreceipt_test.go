package delivery_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/store/storetest"
)

// TestRecipientFollowsItsBatch: an alert that may join is recorded with the
// registration's open batch (store.Recipient.Joins); one that then cannot
// join it (a bell has no notificationId) makes the open batch due and opens
// its own, and its receipt must follow its own batch, not the one it was
// first recorded with: once the open batch is delivered, the bell is still
// queued and the alert that joined the bell's batch too.
func TestRecipientFollowsItsBatch(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			e := mustDeliverEnv(t, d)
			reg := e.device(t, "hostA", "phone")
			first := e.queue(t, reg, alert("n1", 1))
			e.mustSend(t, contract.StatusQueued, "hostA", bell(2), reg)
			e.mustSend(t, contract.StatusQueued, "hostA", alert("n3", 3), reg)
			e.sched.take()
			e.deliver(t, first)
			rs, err := delivery.NewReceipts(delivery.ReceiptsOptions{Store: e.store, Clock: e.clock, Counters: e.counters})
			if err != nil {
				t.Fatal(err)
			}
			res, err := rs.Read(ctx, "hostA", contract.ReceiptsRequest{Events: []contract.EventRef{
				{Kind: contract.KindAlert, Epoch: "epoch-1", Seq: 1},
				{Kind: contract.KindAlert, Epoch: "epoch-1", Seq: 2},
				{Kind: contract.KindAlert, Epoch: "epoch-1", Seq: 3}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []contract.ReceiptStatus
			for _, r := range res.Receipts {
				if len(r.Recipients) != 1 {
					t.Fatalf("receipt %+v, want one recipient", r)
				}
				got = append(got, r.Recipients[0].Status)
			}
			want := []contract.ReceiptStatus{contract.ReceiptSent, contract.ReceiptQueued, contract.ReceiptQueued}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("receipts of n1, the bell, n3 (-want +got):\n%s", diff)
			}
		})
	}
}
