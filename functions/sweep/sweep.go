// Package sweep is the Sweep function: called every minute by Cloud
// Scheduler (private, OIDC), it expires overdue batches (giving back their
// badge raises) and re-schedules due batches whose task was lost, then
// prunes what retention lets go (delivery.Sweeper).
package sweep

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("Sweep", Sweep) }

// Sweep is the framework entry point.
func Sweep(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "Sweep", Handler)
}

// Handler returns the function behind the shared edge. It answers POST on any
// path with the run's report.
func Handler(s *service.Service) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		report, err := s.Sweeper.Sweep(r.Context())
		if err != nil {
			return err
		}
		httpx.WriteJSON(w, http.StatusOK, report)
		return nil
	}))
	return s.Edge.Wrap(mux)
}
