package routes_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
	"onorca.dev/push/shared/store/storetest"
)

// BenchmarkHandshake measures one sign-in (challenge, host answer, session)
// through the HTTP handlers, on each database.
func BenchmarkHandshake(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			g := mustGateway(b, d)
			kp := mustKeypair(b)
			ip := http.Header{}
			i := 0
			for b.Loop() {
				// A fresh client IP per sign-in keeps the per-IP bucket out of
				// the measurement.
				i++
				ip.Set("X-Forwarded-For", fmt.Sprintf("198.18.%d.%d", i/256%256, i%256))
				status, body := g.do(b, "POST", "/v1/host/challenge", `{"v":1,"hostPublicKeyB64":"`+kp.PublicKeyB64()+`"}`, ip)
				if status != 200 {
					b.Fatalf("challenge = %d %s", status, body)
				}
				c := decodeChallenge(b, body)
				proof, err := hostclient.Answer(kp, g.srv.URL, c, g.clock.Now())
				if err != nil {
					b.Fatal(err)
				}
				if status, body := g.do(b, "POST", "/v1/host/session", `{"v":1,"challengeId":"`+c.ChallengeID+`","proofB64":"`+proof+`"}`, ip); status != 200 {
					b.Fatalf("session = %d %s", status, body)
				}
				if i%contract.UnauthenticatedPerMinute == 0 {
					g.clock.Advance(contract.BucketWindow)
				}
			}
		})
	}
}

// BenchmarkRegister measures POST /v1/devices re-registering one device of a
// signed-in host, on each database.
func BenchmarkRegister(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d.Name, func(b *testing.B) {
			g := mustGateway(b, d)
			h := g.mustHost(b)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if _, err := h.Register(ctx, android(fmt.Sprintf("d%d", i%contract.MaxDevicesPerHost))); err != nil {
					b.Fatal(err)
				}
				if i%contract.HostPerMinute == 0 {
					g.clock.Advance(contract.BucketWindow)
				}
			}
		})
	}
}
