package apns_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sideshow/apns2"
	apnstoken "github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var envs = [2]contract.APNSEnvironment{contract.APNSSandbox, contract.APNSProduction}

// BenchmarkAPNs sends the summary-of-3 case at 1, 16 and 64 concurrent
// sends, through this package ("ours") and through a bare apns2 client
// ("bare": one token, one http2 transport, the payload prebuilt), each
// against its own stand-in, alternating environments. It reports the TLS
// handshakes each stand-in saw per environment over the whole run: one
// means the connection was reused throughout.
func BenchmarkAPNs(b *testing.B) {
	clk := newClock()
	key := mustKey(b)
	m := pushtest.Cases()[2].Message()
	oursSt, bareSt := mustStandin(b, clk, key), mustStandin(b, clk, key)
	ours := mustClient(b, clk, oursSt, key)
	bare := bareClients(b, bareSt, key)
	ctx := context.Background()
	body := apns.Body(m)
	sendOurs := func(b *testing.B, i int) {
		t := push.Target{Platform: contract.PlatformIOS, Token: token, APNSEnvironment: envs[i%2]}
		if o := ours.Send(ctx, t, m); o.Kind != push.Sent {
			b.Errorf("Send = %+v", o)
		}
	}
	sendBare := func(b *testing.B, i int) {
		n := &apns2.Notification{DeviceToken: token, Topic: contract.DefaultAPNSTopic, Payload: body,
			Expiration: time.UnixMilli(m.Deadline), Priority: apns2.PriorityHigh, PushType: apns2.PushTypeAlert,
			CollapseID: m.CollapseID}
		if res, err := bare[i%2].PushWithContext(ctx, n); err != nil || !res.Sent() {
			b.Errorf("Push = %+v, %v", res, err)
		}
	}
	// Warm both up (connections, heap) so neither pays for going first.
	for i := range 500 {
		sendOurs(b, i)
		sendBare(b, i)
	}
	for _, p := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("ours/p=%d", p), func(b *testing.B) {
			pushtest.RunConcurrent(b, p, func(i int) { sendOurs(b, i) })
			reportHandshakes(b, oursSt)
		})
		b.Run(fmt.Sprintf("bare/p=%d", p), func(b *testing.B) {
			pushtest.RunConcurrent(b, p, func(i int) { sendBare(b, i) })
			reportHandshakes(b, bareSt)
		})
	}
}

// bareClients returns apns2 clients for st's two environments sharing one
// token and one transport, as go-dependencies §2e sets them up.
func bareClients(b *testing.B, st *standin.Server, key []byte) [2]*apns2.Client {
	authKey, err := apnstoken.AuthKeyFromBytes(key)
	if err != nil {
		b.Fatal(err)
	}
	tok := &apnstoken.Token{AuthKey: authKey, KeyID: keyID, TeamID: teamID}
	if _, err := tok.Generate(); err != nil {
		b.Fatal(err)
	}
	// apns2.NewTokenClient's own client: x/net's http2.Transport and a
	// client timeout, with the stand-in's roots.
	//lint:ignore SA1019 the baseline is apns2's own transport
	t := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: st.RootCAs()}, ReadIdleTimeout: apns2.ReadIdleTimeout}
	hc := &http.Client{Transport: t, Timeout: apns2.HTTPClientTimeout}
	var cs [2]*apns2.Client
	for i, env := range envs {
		cs[i] = apns2.NewTokenClient(tok)
		cs[i].Host, cs[i].HTTPClient = st.APNSURL(env), hc
	}
	return cs
}

// reportHandshakes reports st's TLS handshakes per environment so far.
func reportHandshakes(b *testing.B, st *standin.Server) {
	b.ReportMetric(float64(st.TLSHandshakes(contract.APNSSandbox)), "tls-sandbox")
	b.ReportMetric(float64(st.TLSHandshakes(contract.APNSProduction)), "tls-production")
}
