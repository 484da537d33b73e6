// Package config reads the gateway's environment (contract "Gateway env";
// reference-behaviour §9). It is the only place an environment variable name
// is written down. Blank values count as unset.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
)

// Config is the gateway's configuration.
type Config struct {
	// Port is PORT (default 8080).
	Port int
	// PublicURL is ORCA_PUSH_PUBLIC_URL: a canonical origin, the transcript's
	// gatewayOrigin.
	PublicURL string
	// DatabaseURL is ORCA_PUSH_DATABASE_URL; empty means SQLite under DataDir.
	DatabaseURL string
	// CloudSQLInstance is ORCA_PUSH_CLOUDSQL_INSTANCE (project:region:instance);
	// when set, Postgres is dialled through the Cloud SQL connector with IAM
	// authentication and private IP.
	CloudSQLInstance string
	// DataDir is ORCA_PUSH_DATA_DIR (default ./data/push).
	DataDir string
	// PoolMax is ORCA_PUSH_DATABASE_POOL_MAX (1..100, default 10).
	PoolMax int
	// APNSKey, APNSKeyID and AppleTeamID are the APNs credentials
	// (ORCA_PUSH_APNS_KEY, ORCA_PUSH_APNS_KEY_ID, ORCA_PUSH_APPLE_TEAM_ID):
	// all three or none.
	APNSKey     string
	APNSKeyID   string
	AppleTeamID string
	// APNSTopic is ORCA_PUSH_APNS_TOPIC.
	APNSTopic string
	// FCMProjectID is ORCA_PUSH_FCM_PROJECT_ID.
	FCMProjectID string
	// FCMMessage is ORCA_PUSH_FCM_MESSAGE, the form of FCM messages
	// (default FCMNotification).
	FCMMessage FCMMessage
	// Coalesce is ORCA_PUSH_COALESCE_MS.
	Coalesce time.Duration
	// TrustedProxyHops is ORCA_PUSH_TRUSTED_PROXY_HOPS.
	TrustedProxyHops int
	// TasksQueue is ORCA_PUSH_TASKS_QUEUE: the full Cloud Tasks queue path,
	// or several separated by commas (tasks.ParseQueues).
	TasksQueue string
	// DeliverURL is ORCA_PUSH_DELIVER_URL, the deliver function's URL.
	DeliverURL string
	// TasksServiceAccount is ORCA_PUSH_TASKS_SERVICE_ACCOUNT, the account
	// Cloud Tasks mints the OIDC token for when it calls deliver.
	TasksServiceAccount string
	// TasksAudience is ORCA_PUSH_TASKS_AUDIENCE (default DeliverURL).
	TasksAudience string
	// DeliverInline is ORCA_PUSH_DELIVER_INLINE=1: a batch due at once is
	// delivered within the send request that made it due, not through a
	// task (delivery.Inline).
	DeliverInline bool
	// ManualClock is ORCA_PUSH_MANUAL_CLOCK=1 (emulator only).
	ManualClock bool
	// PayloadKeys is ORCA_PUSH_PAYLOAD_KEYS, the key ring that seals the
	// notification text batches store ("id:key,id:key": seal.ParseRing),
	// sealing with the key ORCA_PUSH_PAYLOAD_SEAL_KEY names or, when that
	// is unset, with the first ([seal.Ring.WithSealKey]); every key opens.
	// Nil when unset: a deployed function then refuses to start
	// ([Config.CheckDeployed]); the emulator keeps a ring of its own in
	// DataDir.
	PayloadKeys *seal.Ring
	// DigestKey is ORCA_PUSH_DIGEST_KEY, the key of the content digest
	// events keep for idempotency (seal.DigestKey). Nil when unset: a
	// deployed function then refuses to start; the emulator keeps a key of
	// its own in DataDir.
	DigestKey *seal.DigestKey
}

var (
	// ErrNoPayloadKeys is [Config.CheckDeployed]'s error when
	// ORCA_PUSH_PAYLOAD_KEYS is unset.
	ErrNoPayloadKeys = &VarError{"ORCA_PUSH_PAYLOAD_KEYS", "is required in a deployed function: it seals the notification text the database keeps"}
	// ErrNoDigestKey is [Config.CheckDeployed]'s error when
	// ORCA_PUSH_DIGEST_KEY is unset.
	ErrNoDigestKey = &VarError{"ORCA_PUSH_DIGEST_KEY", "is required in a deployed function: it keys the content digest the database keeps"}
)

// CheckDeployed returns what a deployed function needs beyond what Load
// checks: the payload key ring (ErrNoPayloadKeys) and the digest key
// (ErrNoDigestKey). A deployed function refuses to start without them
// rather than keep notification text, or a plain hash of it, in the
// database.
func (c Config) CheckDeployed() error {
	var errs []error
	if c.PayloadKeys == nil {
		errs = append(errs, ErrNoPayloadKeys)
	}
	if c.DigestKey == nil {
		errs = append(errs, ErrNoDigestKey)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// FCMMessage is the form of the FCM messages the gateway sends
// (decisions table, "FCM message").
type FCMMessage string

// The values of ORCA_PUSH_FCM_MESSAGE.
const (
	// FCMNotification keeps the notification message the contract
	// describes for every send but a sealed alert, which is always
	// data-only: the default, for the phones the contract was written for.
	FCMNotification FCMMessage = "notification"
	// FCMData sends every Android message in Gen D's data-only form, which
	// today's Orca phones need (reference-behaviour §7.2).
	FCMData FCMMessage = "data"
)

// VarError is a configuration variable that is missing or wrong. Its text
// names the variable and the rule, never the value.
type VarError struct {
	// Var is the environment variable at fault.
	Var string
	// Rule says what it must be.
	Rule string
}

// Error returns the variable and the rule.
func (e *VarError) Error() string { return e.Var + " " + e.Rule }

// Defaults that the help text shows too.
const (
	defaultPort    = 8080
	defaultDataDir = "./data/push"
)

var (
	teamIDPattern    = regexp.MustCompile(`^[A-Z0-9]{10}$`)
	fcmProjectRegexp = regexp.MustCompile(`^[a-z0-9-]{4,64}$`)
)

// Load reads the configuration through getenv. Its error joins one
// [*VarError] per variable at fault; none holds a value.
func Load(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		PublicURL:           get("ORCA_PUSH_PUBLIC_URL"),
		DatabaseURL:         get("ORCA_PUSH_DATABASE_URL"),
		CloudSQLInstance:    get("ORCA_PUSH_CLOUDSQL_INSTANCE"),
		DataDir:             or(get("ORCA_PUSH_DATA_DIR"), defaultDataDir),
		APNSKey:             get("ORCA_PUSH_APNS_KEY"),
		APNSKeyID:           get("ORCA_PUSH_APNS_KEY_ID"),
		AppleTeamID:         get("ORCA_PUSH_APPLE_TEAM_ID"),
		APNSTopic:           or(get("ORCA_PUSH_APNS_TOPIC"), contract.DefaultAPNSTopic),
		FCMProjectID:        or(get("ORCA_PUSH_FCM_PROJECT_ID"), contract.DefaultFCMProjectID),
		FCMMessage:          FCMMessage(or(get("ORCA_PUSH_FCM_MESSAGE"), string(FCMNotification))),
		TasksQueue:          get("ORCA_PUSH_TASKS_QUEUE"),
		DeliverURL:          get("ORCA_PUSH_DELIVER_URL"),
		TasksServiceAccount: get("ORCA_PUSH_TASKS_SERVICE_ACCOUNT"),
		TasksAudience:       get("ORCA_PUSH_TASKS_AUDIENCE"),
		ManualClock:         get("ORCA_PUSH_MANUAL_CLOCK") == "1",
	}
	if c.TasksAudience == "" {
		c.TasksAudience = c.DeliverURL
	}
	var errs []error
	number := func(key string, def, min, max int) int {
		s := get(key)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > max {
			errs = append(errs, &VarError{key, fmt.Sprintf("must be an integer in %d..%d", min, max)})
			return def
		}
		return n
	}
	c.Port = number("PORT", defaultPort, 1, 65535)
	c.PoolMax = number("ORCA_PUSH_DATABASE_POOL_MAX", 10, 1, 100)
	c.Coalesce = time.Duration(number("ORCA_PUSH_COALESCE_MS",
		int(contract.DefaultCoalesce.Milliseconds()), 0, int(contract.MaxCoalesce.Milliseconds()))) * time.Millisecond
	c.TrustedProxyHops = number("ORCA_PUSH_TRUSTED_PROXY_HOPS", 0, 0, contract.MaxTrustedProxyHops)

	if c.PublicURL == "" {
		errs = append(errs, &VarError{"ORCA_PUSH_PUBLIC_URL", "is required"})
	} else if err := CheckOrigin(c.PublicURL); err != nil {
		errs = append(errs, err)
	}
	apns := []string{c.APNSKey, c.APNSKeyID, c.AppleTeamID}
	set := 0
	for _, v := range apns {
		if v != "" {
			set++
		}
	}
	switch {
	case set != 0 && set != len(apns):
		errs = append(errs, &VarError{"ORCA_PUSH_APNS_KEY", "and ORCA_PUSH_APNS_KEY_ID and ORCA_PUSH_APPLE_TEAM_ID must be configured together"})
	case set == len(apns):
		if !strings.Contains(c.APNSKey, "-----BEGIN") {
			errs = append(errs, &VarError{"ORCA_PUSH_APNS_KEY", "must be PEM text"})
		}
		if !teamIDPattern.MatchString(c.APNSKeyID) {
			errs = append(errs, &VarError{"ORCA_PUSH_APNS_KEY_ID", "must be 10 upper-case letters or digits"})
		}
		if !teamIDPattern.MatchString(c.AppleTeamID) {
			errs = append(errs, &VarError{"ORCA_PUSH_APPLE_TEAM_ID", "must be 10 upper-case letters or digits"})
		}
	}
	if l := len(c.APNSTopic); l > 255 {
		errs = append(errs, &VarError{"ORCA_PUSH_APNS_TOPIC", "must be 1..255 characters"})
	}
	if !fcmProjectRegexp.MatchString(c.FCMProjectID) {
		errs = append(errs, &VarError{"ORCA_PUSH_FCM_PROJECT_ID", "must be 4..64 lower-case letters, digits or dashes"})
	}
	if c.FCMMessage != FCMNotification && c.FCMMessage != FCMData {
		errs = append(errs, &VarError{"ORCA_PUSH_FCM_MESSAGE", "must be notification or data"})
	}
	switch get("ORCA_PUSH_DELIVER_INLINE") {
	case "", "0":
	case "1":
		c.DeliverInline = true
	default:
		errs = append(errs, &VarError{"ORCA_PUSH_DELIVER_INLINE", "must be 0 or 1"})
	}
	var err error
	if c.PayloadKeys, err = payloadKeys(get("ORCA_PUSH_PAYLOAD_KEYS"), get("ORCA_PUSH_PAYLOAD_SEAL_KEY")); err != nil {
		errs = append(errs, err)
	}
	if s := get("ORCA_PUSH_DIGEST_KEY"); s != "" {
		if c.DigestKey, err = seal.ParseDigestKey(s); err != nil {
			errs = append(errs, &VarError{"ORCA_PUSH_DIGEST_KEY", "must be 32 bytes in standard base64"})
		}
	}
	if c.CloudSQLInstance != "" && c.DatabaseURL == "" {
		errs = append(errs, &VarError{"ORCA_PUSH_CLOUDSQL_INSTANCE", "needs ORCA_PUSH_DATABASE_URL (user and database name)"})
	}
	if (c.TasksQueue == "") != (c.DeliverURL == "") {
		errs = append(errs, &VarError{"ORCA_PUSH_TASKS_QUEUE", "and ORCA_PUSH_DELIVER_URL must be configured together"})
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// payloadKeys is the ring keys writes (nil when it is empty), sealing with
// the key of id sealID when that is set. Its error is a [*VarError] that
// holds no key.
func payloadKeys(keys, sealID string) (*seal.Ring, error) {
	if keys == "" {
		if sealID != "" {
			return nil, &VarError{"ORCA_PUSH_PAYLOAD_SEAL_KEY", "needs ORCA_PUSH_PAYLOAD_KEYS, the ring that holds its key"}
		}
		return nil, nil
	}
	ring, err := seal.ParseRing(keys)
	if err != nil {
		return nil, &VarError{"ORCA_PUSH_PAYLOAD_KEYS", "must be id:key entries separated by commas, " +
			"ids unique and each key 32 bytes in standard base64: " + err.Error()}
	}
	if sealID == "" {
		return ring, nil
	}
	if ring, err = ring.WithSealKey(sealID); err != nil {
		return nil, &VarError{"ORCA_PUSH_PAYLOAD_SEAL_KEY", "must be the id of a key of ORCA_PUSH_PAYLOAD_KEYS"}
	}
	return ring, nil
}

// OriginError is an ORCA_PUSH_PUBLIC_URL that is not a canonical origin.
// Unlike the other configuration errors it holds the value: an origin is
// public, and naming what was received beside what was expected is what
// explains a trailing slash or a localhost vs 127.0.0.1 mix-up. It unwraps to
// the variable's [*VarError].
type OriginError struct {
	// Received is the value as configured.
	Received string
	// Expected is the canonical origin closest to it, or an example when
	// none can be derived.
	Expected string
}

// Error names the variable, what was expected and what was received.
func (e *OriginError) Error() string {
	return fmt.Sprintf("ORCA_PUSH_PUBLIC_URL must be a canonical origin: expected %q, received %q", e.Expected, e.Received)
}

// Unwrap returns the [*VarError] of ORCA_PUSH_PUBLIC_URL.
func (e *OriginError) Unwrap() error {
	return &VarError{"ORCA_PUSH_PUBLIC_URL", "must be a canonical origin such as " + exampleOrigin}
}

// exampleOrigin is the production origin, shown when no closer one can be
// derived from a bad value.
const exampleOrigin = contract.DefaultGatewayURL

// CheckOrigin returns an [*OriginError] unless s is a canonical origin with no
// path: https, or http on localhost, 127.0.0.1 or ::1 (reference-behaviour
// §9).
func CheckOrigin(s string) error {
	if want := canonicalOrigin(s); want != s {
		return &OriginError{Received: s, Expected: want}
	}
	return nil
}

// canonicalOrigin returns the canonical origin s most likely means: scheme
// and host in lower case, no user, path, query or fragment, an unspecified
// address (0.0.0.0, ::) read as 127.0.0.1, and plain http off the loopback
// host read as https. It returns exampleOrigin when s names no host.
func canonicalOrigin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return exampleOrigin
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	switch host {
	case "0.0.0.0", "::", "":
		host = "127.0.0.1"
	}
	loopback := host == "localhost" || host == "127.0.0.1" || host == "::1"
	if scheme != "http" || !loopback {
		scheme = "https"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	return scheme + "://" + host
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
