package contract

import "time"

// Request limits (contract "Request limits and unauthenticated abuse";
// reference-behaviour §2.5–2.7).
const (
	// MaxBodyBytes caps every POST body, streamed: 16 KiB is allowed, one
	// byte more is 413 request_too_large.
	MaxBodyBytes = 16 * 1024
	// UnauthenticatedPerMinute is the per-IP bucket shared by
	// /v1/host/challenge and /v1/host/session.
	UnauthenticatedPerMinute = 30
	// UnauthenticatedPerInstancePerMinute is the global bucket of each of
	// /v1/host/challenge and /v1/host/session on one instance, whatever the
	// client address (issue 26 §2): the per-IP bucket alone let a flood
	// from ever-new addresses (a forged X-Forwarded-For, or enough real
	// ones) write challenges faster than the sweep deletes them. 600 a
	// minute per instance is 10 sign-ins a second, far above what the
	// hosts of one deployment need (a session lasts SessionTTL), and the
	// rows it lets live at once (600 + 600 × (ChallengeTTL +
	// ChallengeGrace)/minute = 1000 per instance) are one chunk of the
	// sweep, which prunes every expired challenge each minute.
	UnauthenticatedPerInstancePerMinute = 600
	// InvalidBearerPerMinute is the per-IP budget spent by missing,
	// malformed, unknown or expired bearers.
	InvalidBearerPerMinute = 30
	// HostPerMinute is the per-host bucket of authenticated requests.
	HostPerMinute = 600
	// BucketWindow is the time in which an empty bucket refills completely.
	BucketWindow = time.Minute
	// MaxTrackedBucketKeys bounds the keys one bucket set remembers.
	MaxTrackedBucketKeys = 10_000
	// AuthLookupsRunning is how many session lookups run at once.
	AuthLookupsRunning = 4
	// AuthLookupsWaiting is how many session lookups may wait for a slot;
	// beyond that the request gets 503 busy.
	AuthLookupsWaiting = 32
	// BusyRetryAfterSeconds is the Retry-After sent with 503 busy.
	BusyRetryAfterSeconds = 1
	// UnavailableRetryAfterSeconds is the Retry-After sent with 503
	// dependency_unavailable: a database that refuses connections is
	// restarting or failing over, which takes seconds, not one.
	UnavailableRetryAfterSeconds = 5
	// MaxTrustedProxyHops bounds ORCA_PUSH_TRUSTED_PROXY_HOPS (§9).
	MaxTrustedProxyHops = 8
)

// Host authentication (contract "Host authentication"; reference §3).
const (
	// ChallengeTTL is the whole window the gateway honours for a proof.
	ChallengeTTL = 10 * time.Second
	// ChallengeGrace is how long an expired challenge row is kept, so a late
	// proof reads invalid_proof rather than invalid_challenge.
	ChallengeGrace = 30 * time.Second
	// HostClockSkew is the host's (never the gateway's) tolerance when it
	// validates the timestamps the gateway chose.
	HostClockSkew = 30 * time.Second
	// SessionTTL is a session token's life.
	SessionTTL = 24 * time.Hour
	// HostRetention is how long a push_hosts row survives without contact
	// when no device names the host.
	HostRetention = time.Hour
	// KeyBytes is the size of an X25519 key and of a proof.
	KeyBytes = 32
	// NonceBytes is the size of the challenge nonce.
	NonceBytes = 24
	// SecretBytes is the size of the challenge secret.
	SecretBytes = 32
	// FingerprintChars is the length of a host fingerprint.
	FingerprintChars = 16
	// LoggedFingerprintChars is the most of a fingerprint a log line holds.
	LoggedFingerprintChars = 4
)

// Field limits (reference-behaviour §2.2–2.3 with the decisions table).
const (
	// MaxOpaqueID is the length limit of deviceId, challengeId,
	// registrationId and notificationEpoch, in UTF-16 code units.
	MaxOpaqueID = 128
	// MaxTokenChars is the length limit of a native push token.
	MaxTokenChars = 4096
	// MinAndroidTokenChars is the shortest FCM token accepted.
	MinAndroidTokenChars = 32
	// MaxDevicesPerHost is the registration cap: the 65th distinct deviceId
	// is 409 too_many_devices.
	MaxDevicesPerHost = 64
	// MaxListedDevices bounds GET /v1/devices.
	MaxListedDevices = 1024
	// MaxFilterSources and MaxFilterAgentStates bound the filter arrays.
	MaxFilterSources     = 3
	MaxFilterAgentStates = 2
	// MaxRegistrationIDs is the /v1/send cap, counted before duplicates are
	// removed.
	MaxRegistrationIDs = 20
	// MaxReceiptEvents bounds the events of one POST /v1/receipts (issue
	// "delivery receipts": 1..20, as a send's registrations).
	MaxReceiptEvents = 20
	// MaxNotificationID is the notificationId limit (printable ASCII).
	MaxNotificationID = 2048
	// MaxWorktreeID is the worktreeId limit, in UTF-16 code units.
	MaxWorktreeID = 2048
	// MaxBadge is the largest count PUT /v1/devices/{registrationId}/badge
	// accepts (issue "What the phone shows"; the sibling relay's).
	MaxBadge = 99999
	// MaxTitle is the title limit, in UTF-16 code units as the desktop counts.
	MaxTitle = 80
	// MaxBody is the body limit, in UTF-16 code units.
	MaxBody = 180
	// MaxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the bound of
	// every integer on the wire.
	MaxSafeInteger = 1<<53 - 1
	// MaxNotificationBytes bounds the UTF-8 JSON of the parsed notification.
	MaxNotificationBytes = 3000
	// MaxPaneKey is the paneKey limit (1..MaxPaneKey), in UTF-16 code units
	// as the desktop counts; no charset rule (decisions table, Gen D).
	MaxPaneKey = 2048
	// MaxExecutionHost is the executionHost limit, in UTF-16 code units,
	// its ExecutionHostPrefix included (decisions table, Gen D).
	MaxExecutionHost = 2048
)

// Gen D's optional notification fields (decisions table: paneKey,
// executionHost; issue "Today's Orca desktops and phones").
const (
	// SealedPaneKeyPrefix starts the paneKey of a sealed notification: the
	// rest is standard base64 of a 24-byte nonce and a NaCl secretbox the
	// phone opens with a key the gateway never has. Such an alert is never
	// summarised and is due at once.
	SealedPaneKeyPrefix = "e2e1:"
	// ExecutionHostPrefix starts every executionHost; one or more
	// characters follow, none of them '|' or JavaScript white space.
	ExecutionHostPrefix = "runtime:"
)

// Send admission and delivery (contract "Send", "Coalescing"; reference §4–6).
const (
	// AlertQuota and DismissQuota are the logical events a host may start
	// per QuotaWindow, counted separately.
	AlertQuota   = 300
	DismissQuota = 300
	// QuotaWindow is the rolling quota window; an event exactly this old no
	// longer counts.
	QuotaWindow = 15 * time.Minute
	// EventLifetime caps an event's deadline from its first acceptance.
	EventLifetime = 5 * time.Minute
	// DefaultCoalesce is the default coalescing window (ORCA_PUSH_COALESCE_MS).
	DefaultCoalesce = 3000 * time.Millisecond
	// MaxCoalesce bounds ORCA_PUSH_COALESCE_MS.
	MaxCoalesce = 60 * time.Second
	// MinSummaryMembers and MaxBatchMembers bound a summary's membership.
	MinSummaryMembers = 2
	MaxBatchMembers   = 32
	// MaxProviderPayload bounds every APNs body and FCM message.
	MaxProviderPayload = 4096
	// DispatchMargin is the least time a batch keeps between its due time
	// and its deadline: what a task's dispatch, the claim and the provider
	// request may take (decisions table, "short deadlines"). A batch is due
	// no later than its deadline minus the margin, at once when less is
	// left at admission, and no alert joins a batch if that would lower the
	// batch's deadline below its due time plus the margin.
	DispatchMargin = 500 * time.Millisecond
	// LeaseDuration is a delivery claim's lease.
	LeaseDuration = 30 * time.Second
	// MinRetryDelay is the shortest retry delay.
	MinRetryDelay = time.Second
	// MaxBackoff caps the exponential retry backoff (2, 4, 8, 16, then 30 s).
	MaxBackoff = 30 * time.Second
	// FCMRetryMin and FCMRateLimitedRetryMin are FCM's minimum delays after a
	// 5xx and after a 429.
	FCMRetryMin            = 10 * time.Second
	FCMRateLimitedRetryMin = 60 * time.Second
	// ProviderTimeout bounds one provider request.
	ProviderTimeout = 10 * time.Second
	// APNSTokenLifetime is how long one APNs JWT is reused before re-signing.
	APNSTokenLifetime = 50 * time.Minute
	// Retention is how long event identities, recipients, fences and
	// finished batches are kept.
	Retention = 24 * time.Hour
	// ReadyCacheTTL is how long a /ready probe result is reused.
	ReadyCacheTTL = 10 * time.Second
)

// Protocol versions answered by GET /health.
const (
	PushProtocol     = 1
	DeliveryProtocol = 2
)

// Defaults of the contract's PUSH_DEFAULTS.
const (
	DefaultAPNSTopic          = "com.stably.orca.mobile"
	DefaultFCMProjectID       = "onorca-cloud"
	AndroidChannel            = "orca-desktop"
	AndroidSilentChannel      = "orca-desktop-silent"
	DefaultGatewayURL         = "https://push.onorca.dev"
	ChallengeDomain           = "orca-push-host-challenge/v1"
	ProofProtocol             = "orca-push-host-proof/v1"
	ProofVersion         byte = 0x01
)
