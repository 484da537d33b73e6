// Package devices is the Devices function: POST /v1/devices, GET /v1/devices,
// DELETE /v1/devices/{registrationId} and PUT
// /v1/devices/{registrationId}/badge, called by desktop hosts with a bearer
// session.
package devices

import (
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/service"
)

func init() { functions.HTTP("Devices", Devices) }

// Devices is the framework entry point.
func Devices(w http.ResponseWriter, r *http.Request) {
	service.Serve(w, r, "Devices", Handler)
}

// Handler returns the function's routes behind the shared edge. Bearer
// authentication runs before anything else, for every method under
// /v1/devices (reference-behaviour §1.2).
func Handler(s *service.Service) http.Handler {
	routes := http.NewServeMux()
	routes.Handle("POST /v1/devices", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return register(s, w, r)
	}))
	routes.Handle("GET /v1/devices", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return list(s, w, r)
	}))
	routes.Handle("DELETE /v1/devices/{registrationId}", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return remove(s, w, r)
	}))
	routes.Handle("PUT /v1/devices/{registrationId}/badge", s.Edge.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return setBadge(s, w, r)
	}))
	mux := http.NewServeMux()
	mux.Handle("/v1/devices", s.Edge.Authenticated(routes))
	mux.Handle("/v1/devices/", s.Edge.Authenticated(routes))
	return s.Edge.Wrap(mux)
}

func register(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeRegisterRequest(body)
	if err != nil {
		s.Counters.Inc(obs.DeviceRejected)
		return err
	}
	id, err := s.Store.RegisterDevice(r.Context(), httpx.Host(r.Context()), req, s.Clock.Now().UnixMilli())
	if err != nil {
		return err
	}
	s.Counters.Inc(obs.DeviceRegistered)
	httpx.WriteJSON(w, http.StatusOK, contract.RegisterResponse{RegistrationID: id})
	return nil
}

func list(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	devices, err := s.Store.Devices(r.Context(), httpx.Host(r.Context()))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, contract.DeviceList{Devices: devices})
	return nil
}

func remove(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	id, err := contract.DecodeRegistrationID(r.PathValue("registrationId"))
	if err != nil {
		return err
	}
	if err := s.Store.DeleteDevice(r.Context(), httpx.Host(r.Context()), id, s.Clock.Now().UnixMilli()); err != nil {
		return err
	}
	s.Counters.Inc(obs.DeviceDeleted)
	httpx.WriteEmpty(w, http.StatusNoContent)
	return nil
}

// setBadge sets a registration's badge to the phone's own count, opting it
// in (issue "What the phone shows"); another host's registration is
// not_found, as an unknown one is.
func setBadge(s *service.Service, w http.ResponseWriter, r *http.Request) error {
	id, err := contract.DecodeRegistrationID(r.PathValue("registrationId"))
	if err != nil {
		return err
	}
	body, err := httpx.ReadBody(w, r)
	if err != nil {
		return err
	}
	req, err := contract.DecodeBadgeRequest(body)
	if err != nil {
		return err
	}
	if err := s.Store.SetBadge(r.Context(), httpx.Host(r.Context()), id, req.Count, s.Clock.Now().UnixMilli()); err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, contract.BadgeResponse(req))
	return nil
}
