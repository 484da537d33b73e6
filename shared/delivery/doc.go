// Package delivery is the gateway's delivery core. Admission (contract
// "Send", "Coalescing"; reference-behaviour §4–5) runs one transaction per
// /v1/send under the host's lock that reads the bearer's session, applies
// the event identity and content fingerprint, the per-host quotas, the
// dismissal fences and coalescing for every registration, and leaves in SQL
// everything delivery needs: the event, the recipients and the pending
// batches. After commit it hands every new or newly-due batch to a
// [Scheduler]. Delivery claims a batch with a lease, sends it and records
// the outcome; the sweep prunes and recovers lost tasks.
//
// It holds no SQL (that is package store), never calls a provider or the
// scheduler inside a transaction, and reads the clock once per request.
package delivery
