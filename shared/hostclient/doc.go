// Package hostclient is the desktop host's side of the push gateway, in Go:
// it holds the host key pair, answers challenges with every host-side check
// of reference-behaviour §3 ("The host's side"), caches the session, and
// registers, lists, deletes and sends the way the desktop does (contract
// "Desktop", push-gateway-client.ts).
//
// Only tests, the load generator and the emulator's demo import it (style.md
// §1.1); the gateway never does. It owns no wire constant: sizes, limits and
// error codes come from package contract, and the transcript, plaintext
// layout and MAC from package hostauth.
package hostclient
