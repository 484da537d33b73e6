// Package receipts is the Receipts function: POST /v1/receipts, called by
// desktop hosts with a bearer session to learn what became of up to 20 of
// their events (issue "delivery receipts").
package receipts

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("Receipts", Receipts) }

// Receipts is the framework entry point.
func Receipts(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "Receipts", Handler)
}

// Handler returns the function's route behind the shared edge. Bearer
// authentication and the per-host bucket run first, for every method under
// /v1/receipts, and before the body cap, as for /v1/send
// (reference-behaviour §1.2).
func Handler(s *service.Service) http.Handler {
	routes := http.NewServeMux()
	routes.Handle("POST /v1/receipts", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return read(s, w, r)
	}))
	mux := http.NewServeMux()
	mux.Handle("/v1/receipts", s.Edge.Authenticated(routes))
	return s.Edge.Wrap(mux)
}

// read decodes the body strictly (any failure is 400 invalid_request) and
// answers 200 with one receipt per requested event. It writes nothing.
func read(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeReceiptsRequest(body)
	if err != nil {
		return err
	}
	out, err := s.Receipts.Read(r.Context(), httpx.Host(r.Context()), req)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
