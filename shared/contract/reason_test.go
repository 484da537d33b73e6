package contract_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
)

// Markers planted in request bodies; a refusal's reason must hold none.
const (
	valueMark  = "mkVALUEq"
	keyMark    = "mkKEYq"
	numberMark = 8765432109
)

// A refusal's reason names the field and the rule, and never echoes the
// request: every body of the shared cases is mutated leaf by leaf (a marked
// string, a marked number, a marked array and object, an unknown marked key)
// and every refusal of a mutant is checked for the markers.
func TestReasonNeverHoldsAValue(t *testing.T) {
	decoders := []struct {
		name   string
		decode func([]byte) error
		bodies []string
	}{
		{"challenge", func(b []byte) error { _, err := contract.DecodeChallengeRequest(b); return err },
			[]string{`{"v":1,"hostPublicKeyB64":"` + hostKey + `"}`}},
		{"session", func(b []byte) error { _, err := contract.DecodeSessionRequest(b); return err },
			[]string{`{"v":1,"challengeId":"c1","proofB64":"` + hostKey + `"}`}},
		{"register", func(b []byte) error { _, err := contract.DecodeRegisterRequest(b); return err },
			caseBodies(contracttest.Registrations())},
		{"send", func(b []byte) error { _, err := contract.DecodeSendRequest(b); return err },
			caseBodies(contracttest.Sends())},
		{"receipts", func(b []byte) error { _, err := contract.DecodeReceiptsRequest(b); return err },
			caseBodies(contracttest.Receipts())},
		{"badge", func(b []byte) error { _, err := contract.DecodeBadgeRequest(b); return err },
			caseBodies(contracttest.Badges())},
	}
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			refused := 0
			for _, body := range d.bodies {
				var doc any
				if json.Unmarshal([]byte(body), &doc) != nil {
					continue
				}
				for _, mutant := range mutants(doc) {
					b, _ := json.Marshal(mutant)
					err := d.decode(b)
					if err == nil {
						continue
					}
					refused++
					var ie *contract.InvalidError
					if !errors.As(err, &ie) {
						t.Fatalf("decode(%s) = %v, want an *InvalidError", b, err)
					}
					if r := ie.Reason; r == "" || strings.Contains(r, valueMark) || strings.Contains(r, keyMark) ||
						strings.Contains(r, "8765432109") {
						t.Fatalf("decode(%s): reason %q is empty or holds a value of the request", b, r)
					}
				}
			}
			if refused == 0 {
				t.Fatal("no mutant was refused: the test checks nothing")
			}
		})
	}
}

func caseBodies(cases []contracttest.Case) []string {
	out := make([]string, 0, len(cases))
	for _, c := range cases {
		out = append(out, c.Body)
	}
	return out
}

// mutants returns copies of doc, each with one leaf replaced by a marked
// value or one object given a marked key.
func mutants(doc any) []any {
	var out []any
	replacements := []any{valueMark, float64(numberMark), []any{valueMark}, map[string]any{keyMark: valueMark}}
	var walk func(v any, set func(any) any)
	walk = func(v any, set func(any) any) {
		switch v := v.(type) {
		case map[string]any:
			out = append(out, set(with(v, keyMark, valueMark)))
			for k, child := range v {
				walk(child, func(n any) any { return set(with(v, k, n)) })
			}
		case []any:
			for i, child := range v {
				walk(child, func(n any) any {
					c := append([]any(nil), v...)
					c[i] = n
					return set(c)
				})
			}
		default:
			for _, r := range replacements {
				out = append(out, set(r))
			}
		}
	}
	walk(doc, func(n any) any { return n })
	return out
}

// with returns a copy of m with key set to v.
func with(m map[string]any, key string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}
