package contract_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
)

const hostKey = "E75P6uryBMf9M1j8nAByGIHRdCeBKCJ+xnTzf3/pe20="

func TestDecodeChallengeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"valid", `{"v":1,"hostPublicKeyB64":"` + hostKey + `"}`, true},
		{"valid with spaces", " {\"hostPublicKeyB64\":\"" + hostKey + "\", \"v\": 1.0}\n", true},
		{"empty", ``, false},
		{"null", `null`, false},
		{"array", `[]`, false},
		{"not json", `{"v":1,`, false},
		{"trailing data", `{"v":1,"hostPublicKeyB64":"` + hostKey + `"}{}`, false},
		{"trailing garbage", `{"v":1,"hostPublicKeyB64":"` + hostKey + `"} x`, false},
		{"unknown key", `{"v":1,"hostPublicKeyB64":"` + hostKey + `","x":1}`, false},
		{"key in other case", `{"V":1,"hostPublicKeyB64":"` + hostKey + `"}`, false},
		{"duplicate key", `{"v":1,"v":1,"hostPublicKeyB64":"` + hostKey + `"}`, false},
		{"missing v", `{"hostPublicKeyB64":"` + hostKey + `"}`, false},
		{"v 2", `{"v":2,"hostPublicKeyB64":"` + hostKey + `"}`, false},
		{"v string", `{"v":"1","hostPublicKeyB64":"` + hostKey + `"}`, false},
		{"key null", `{"v":1,"hostPublicKeyB64":null}`, false},
		{"key number", `{"v":1,"hostPublicKeyB64":5}`, false},
		{"key short", `{"v":1,"hostPublicKeyB64":"` + hostKey[:40] + `="}`, false},
		{"key unpadded", `{"v":1,"hostPublicKeyB64":"` + hostKey[:43] + `"}`, false},
		{"key non-canonical", `{"v":1,"hostPublicKeyB64":"` + hostKey[:42] + `1="}`, false},
		{"key url alphabet", `{"v":1,"hostPublicKeyB64":"_` + hostKey[1:] + `"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.DecodeChallengeRequest([]byte(tt.body))
			if tt.ok && err != nil {
				t.Fatalf("DecodeChallengeRequest(%q) = %v, want nil", tt.body, err)
			}
			if !tt.ok && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeChallengeRequest(%q) = %v, want ErrInvalidRequest", tt.body, err)
			}
		})
	}
}

func TestDecodeSessionRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"valid", `{"v":1,"challengeId":"c","proofB64":"` + hostKey + `"}`, true},
		{"empty id", `{"v":1,"challengeId":"","proofB64":"` + hostKey + `"}`, false},
		{"long id", `{"v":1,"challengeId":"` + strings.Repeat("c", 129) + `","proofB64":"` + hostKey + `"}`, false},
		{"proof short", `{"v":1,"challengeId":"c","proofB64":"AAAA"}`, false},
		{"proof missing", `{"v":1,"challengeId":"c"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.DecodeSessionRequest([]byte(tt.body))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, contract.ErrInvalidRequest)) {
				t.Fatalf("DecodeSessionRequest(%q) = %v, want ok=%v", tt.body, err, tt.ok)
			}
		})
	}
}

// RegistrationCases is the table of registrations, valid and not, shared by
// this test and by the handler tests (each invalid one must change no row).
func registrationCases() []struct {
	name string
	body string
	ok   bool
} {
	hex64 := strings.Repeat("ab", 32)
	fcm := strings.Repeat("a", 40) + ":_.-"
	ios := func(extra string) string {
		return `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `","apnsEnvironment":"sandbox"` + extra + `}`
	}
	return []struct {
		name string
		body string
		ok   bool
	}{
		{"ios", ios(""), true},
		{"ios with filter", ios(`,"filter":{"sources":["plugin","terminal-bell"],"agentStates":["finished"]}`), true},
		{"ios empty filter arrays", ios(`,"filter":{"sources":[],"agentStates":[]}`), true},
		{"ios 32 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64[:32] + `","apnsEnvironment":"production"}`, true},
		{"ios 4096 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + strings.Repeat("a", 4096) + `","apnsEnvironment":"production"}`, true},
		{"android", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `"}`, true},
		{"ios 4098 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + strings.Repeat("a", 4098) + `","apnsEnvironment":"production"}`, false},
		{"ios odd hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"abc","apnsEnvironment":"sandbox"}`, false},
		{"ios empty token", `{"v":1,"deviceId":"d1","platform":"ios","token":"","apnsEnvironment":"sandbox"}`, false},
		{"ios non-hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"zz","apnsEnvironment":"sandbox"}`, false},
		{"ios spaces", `{"v":1,"deviceId":"d1","platform":"ios","token":"ab cd ","apnsEnvironment":"sandbox"}`, false},
		{"ios no environment", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `"}`, false},
		{"ios bad environment", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `","apnsEnvironment":"dev"}`, false},
		{"android with environment", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `","apnsEnvironment":"sandbox"}`, false},
		{"android short token", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm[:31] + `"}`, false},
		{"android bad char", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `/"}`, false},
		{"android long token", `{"v":1,"deviceId":"d1","platform":"android","token":"` + strings.Repeat("a", 4097) + `"}`, false},
		{"platform unknown", `{"v":1,"deviceId":"d1","platform":"web","token":"` + fcm + `"}`, false},
		{"platform number", `{"v":1,"deviceId":"d1","platform":1,"token":"` + fcm + `"}`, false},
		{"device id empty", `{"v":1,"deviceId":"","platform":"android","token":"` + fcm + `"}`, false},
		{"device id 129", `{"v":1,"deviceId":"` + strings.Repeat("d", 129) + `","platform":"android","token":"` + fcm + `"}`, false},
		{"device id missing", `{"v":1,"platform":"android","token":"` + fcm + `"}`, false},
		{"device id null", `{"v":1,"deviceId":null,"platform":"android","token":"` + fcm + `"}`, false},
		{"token missing", `{"v":1,"deviceId":"d1","platform":"android"}`, false},
		{"unknown key", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `","deviceName":"x"}`, false},
		{"v missing", `{"deviceId":"d1","platform":"android","token":"` + fcm + `"}`, false},
		{"filter null", ios(`,"filter":null`), false},
		{"filter array", ios(`,"filter":[]`), false},
		{"filter unknown key", ios(`,"filter":{"sources":[],"agentStates":[],"x":1}`), false},
		{"filter missing array", ios(`,"filter":{"sources":[]}`), false},
		{"filter unknown source", ios(`,"filter":{"sources":["email"],"agentStates":[]}`), false},
		{"filter duplicate source", ios(`,"filter":{"sources":["plugin","plugin"],"agentStates":[]}`), false},
		{"filter duplicate state", ios(`,"filter":{"sources":[],"agentStates":["finished","finished"]}`), false},
		{"filter non-string", ios(`,"filter":{"sources":[1],"agentStates":[]}`), false},
		{"not json", `{"v":1,"deviceId":"d1"`, false},
		{"empty body", ``, false},
	}
}

func TestDecodeRegisterRequest(t *testing.T) {
	for _, tt := range registrationCases() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.DecodeRegisterRequest([]byte(tt.body))
			if tt.ok && err != nil {
				t.Fatalf("DecodeRegisterRequest = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeRegisterRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{{"", 0}, {"abc", 3}, {"é", 1}, {"界", 1}, {"😀", 2}, {"a😀b", 4}}
	for _, tt := range tests {
		if got := contract.UTF16Len(tt.s); got != tt.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}
