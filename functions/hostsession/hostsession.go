// Package hostsession is the HostSession function: POST /v1/host/session,
// called by desktop hosts without authentication (the per-IP bucket it shares
// with HostChallenge).
package hostsession

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("HostSession", HostSession) }

// HostSession is the framework entry point.
func HostSession(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "HostSession", Handler)
}

// Handler returns the function's routes behind the shared edge.
func Handler(s *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/host/session", s.Edge.Unauthenticated(s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return create(s, w, r)
	})))
	return s.Edge.Wrap(mux)
}

func create(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeSessionRequest(body)
	if err != nil {
		return err
	}
	resp, err := s.Auth.CreateSession(r.Context(), req)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
	return nil
}
