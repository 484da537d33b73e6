package main

import (
	"encoding/json"
	"net/http"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
)

// control serves the /_emulator routes of design.md: unauthenticated, never
// rate limited, and only in the emulator.
type control struct {
	clock *clock.Manual // nil with the real clock
}

func (c *control) install(mux *http.ServeMux) {
	mux.HandleFunc("GET /_emulator/clock", c.getClock)
	mux.HandleFunc("POST /_emulator/clock", c.advanceClock)
}

type clockReading struct {
	Now int64 `json:"now"`
}

func (c *control) getClock(w http.ResponseWriter, r *http.Request) {
	if c.clock == nil {
		http.NotFound(w, r)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, clockReading{Now: c.clock.Now().UnixMilli()})
}

// advanceClock takes {"advanceMs": n} with n ≥ 0 and only moves the clock.
func (c *control) advanceClock(w http.ResponseWriter, r *http.Request) {
	if c.clock == nil {
		http.NotFound(w, r)
		return
	}
	var req struct {
		AdvanceMs *int64 `json:"advanceMs"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, contract.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.AdvanceMs == nil || *req.AdvanceMs < 0 {
		httpx.WriteError(w, contract.ErrInvalidRequest)
		return
	}
	now := c.clock.Advance(time.Duration(*req.AdvanceMs) * time.Millisecond)
	httpx.WriteJSON(w, http.StatusOK, clockReading{Now: now.UnixMilli()})
}
