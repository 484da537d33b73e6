// Package delivery is the gateway's delivery core. This part is admission
// (contract "Send", "Coalescing"; reference-behaviour §4–5): for each
// registration of a /v1/send it runs one per-host transaction that applies
// the event identity and content fingerprint, the per-host quotas, the
// dismissal fences and coalescing, and leaves in SQL everything delivery
// needs: the event, the recipient and the pending batch. After commit it
// hands every new or newly-due batch to a [Scheduler].
//
// It holds no SQL (that is package store), never calls a provider or the
// scheduler inside a transaction, and reads the clock once per request.
package delivery
