package contract

import "slices"

// Platform is a phone platform.
type Platform string

// The platforms of POST /v1/devices.
const (
	PlatformIOS     Platform = "ios"
	PlatformAndroid Platform = "android"
)

// APNSEnvironment selects the APNs host of an iOS registration.
type APNSEnvironment string

// The APNs environments.
const (
	APNSSandbox    APNSEnvironment = "sandbox"
	APNSProduction APNSEnvironment = "production"
)

// Source is the origin of a notification.
type Source string

// The notification sources.
const (
	SourceAgentTaskComplete Source = "agent-task-complete"
	SourceTerminalBell      Source = "terminal-bell"
	SourcePlugin            Source = "plugin"
)

// AgentState is a notification's agent state; the empty value is JSON null.
type AgentState string

// The agent states.
const (
	AgentNeedsInput AgentState = "needs-input"
	AgentFinished   AgentState = "finished"
)

var (
	sources     = []string{string(SourceAgentTaskComplete), string(SourceTerminalBell), string(SourcePlugin)}
	agentStates = []string{string(AgentNeedsInput), string(AgentFinished)}
)

// Filter is a registration's delivery filter. The gateway stores it for the
// host and never filters by it (reference-behaviour, decisions table).
type Filter struct {
	Sources     []string `json:"sources"`
	AgentStates []string `json:"agentStates"`
}

// RegisterRequest is the body of POST /v1/devices.
type RegisterRequest struct {
	DeviceID        string
	Platform        Platform
	Token           string
	APNSEnvironment APNSEnvironment // empty for Android
	Filter          *Filter         // nil when absent
}

// RegisterResponse is the 200 answer of POST /v1/devices.
type RegisterResponse struct {
	RegistrationID string `json:"registrationId"`
}

// Device is one row of GET /v1/devices.
type Device struct {
	RegistrationID string   `json:"registrationId"`
	DeviceID       string   `json:"deviceId"`
	Platform       Platform `json:"platform"`
	Dead           bool     `json:"dead"`
}

// DeviceList is the 200 answer of GET /v1/devices.
type DeviceList struct {
	Devices []Device `json:"devices"`
}

// BadgeRequest is the body of PUT /v1/devices/{registrationId}/badge: the
// phone's own count, which overwrites the registration's absolutely.
type BadgeRequest struct {
	Count int64
}

// BadgeResponse is its 200 answer.
type BadgeResponse struct {
	Count int64 `json:"count"`
}

// DecodeBadgeRequest strictly decodes {"v":1,"count":N}, N an integer
// 0..MaxBadge. Any failure is ErrInvalidRequest.
func DecodeBadgeRequest(body []byte) (BadgeRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return BadgeRequest{}, err
	}
	o.version()
	var r BadgeRequest
	r.Count, _ = o.integer("count", true, 0)
	if err := o.finish("body"); err != nil {
		return BadgeRequest{}, err
	}
	if r.Count > MaxBadge {
		return BadgeRequest{}, invalid("count is out of range")
	}
	return r, nil
}

// DecodeRegisterRequest strictly decodes a registration (reference-behaviour
// §2.3 with the decisions table): an iOS token is non-empty even-length hex
// of at most MaxTokenChars and needs apnsEnvironment; an Android token is
// MinAndroidTokenChars..MaxTokenChars of [A-Za-z0-9_:.-] and forbids it;
// filter is optional but strict when present. Any failure is
// ErrInvalidRequest.
func DecodeRegisterRequest(body []byte) (RegisterRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return RegisterRequest{}, err
	}
	var r RegisterRequest
	o.version()
	r.DeviceID, _ = o.str("deviceId", true)
	platform, _ := o.str("platform", true)
	r.Platform = Platform(platform)
	r.Token, _ = o.str("token", true)
	env, hasEnv := o.str("apnsEnvironment", false)
	r.APNSEnvironment = APNSEnvironment(env)
	if f, ok := o.nested("filter", false); ok {
		r.Filter = &Filter{
			Sources:     f.stringArray("sources"),
			AgentStates: f.stringArray("agentStates"),
		}
		if err := f.finish("filter"); err != nil {
			o.fail(err)
		}
	}
	if err := o.finish("body"); err != nil {
		return RegisterRequest{}, err
	}
	if !validOpaqueID(r.DeviceID) {
		return RegisterRequest{}, invalid("deviceId is out of range")
	}
	if hasEnv && r.APNSEnvironment != APNSSandbox && r.APNSEnvironment != APNSProduction {
		return RegisterRequest{}, invalid("apnsEnvironment is unknown")
	}
	switch r.Platform {
	case PlatformIOS:
		if !hasEnv {
			return RegisterRequest{}, invalid("apnsEnvironment is required for ios")
		}
		if !validAPNSToken(r.Token) {
			return RegisterRequest{}, invalid("token is not an APNs token")
		}
	case PlatformAndroid:
		if hasEnv {
			return RegisterRequest{}, invalid("apnsEnvironment is not allowed for android")
		}
		if !validFCMToken(r.Token) {
			return RegisterRequest{}, invalid("token is not an FCM token")
		}
	default:
		return RegisterRequest{}, invalid("platform is unknown")
	}
	if r.Filter != nil {
		if !uniqueSubset(r.Filter.Sources, sources, MaxFilterSources) ||
			!uniqueSubset(r.Filter.AgentStates, agentStates, MaxFilterAgentStates) {
			return RegisterRequest{}, invalid("filter is invalid")
		}
	}
	return r, nil
}

// validAPNSToken reports whether t is non-empty, even-length hex of at most
// MaxTokenChars characters.
func validAPNSToken(t string) bool {
	if len(t) == 0 || len(t)%2 != 0 || len(t) > MaxTokenChars {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validFCMToken reports whether t matches /^[A-Za-z0-9_:.-]{32,4096}$/.
func validFCMToken(t string) bool {
	if len(t) < MinAndroidTokenChars || len(t) > MaxTokenChars {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// uniqueSubset reports whether items holds at most max distinct values, all
// from allowed.
func uniqueSubset(items, allowed []string, max int) bool {
	if len(items) > max {
		return false
	}
	for i, it := range items {
		if !slices.Contains(allowed, it) || slices.Contains(items[:i], it) {
			return false
		}
	}
	return true
}
