package fcm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/messaging"
	"google.golang.org/api/option"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

// BenchmarkFCM sends the summary-of-3 case at 1, 16 and 64 concurrent
// sends, through this package ("ours") and through a bare messaging client
// ("bare": the SDK's own transport, the same message prebuilt), each
// against its own stand-in.
func BenchmarkFCM(b *testing.B) {
	clk := newClockB()
	m := pushtest.Cases()[2].Message()
	oursSt, bareSt := mustStandin(b, clk), mustStandin(b, clk)
	ours := mustClient(b, clk, oursSt)
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: contract.DefaultFCMProjectID},
		option.WithEndpoint(bareSt.FCMEndpoint()), option.WithoutAuthentication())
	if err != nil {
		b.Fatal(err)
	}
	bare, err := app.Messaging(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var msg messaging.Message
	if err := json.Unmarshal(fcm.MessageJSON(m, token, clk.Now().UnixMilli()), &msg); err != nil {
		b.Fatal(err)
	}
	sendOurs := func(b *testing.B) {
		if o := ours.Send(ctx, android, m); o.Kind != push.Sent {
			b.Errorf("Send = %+v", o)
		}
	}
	sendBare := func(b *testing.B) {
		if _, err := bare.Send(ctx, &msg); err != nil {
			b.Errorf("Send = %v", err)
		}
	}
	// Warm both up (connections, heap) so neither pays for going first.
	for range 500 {
		sendOurs(b)
		sendBare(b)
	}
	for _, p := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("ours/p=%d", p), func(b *testing.B) {
			pushtest.RunConcurrent(b, p, func(int) { sendOurs(b) })
		})
		b.Run(fmt.Sprintf("bare/p=%d", p), func(b *testing.B) {
			pushtest.RunConcurrent(b, p, func(int) { sendBare(b) })
		})
	}
}
