package config_test

import (
	"testing"
	"time"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
)

func load(env map[string]string) (config.Config, error) {
	return config.Load(func(k string) string { return env[k] })
}

func TestDefaults(t *testing.T) {
	c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_COALESCE_MS": " "})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.DataDir != "./data/push" || c.PoolMax != 10 || c.APNSTopic != contract.DefaultAPNSTopic ||
		c.FCMProjectID != contract.DefaultFCMProjectID || c.Coalesce != 3*time.Second || c.TrustedProxyHops != 0 ||
		c.APNSKey != "" || c.FCMMessage != config.FCMNotification {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestRefusals(t *testing.T) {
	key := "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----"
	tests := []struct {
		name string
		env  map[string]string
		want string // the variable at fault
	}{
		{"no public url", map[string]string{}, "ORCA_PUSH_PUBLIC_URL"},
		{"path", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev/"}, "ORCA_PUSH_PUBLIC_URL"},
		{"http elsewhere", map[string]string{"ORCA_PUSH_PUBLIC_URL": "http://push.onorca.dev"}, "ORCA_PUSH_PUBLIC_URL"},
		{"upper case", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://Push.onorca.dev"}, "ORCA_PUSH_PUBLIC_URL"},
		{"partial apns", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_APNS_KEY": key}, "ORCA_PUSH_APNS_KEY"},
		{"bad key id", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_APNS_KEY": key,
			"ORCA_PUSH_APNS_KEY_ID": "short", "ORCA_PUSH_APPLE_TEAM_ID": "ABCDE12345"}, "ORCA_PUSH_APNS_KEY_ID"},
		{"coalesce range", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_COALESCE_MS": "60001"}, "ORCA_PUSH_COALESCE_MS"},
		{"hops range", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_TRUSTED_PROXY_HOPS": "9"}, "ORCA_PUSH_TRUSTED_PROXY_HOPS"},
		{"project", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_FCM_PROJECT_ID": "Bad_Project"}, "ORCA_PUSH_FCM_PROJECT_ID"},
		{"fcm message unknown", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_FCM_MESSAGE": "both"}, "ORCA_PUSH_FCM_MESSAGE"},
		{"fcm message upper case", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_FCM_MESSAGE": "DATA"}, "ORCA_PUSH_FCM_MESSAGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env)
			if !names(err, tt.want) {
				t.Fatalf("Load = %v, want a VarError for %s", err, tt.want)
			}
		})
	}
	for _, ok := range []string{"http://localhost:8080", "http://127.0.0.1:9", "http://[::1]:8080", "https://push.onorca.dev"} {
		if _, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": ok}); err != nil {
			t.Errorf("Load(%s) = %v", ok, err)
		}
	}
}

// names reports whether err holds a VarError for the variable v.
func names(err error, v string) bool {
	var stack []error
	if err != nil {
		stack = append(stack, err)
	}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if ve, ok := e.(*config.VarError); ok && ve.Var == v {
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			stack = append(stack, u.Unwrap()...)
		case interface{ Unwrap() error }:
			stack = append(stack, u.Unwrap())
		}
	}
	return false
}

// TestFCMMessage pins the values of ORCA_PUSH_FCM_MESSAGE: notification by
// default (also when blank), data when asked; anything else refuses to start.
func TestFCMMessage(t *testing.T) {
	tests := []struct {
		value string
		want  config.FCMMessage
	}{{"", config.FCMNotification}, {" ", config.FCMNotification}, {"notification", config.FCMNotification}, {" data ", config.FCMData}}
	for _, tt := range tests {
		c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_FCM_MESSAGE": tt.value})
		if err != nil || c.FCMMessage != tt.want {
			t.Errorf("ORCA_PUSH_FCM_MESSAGE=%q: FCMMessage = %q, %v; want %q", tt.value, c.FCMMessage, err, tt.want)
		}
	}
	if config.FCMNotification != "notification" || config.FCMData != "data" {
		t.Errorf("wire values = %q, %q", config.FCMNotification, config.FCMData)
	}
}
