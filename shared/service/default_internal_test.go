package service

import (
	"errors"
	"net/http"
	"testing"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/seal/sealtest"
)

// A deployed function without ORCA_PUSH_PAYLOAD_KEYS refuses to start, and
// keeps refusing: no Service is built, no handler, and the error is the
// configuration's.
func TestDeployedRefusesWithoutPayloadKeys(t *testing.T) {
	t.Setenv("ORCA_PUSH_PUBLIC_URL", "https://push.onorca.dev")
	t.Setenv("ORCA_PUSH_PAYLOAD_KEYS", "")
	var p process
	built := false
	build := func(*Service) http.Handler { built = true; return http.NotFoundHandler() }
	for range 2 {
		if _, err := p.handler("send", build); !errors.Is(err, config.ErrNoPayloadKeys) {
			t.Fatalf("handler = %v, want ErrNoPayloadKeys", err)
		}
	}
	if built || p.svc != nil {
		t.Fatal("a Service was built without payload keys")
	}
}

// A deployed function with its payload keys but without ORCA_PUSH_DIGEST_KEY
// refuses to start too: it would keep an unkeyed hash of the text instead.
func TestDeployedRefusesWithoutDigestKey(t *testing.T) {
	t.Setenv("ORCA_PUSH_PUBLIC_URL", "https://push.onorca.dev")
	t.Setenv("ORCA_PUSH_PAYLOAD_KEYS", sealtest.Keys)
	t.Setenv("ORCA_PUSH_DIGEST_KEY", "")
	var p process
	built := false
	build := func(*Service) http.Handler { built = true; return http.NotFoundHandler() }
	if _, err := p.handler("send", build); !errors.Is(err, config.ErrNoDigestKey) || errors.Is(err, config.ErrNoPayloadKeys) {
		t.Fatalf("handler = %v, want ErrNoDigestKey alone", err)
	}
	if built || p.svc != nil {
		t.Fatal("a Service was built without a digest key")
	}
}
