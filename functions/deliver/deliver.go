// Package deliver is the Deliver function: it delivers one batch per call.
// It is private: only Cloud Tasks calls it (with an OIDC token that Cloud Run
// checks before the request arrives), at each batch's due time, with a body
// {"batchId", "dueAt"}.
package deliver

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/tasks"
)

func init() { functions.HTTP("Deliver", Deliver) }

// Deliver is the framework entry point.
func Deliver(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "Deliver", Handler)
}

// Handler returns the function behind the shared edge. It answers POST on any
// path (a deployed function receives every path). A 2xx answer ends the
// task; an error answers 500 so that Cloud Tasks retries.
func Handler(s *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return deliver(s, w, r)
	}))
	return s.Edge.Wrap(mux)
}

func deliver(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := tasks.ParseDeliverRequest(body)
	if err != nil {
		return contract.ErrInvalidRequest
	}
	if err := s.Deliverer.Deliver(r.Context(), req.BatchID); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		OK bool `json:"ok"`
	}{true})
	return nil
}
