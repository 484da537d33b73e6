package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		{"deliver inline word", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_DELIVER_INLINE": "true"}, "ORCA_PUSH_DELIVER_INLINE"},
		{"deliver inline two", map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_DELIVER_INLINE": "2"}, "ORCA_PUSH_DELIVER_INLINE"},
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

// An origin error names what was expected beside what was received, so a
// trailing slash or a 0.0.0.0 explains itself.
func TestOriginErrorNamesExpectedAndReceived(t *testing.T) {
	tests := []struct{ received, expected string }{
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080"},
		{"http://0.0.0.0:8080", "http://127.0.0.1:8080"},
		{"http://LOCALHOST:8080", "http://localhost:8080"},
		{"http://push.onorca.dev", "https://push.onorca.dev"},
		{"https://push.onorca.dev/v1?x=1", "https://push.onorca.dev"},
		{"https://me@push.onorca.dev", "https://push.onorca.dev"},
		{"http://[::]:9", "http://127.0.0.1:9"},
		{"push.onorca.dev", "https://push.onorca.dev"},
	}
	for _, tt := range tests {
		err := config.CheckOrigin(tt.received)
		var oe *config.OriginError
		if !errors.As(err, &oe) || oe.Received != tt.received || oe.Expected != tt.expected {
			t.Errorf("CheckOrigin(%q) = %v, want an OriginError expecting %q", tt.received, err, tt.expected)
		}
		if _, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": tt.received}); !errors.As(err, &oe) || !names(err, "ORCA_PUSH_PUBLIC_URL") {
			t.Errorf("Load(%q) = %v, want an OriginError for ORCA_PUSH_PUBLIC_URL", tt.received, err)
		}
	}
}

// Vars lists exactly the variables Load reads, so help texts stay true.
func TestVarsListsWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	config.Load(func(k string) string { read[k] = true; return "" })
	listed := map[string]bool{}
	for _, v := range config.Vars() {
		if listed[v.Name] || v.Default == "" || v.Meaning == "" {
			t.Errorf("Vars: %s listed twice or without a default or meaning", v.Name)
		}
		listed[v.Name] = true
	}
	if diff := cmp.Diff(read, listed); diff != "" {
		t.Fatalf("variables (-read by Load +listed by Vars):\n%s", diff)
	}
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

// TestDeliverInline pins ORCA_PUSH_DELIVER_INLINE: off unless "1".
func TestDeliverInline(t *testing.T) {
	for value, want := range map[string]bool{"": false, "0": false, "1": true, " 1 ": true} {
		c, err := load(map[string]string{"ORCA_PUSH_PUBLIC_URL": "https://push.onorca.dev", "ORCA_PUSH_DELIVER_INLINE": value})
		if err != nil || c.DeliverInline != want {
			t.Errorf("ORCA_PUSH_DELIVER_INLINE=%q: DeliverInline = %v, %v; want %v", value, c.DeliverInline, err, want)
		}
	}
}
