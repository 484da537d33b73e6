package config_test

import (
	"strings"
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
		c.APNSConfigured() {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestRefusals(t *testing.T) {
	key := "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----"
	tests := []struct {
		name string
		env  map[string]string
		want string // part of the error
	}{
		{"no public url", map[string]string{}, "ORCA_PUSH_PUBLIC_URL"},
		{"path", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev/"}, "canonical origin"},
		{"http elsewhere", map[string]string{"ORCA_PUSH_PUBLIC_URL": "http://push.onorca.dev"}, "canonical origin"},
		{"upper case", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://Push.onorca.dev"}, "canonical origin"},
		{"partial apns", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_APNS_KEY": key}, "configured together"},
		{"bad key id", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_APNS_KEY": key,
			"ORCA_PUSH_APNS_KEY_ID": "short", "ORCA_PUSH_APPLE_TEAM_ID": "ABCDE12345"}, "KEY_ID"},
		{"coalesce range", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_COALESCE_MS": "60001"}, "COALESCE"},
		{"hops range", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_TRUSTED_PROXY_HOPS": "9"}, "HOPS"},
		{"project", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_FCM_PROJECT_ID": "Bad_Project"}, "FCM_PROJECT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error naming %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatal("the error holds the key")
			}
		})
	}
	for _, ok := range []string{"http://localhost:8080", "http://127.0.0.1:9", "http://[::1]:8080", "https://push.onorca.dev"} {
		if _, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": ok}); err != nil {
			t.Errorf("Load(%s) = %v", ok, err)
		}
	}
}
