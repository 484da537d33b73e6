package contract_test

import (
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
)

func TestDecodeSendRequest(t *testing.T) {
	for _, tt := range contracttest.Sends() {
		t.Run(tt.Name, func(t *testing.T) {
			_, err := contract.DecodeSendRequest([]byte(tt.Body))
			if tt.OK && err != nil {
				t.Fatalf("DecodeSendRequest = %v, want nil", err)
			}
			if !tt.OK && !errors.Is(err, contract.ErrInvalidRequest) {
				t.Fatalf("DecodeSendRequest = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestSendDeduplicatesInOrder(t *testing.T) {
	body := strings.Replace(contracttest.SendJSON(""), `["r1"]`, `["b","a","b","c","a"]`, 1)
	req, err := contract.DecodeSendRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(req.RegistrationIDs, ","); got != "b,a,c" {
		t.Fatalf("RegistrationIDs = %q, want %q", got, "b,a,c")
	}
}

func TestFingerprintFormNormalisesKind(t *testing.T) {
	a, _ := contract.DecodeSendRequest([]byte(contracttest.SendJSON(`"sound":true`)))
	b, _ := contract.DecodeSendRequest([]byte(contracttest.SendJSON(`"kind":"alert","sound":false`)))
	fa, fb := a.Notification.AppendJSON(nil, false), b.Notification.AppendJSON(nil, false)
	if string(fa) != string(fb) {
		t.Fatalf("fingerprint forms differ:\n%s\n%s", fa, fb)
	}
}
