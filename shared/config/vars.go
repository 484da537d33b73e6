package config

import (
	"strconv"

	"onorca.dev/push/shared/contract"
)

// Var describes one environment variable the gateway reads, for help texts.
type Var struct {
	// Name is the variable.
	Name string
	// Default is what an unset variable means.
	Default string
	// Meaning says what it sets.
	Meaning string
}

// Vars returns every variable [Load] reads, in the README's order. A test
// checks that the list and Load agree.
func Vars() []Var {
	return []Var{
		{"PORT", strconv.Itoa(defaultPort), "port to listen on"},
		{"ORCA_PUSH_PUBLIC_URL", "required", "canonical origin, the transcript's gatewayOrigin; https, or http on localhost"},
		{"ORCA_PUSH_DATABASE_URL", "unset: SQLite", "PostgreSQL URL"},
		{"ORCA_PUSH_CLOUDSQL_INSTANCE", "unset", "project:region:instance, dialled through the Cloud SQL connector"},
		{"ORCA_PUSH_DATA_DIR", defaultDataDir, "SQLite directory"},
		{"ORCA_PUSH_DATABASE_POOL_MAX", "10", "PostgreSQL pool size, 1..100"},
		{"ORCA_PUSH_APNS_KEY", "unset", "APNs .p8 key (PEM); with the key id and team id, or none of the three"},
		{"ORCA_PUSH_APNS_KEY_ID", "unset", "APNs key id"},
		{"ORCA_PUSH_APPLE_TEAM_ID", "unset", "Apple team id"},
		{"ORCA_PUSH_APNS_TOPIC", contract.DefaultAPNSTopic, "APNs topic"},
		{"ORCA_PUSH_FCM_PROJECT_ID", contract.DefaultFCMProjectID, "FCM project"},
		{"ORCA_PUSH_COALESCE_MS", ms(contract.DefaultCoalesce.Milliseconds()),
			"coalescing window in ms, 0.." + ms(contract.MaxCoalesce.Milliseconds())},
		{"ORCA_PUSH_FCM_MESSAGE", string(FCMNotification),
			"FCM message form: notification (today's) or data (data-only, for today's Orca phones)"},
		{"ORCA_PUSH_DELIVER_INLINE", "0", "1: deliver a batch due at once within its send request, a task only for what must wait"},
		{"ORCA_PUSH_TRUSTED_PROXY_HOPS", "0", "proxies that append to x-forwarded-for after the client"},
		{"ORCA_PUSH_TASKS_QUEUE", "unset", "Cloud Tasks queue path, or several separated by commas"},
		{"ORCA_PUSH_DELIVER_URL", "unset", "the deliver function's URL"},
		{"ORCA_PUSH_TASKS_SERVICE_ACCOUNT", "unset", "identity Cloud Tasks uses to call deliver"},
		{"ORCA_PUSH_TASKS_AUDIENCE", "ORCA_PUSH_DELIVER_URL", "OIDC audience of those calls"},
		{"ORCA_PUSH_MANUAL_CLOCK", "unset", "1: the emulator's manual clock"},
		{"ORCA_PUSH_PAYLOAD_KEYS", "unset: required when deployed; the emulator's own key in ORCA_PUSH_DATA_DIR",
			"key ring sealing stored notification text: id:base64key entries separated by commas; every key opens"},
		{"ORCA_PUSH_PAYLOAD_SEAL_KEY", "unset: the ring's first key", "id of the ring's key that seals; the others only open"},
		{"ORCA_PUSH_DIGEST_KEY", "unset: required when deployed; the emulator's own key in ORCA_PUSH_DATA_DIR",
			"base64 32-byte key of the content digest events keep for idempotency"},
	}
}

func ms(n int64) string { return strconv.FormatInt(n, 10) }
