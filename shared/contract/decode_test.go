package contract_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
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
		{"nul in id", `{"v":1,"challengeId":"c\u0000","proofB64":"` + hostKey + `"}`, false},
		{"DEL in id", `{"v":1,"challengeId":"c\u007f","proofB64":"` + hostKey + `"}`, false},
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

func TestDecodeRegisterRequest(t *testing.T) {
	for _, tt := range contracttest.Registrations() {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := contract.DecodeRegisterRequest([]byte(tt.Body))
			if tt.OK && err != nil {
				t.Fatalf("DecodeRegisterRequest = %v, want nil", err)
			}
			if !tt.OK && !errors.Is(err, contract.ErrInvalidRequest) {
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

func TestDecodeBadgeRequest(t *testing.T) {
	for _, tt := range contracttest.Badges() {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := contract.DecodeBadgeRequest([]byte(tt.Body))
			if tt.OK && err != nil {
				t.Fatalf("DecodeBadgeRequest = %v, want nil", err)
			}
			if !tt.OK && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeBadgeRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
	if r, err := contract.DecodeBadgeRequest([]byte(`{"v":1,"count":42}`)); err != nil || r.Count != 42 {
		t.Errorf("DecodeBadgeRequest = %+v, %v, want count 42", r, err)
	}
}
