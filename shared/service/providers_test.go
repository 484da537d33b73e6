package service_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
	"onorca.dev/push/shared/service"
)

// TestFCMMessageForm: the FCM client the deployed functions and the
// emulator build from the configuration sends an unsealed Android alert
// data-only under ORCA_PUSH_FCM_MESSAGE=data, and with its notification
// block under the default, as the stand-in receives it (issue 26 §5: a
// deployed client that ignored the setting survived every test).
func TestFCMMessageForm(t *testing.T) {
	tests := []struct {
		name, form string
		dataOnly   bool
	}{
		{"default", "", false},
		{"notification", "notification", false},
		{"data", "data", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(time.UnixMilli(pushtest.Now))
			cfg, err := config.Load(func(k string) string {
				switch k {
				case "ORCA_PUSH_PUBLIC_URL":
					return contract.DefaultGatewayURL
				case "ORCA_PUSH_FCM_MESSAGE":
					return tt.form
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			key, err := standin.GenerateAPNSKey()
			if err != nil {
				t.Fatal(err)
			}
			st, err := standin.Start(standin.Options{Clock: clk, APNSKey: key, InboxLimit: 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			opts := service.FCMOptions(cfg, clk)
			opts.Endpoint = st.FCMEndpoint()
			c, err := fcm.New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			m := pushtest.Cases()[0].Message() // single_alert, unsealed
			if m.Sealed || m.Kind != contract.KindAlert {
				t.Fatalf("case 0 is not an unsealed alert: %+v", m)
			}
			target := push.Target{Platform: contract.PlatformAndroid, Token: "fcm-token_0123456789:abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJ"}
			if o := c.Send(context.Background(), target, m); o.Kind != push.Sent {
				t.Fatalf("Send = %+v, want sent", o)
			}
			in := st.Inbox()
			if len(in) != 1 {
				t.Fatalf("inbox holds %d deliveries, want 1", len(in))
			}
			var req struct {
				Message struct {
					Notification json.RawMessage `json:"notification"`
					Android      struct {
						Notification json.RawMessage `json:"notification"`
					} `json:"android"`
				} `json:"message"`
			}
			if err := json.Unmarshal(in[0].Body, &req); err != nil {
				t.Fatal(err)
			}
			got := req.Message.Notification == nil && req.Message.Android.Notification == nil
			if got != tt.dataOnly {
				t.Errorf("ORCA_PUSH_FCM_MESSAGE=%q: data-only = %v, want %v: %s", tt.form, got, tt.dataOnly, in[0].Body)
			}
		})
	}
}
