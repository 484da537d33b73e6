// Package hostchallenge is the HostChallenge function: POST /v1/host/challenge,
// called by desktop hosts without authentication (per-IP bucket).
package hostchallenge

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("HostChallenge", HostChallenge) }

// HostChallenge is the framework entry point.
func HostChallenge(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "HostChallenge", Handler)
}

// Handler returns the function's routes behind the shared edge.
func Handler(s *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/host/challenge", s.Edge.Unauthenticated(s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return issue(s, w, r)
	})))
	return s.Edge.Wrap(mux)
}

func issue(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeChallengeRequest(body)
	if err != nil {
		s.Counters.Inc(obs.ChallengeRejected)
		return err
	}
	resp, err := s.Auth.IssueChallenge(r.Context(), req.HostPublicKey)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
	return nil
}
