// Package send is the Send function: POST /v1/send, called by desktop hosts
// with a bearer session to push one notification to up to 20 of their
// registrations.
package send

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("Send", Send) }

// Send is the framework entry point.
func Send(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "Send", Handler)
}

// Handler returns the function's route behind the shared edge. Bearer
// authentication runs first, for every method under /v1/send, and before the
// body cap, so an oversized unauthenticated send is 401 (reference-behaviour
// §1.2). Admission reads the bearer's session again in its first statement,
// so the edge may take a bearer it has seen before from memory.
func Handler(s *service.Service) http.Handler {
	routes := http.NewServeMux()
	routes.Handle("POST /v1/send", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return send(s, w, r)
	}))
	mux := http.NewServeMux()
	mux.Handle("/v1/send", s.Edge.AuthenticatedByCore(routes))
	return s.Edge.Wrap(mux)
}

// send decodes the body strictly (any failure is 400 invalid_request with
// nothing written), admits it, and answers 200 with one result per
// de-duplicated registration id.
func send(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeSendRequest(body)
	if err != nil {
		return err
	}
	b := httpx.BearerOf(r.Context())
	results, err := s.Admission.SendAs(r.Context(), b.Host, b.TokenHash, req)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, contract.SendResponse{Results: results})
	return nil
}
