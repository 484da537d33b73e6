package httpx

import (
	"net/http"
	"strings"

	"onorca.dev/push/shared/contract"
)

// Misses returns h with the answers http.ServeMux writes for itself, the
// plain-text 404 of an unknown route and 405 of a wrong method, rewritten in
// the contract's error shape: {"error":"not_found"} and
// {"error":"method_not_allowed"} (with the mux's Allow header). Answers that
// are already JSON pass unchanged. [Edge.Wrap] applies it to every function;
// the emulator applies it to its whole mux.
func Misses(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&missWriter{ResponseWriter: w}, r)
	})
}

// missWriter rewrites a non-JSON 404 or 405 as it is written.
type missWriter struct {
	http.ResponseWriter
	wrote     bool
	rewritten bool // the JSON body is written: the handler's own is dropped
}

func (m *missWriter) WriteHeader(code int) {
	if m.wrote {
		m.ResponseWriter.WriteHeader(code)
		return
	}
	m.wrote = true
	var e *contract.Error
	switch code {
	case http.StatusNotFound:
		e = contract.ErrNotFound
	case http.StatusMethodNotAllowed:
		e = contract.ErrMethodNotAllowed
	}
	if e == nil || strings.HasPrefix(m.Header().Get("Content-Type"), "application/json") {
		m.ResponseWriter.WriteHeader(code)
		return
	}
	m.Header().Del("X-Content-Type-Options")
	writeContractError(m.ResponseWriter, e)
	m.rewritten = true
}

func (m *missWriter) Write(b []byte) (int, error) {
	if !m.wrote {
		m.WriteHeader(http.StatusOK)
	}
	if m.rewritten {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (m *missWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
