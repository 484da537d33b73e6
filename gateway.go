// Package gateway is the module root that the Cloud Run functions Go
// buildpack builds (go-dependencies.md §2b): it only links every function
// package, each of which registers itself with functions-framework-go. The
// deployed function is chosen by its entry point: HostChallenge, HostSession,
// Devices, Send, Receipts, Deliver or Sweep.
package gateway

import (
	_ "onorca.dev/push/functions/deliver"
	_ "onorca.dev/push/functions/devices"
	_ "onorca.dev/push/functions/hostchallenge"
	_ "onorca.dev/push/functions/hostsession"
	_ "onorca.dev/push/functions/receipts"
	_ "onorca.dev/push/functions/send"
	_ "onorca.dev/push/functions/sweep"
)
