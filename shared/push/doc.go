// Package push is the provider-neutral vocabulary of one provider request:
// the [Message] built from a batch's members, the [Target] device it goes
// to, and the [Outcome] a provider answered. It builds summaries and collapse
// ids (reference-behaviour §5.3–5.4) in one place, so the delivery core and
// both providers agree on them.
//
// It knows no provider: APNs headers and JSON live in providers/apns, FCM's in
// providers/fcm. It imports only contract and the standard library, and it
// makes no network call and reads no clock.
package push
