// Package routes mounts every public function at its contract path on one
// mux, for the emulator and for tests that drive the gateway as a whole. In
// production each function is its own service and the load balancer does
// this routing.
package routes

import (
	"net/http"

	"onorca.dev/push/functions/devices"
	"onorca.dev/push/functions/hostchallenge"
	"onorca.dev/push/functions/hostsession"
	"onorca.dev/push/functions/receipts"
	"onorca.dev/push/functions/send"
	"onorca.dev/push/shared/service"
)

// Public returns a mux serving the public routes of the contract and
// GET /health and /ready, each through its function's Handler.
func Public(s *service.Service) *http.ServeMux {
	mux := http.NewServeMux()
	challenge := hostchallenge.Handler(s)
	mux.Handle("/v1/host/challenge", challenge)
	mux.Handle("/v1/host/session", hostsession.Handler(s))
	dev := devices.Handler(s)
	mux.Handle("/v1/devices", dev)
	mux.Handle("/v1/devices/", dev)
	mux.Handle("/v1/send", send.Handler(s))
	mux.Handle("/v1/receipts", receipts.Handler(s))
	mux.Handle("/health", challenge)
	mux.Handle("/ready", challenge)
	return mux
}
