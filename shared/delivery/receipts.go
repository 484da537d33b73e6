package delivery

import (
	"context"
	"fmt"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
)

// ReceiptsOptions configures [Receipts]; every field is required.
type ReceiptsOptions struct {
	Store    *store.Store
	Clock    clock.Clock
	Counters *obs.Counters
}

// Receipts tells a host what became of its events: POST /v1/receipts after
// decoding and authentication (issue "delivery receipts"). It reads what
// admission and delivery recorded and writes nothing.
type Receipts struct {
	store    *store.Store
	clock    clock.Clock
	counters *obs.Counters
}

// NewReceipts returns a Receipts, or ErrBadOptions when a dependency is
// missing.
func NewReceipts(o ReceiptsOptions) (*Receipts, error) {
	if o.Store == nil || o.Clock == nil || o.Counters == nil {
		return nil, fmt.Errorf("%w: Store, Clock and Counters are required", ErrBadOptions)
	}
	return &Receipts{store: o.Store, clock: o.Clock, counters: o.Counters}, nil
}

// Read answers req for host: one receipt per requested event, in request
// order, repeats answered each time. An event is host's own by its identity
// (its id hashes the host in), so another host's event with the same kind,
// epoch and sequence is unknown, as is every event older than
// contract.Retention.
func (r *Receipts) Read(ctx context.Context, host string, req contract.ReceiptsRequest) (contract.ReceiptsResponse, error) {
	now := r.clock.Now().UnixMilli()
	ids := make([]string, len(req.Events))
	for i, e := range req.Events {
		ids[i] = identity(host, e.Kind, e.Epoch, e.Seq)
	}
	found, err := r.store.Receipts(ctx, host, ids, now-contract.Retention.Milliseconds())
	if err != nil {
		return contract.ReceiptsResponse{}, fmt.Errorf("receipts: %w", err)
	}
	r.counters.Add(obs.ReceiptsRead, int64(len(ids)))
	out := contract.ReceiptsResponse{Receipts: make([]contract.Receipt, len(req.Events))}
	for i, e := range req.Events {
		recipients, known := found[ids[i]]
		if !known {
			recipients = []contract.RecipientReceipt{}
		}
		out.Receipts[i] = contract.Receipt{Kind: e.Kind, NotificationEpoch: e.Epoch, NotificationSeq: e.Seq,
			Known: known, Recipients: recipients}
	}
	return out, nil
}
