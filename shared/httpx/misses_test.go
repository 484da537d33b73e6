package httpx_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/httpx"
	"onorca.dev/push/shared/obs"
)

// The mux's own answers, unknown route and wrong method, come out in the
// contract's JSON error shape; a handler's own 404 JSON passes unchanged.
func TestMissesAnswerJSON(t *testing.T) {
	e := mustEdge(t, new(bytes.Buffer))
	mux := http.NewServeMux()
	mux.Handle("POST /v1/thing", e.Handle(func(w http.ResponseWriter, r *http.Request) error { return nil }))
	mux.Handle("DELETE /v1/thing/{id}", e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return contract.ErrNotFound
	}))
	h := e.Wrap(mux)
	tests := []struct {
		method, path string
		status       int
		body, allow  string
	}{
		{"GET", "/nowhere", 404, `{"error":"not_found"}`, ""},
		{"GET", "/v1/thing", 405, `{"error":"method_not_allowed"}`, "POST"},
		{"DELETE", "/v1/thing/x", 404, `{"error":"not_found"}`, ""},
		{"GET", "/health", 200, `{"ok":true,"pushProtocol":1,"deliveryProtocol":2}`, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		got := []string{rec.Header().Get("Content-Type"), strings.TrimSpace(rec.Body.String()), rec.Header().Get("Allow")}
		want := []string{"application/json", tt.body, tt.allow}
		if rec.Code != tt.status || !cmp.Equal(got, want) {
			t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, rec.Code, got, tt.status, want)
		}
	}
}

// A 400 tells the Rejected hook the route pattern and the decoder's reason:
// the field and the rule, never the value. Other errors do not call it.
func TestRejectedNamesRouteAndReason(t *testing.T) {
	type rejection struct{ route, reason string }
	var got []rejection
	l := slog.New(slog.DiscardHandler)
	e, err := httpx.NewEdge(httpx.Options{
		Clock: clock.NewManual(time.UnixMilli(0)), Counters: obs.NewCounters(l), Log: l,
		Ready:    func(context.Context) error { return nil },
		Lookup:   func(context.Context, string) (string, error) { return "", contract.ErrInvalidToken },
		Rejected: func(route, reason string) { got = append(got, rejection{route, reason}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/devices", e.Handle(func(w http.ResponseWriter, r *http.Request) error {
		body, err := httpx.ReadBody(w, r)
		if err != nil {
			return err
		}
		_, err = contract.DecodeRegisterRequest(body)
		return err
	}))
	mux.Handle("POST /bare", e.Handle(func(w http.ResponseWriter, r *http.Request) error { return contract.ErrInvalidRequest }))
	mux.Handle("POST /gone", e.Handle(func(w http.ResponseWriter, r *http.Request) error { return contract.ErrNotFound }))
	h := e.Wrap(mux)
	const secret = "SECRET0TOKEN"
	for _, req := range []struct{ path, body string }{
		{"/v1/devices", `{"v":1,"deviceId":"d","platform":"ios","token":"` + secret + `","apnsEnvironment":"sandbox"}`},
		{"/bare", ""},
		{"/gone", ""},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", req.path, strings.NewReader(req.body)))
	}
	want := []rejection{{"POST /v1/devices", "token is not an APNs token"}, {"POST /bare", ""}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(rejection{})); diff != "" {
		t.Fatalf("rejections (-want +got):\n%s", diff)
	}
}
