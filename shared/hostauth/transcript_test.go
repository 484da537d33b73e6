package hostauth_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostauth"
)

// sampleTranscript is a valid transcript with distinct recognisable bytes.
func sampleTranscript() hostauth.Transcript {
	return hostauth.Transcript{
		GatewayOrigin:             "https://push.onorca.dev",
		GatewayEphemeralPublicKey: bytes.Repeat([]byte{0xe1}, contract.KeyBytes),
		ChallengeNonce:            bytes.Repeat([]byte{0x4e}, contract.NonceBytes),
		ChallengeID:               "0b6f2c7e-3a51-4f43-9a5e-5d0f2b1c9e77",
		IssuedAt:                  1_800_000_000_000,
		ExpiresAt:                 1_800_000_010_000,
		HostFingerprint:           "D20lU_8MD0R64gLt",
		HostPublicKey:             bytes.Repeat([]byte{0x4b}, contract.KeyBytes),
	}
}

// field is one transcript field as raw name and value.
type field struct{ name, value string }

// sampleFields returns sampleTranscript as raw fields, for tests that break
// the encoding in ways Encode cannot.
func sampleFields() []field {
	t := sampleTranscript()
	return []field{
		{"protocol", contract.ProofProtocol},
		{"version", "\x01"},
		{"gatewayOrigin", t.GatewayOrigin},
		{"gatewayEphemeralPublicKey", string(t.GatewayEphemeralPublicKey)},
		{"challengeNonce", string(t.ChallengeNonce)},
		{"challengeId", t.ChallengeID},
		{"issuedAt", string(binary.BigEndian.AppendUint64(nil, uint64(t.IssuedAt)))},
		{"expiresAt", string(binary.BigEndian.AppendUint64(nil, uint64(t.ExpiresAt)))},
		{"hostFingerprint", t.HostFingerprint},
		{"hostPublicKey", string(t.HostPublicKey)},
	}
}

// encodeFields writes fields in the transcript's chunk layout.
func encodeFields(fields []field) []byte {
	var b []byte
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f.name)))
		b = append(b, f.name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(f.value)))
		b = append(b, f.value...)
	}
	return b
}

// withField returns sampleFields with field i's value replaced.
func withField(i int, value string) []byte {
	fs := sampleFields()
	fs[i].value = value
	return encodeFields(fs)
}

func TestTranscriptRoundTrip(t *testing.T) {
	want := sampleTranscript()
	b, err := want.Encode()
	if err != nil {
		t.Fatalf("Encode() error: %v", err)
	}
	if raw := encodeFields(sampleFields()); !bytes.Equal(b, raw) {
		t.Fatalf("Encode() = %x, want %x", b, raw)
	}
	got, err := hostauth.ParseTranscript(b)
	if err != nil {
		t.Fatalf("ParseTranscript(Encode()) error: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseTranscript(Encode()) mismatch (-want +got):\n%s", diff)
	}
}

func TestTranscriptEncodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*hostauth.Transcript)
		want   error
	}{
		{"short ephemeral key", func(t *hostauth.Transcript) { t.GatewayEphemeralPublicKey = t.GatewayEphemeralPublicKey[:31] }, hostauth.ErrKeySize},
		{"long nonce", func(t *hostauth.Transcript) { t.ChallengeNonce = make([]byte, 32) }, hostauth.ErrKeySize},
		{"missing host key", func(t *hostauth.Transcript) { t.HostPublicKey = nil }, hostauth.ErrKeySize},
		{"negative issuedAt", func(t *hostauth.Transcript) { t.IssuedAt = -1 }, hostauth.ErrTranscript},
		{"expiresAt past MaxSafeInteger", func(t *hostauth.Transcript) { t.ExpiresAt = contract.MaxSafeInteger + 1 }, hostauth.ErrTranscript},
		{"origin not UTF-8", func(t *hostauth.Transcript) { t.GatewayOrigin = "https://\xff" }, hostauth.ErrTranscript},
		{"challengeId not UTF-8", func(t *hostauth.Transcript) { t.ChallengeID = "\xc3" }, hostauth.ErrTranscript},
		{"fingerprint not UTF-8", func(t *hostauth.Transcript) { t.HostFingerprint = "\x80" }, hostauth.ErrTranscript},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := sampleTranscript()
			tt.modify(&tr)
			if _, err := tr.Encode(); !errors.Is(err, tt.want) {
				t.Errorf("Encode() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseTranscriptMalformed(t *testing.T) {
	valid := encodeFields(sampleFields())
	swapped := sampleFields()
	swapped[5], swapped[6] = swapped[6], swapped[5]
	duplicated := append(sampleFields()[:6:6], sampleFields()[5:]...)
	missing := append(sampleFields()[:8:8], sampleFields()[9])
	renamed := sampleFields()
	renamed[2].name = "gatewayorigin"
	hugeName := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	hugeValue := binary.BigEndian.AppendUint32(encodeFields(sampleFields()[:9]), 13)
	hugeValue = append(hugeValue, "hostPublicKey"...)
	hugeValue = binary.BigEndian.AppendUint32(hugeValue, 0xffffffff)
	hugeValue = append(hugeValue, bytes.Repeat([]byte{0x4b}, 32)...)
	tooLate := binary.BigEndian.AppendUint64(nil, contract.MaxSafeInteger+1)
	negative := binary.BigEndian.AppendUint64(nil, 1<<63)

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, hostauth.ErrTranscript},
		{"length prefix only", []byte{0, 0, 0}, hostauth.ErrTranscript},
		{"last byte missing", valid[:len(valid)-1], hostauth.ErrTranscript},
		{"fingerprint field missing", encodeFields(missing), hostauth.ErrTranscript},
		{"two fields swapped", encodeFields(swapped), hostauth.ErrTranscript},
		{"field repeated", encodeFields(duplicated), hostauth.ErrTranscript},
		{"field renamed", encodeFields(renamed), hostauth.ErrTranscript},
		{"trailing byte", append(bytes.Clone(valid), 0), hostauth.ErrTranscript},
		{"field appended", append(bytes.Clone(valid), encodeFields(sampleFields()[9:])...), hostauth.ErrTranscript},
		{"huge name length", hugeName, hostauth.ErrTranscript},
		{"huge value length", hugeValue, hostauth.ErrTranscript},
		{"protocol v2", withField(0, "orca-push-host-proof/v2"), hostauth.ErrProtocol},
		{"protocol empty", withField(0, ""), hostauth.ErrProtocol},
		{"version 2", withField(1, "\x02"), hostauth.ErrVersion},
		{"version two bytes", withField(1, "\x00\x01"), hostauth.ErrVersion},
		{"version empty", withField(1, ""), hostauth.ErrVersion},
		{"origin not UTF-8", withField(2, "https://\xff"), hostauth.ErrTranscript},
		{"ephemeral key 31 bytes", withField(3, string(bytes.Repeat([]byte{1}, 31))), hostauth.ErrTranscript},
		{"ephemeral key 33 bytes", withField(3, string(bytes.Repeat([]byte{1}, 33))), hostauth.ErrTranscript},
		{"nonce 32 bytes", withField(4, string(bytes.Repeat([]byte{1}, 32))), hostauth.ErrTranscript},
		{"issuedAt 7 bytes", withField(6, "\x00\x00\x01\xa3\x18\x5c\x50"), hostauth.ErrTranscript},
		{"issuedAt 9 bytes", withField(6, "\x00\x00\x00\x01\xa3\x18\x5c\x50\x00"), hostauth.ErrTranscript},
		{"expiresAt past MaxSafeInteger", withField(7, string(tooLate)), hostauth.ErrTranscript},
		{"expiresAt negative as int64", withField(7, string(negative)), hostauth.ErrTranscript},
		{"host key empty", withField(9, ""), hostauth.ErrTranscript},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hostauth.ParseTranscript(tt.in)
			if !errors.Is(err, tt.want) {
				t.Errorf("ParseTranscript() = %+v, %v; want error %v", got, err, tt.want)
			}
		})
	}
}

// TestParseTranscriptPrefixes checks that no strict prefix of a valid
// transcript parses.
func TestParseTranscriptPrefixes(t *testing.T) {
	valid := encodeFields(sampleFields())
	for n := range len(valid) {
		if _, err := hostauth.ParseTranscript(valid[:n]); !errors.Is(err, hostauth.ErrTranscript) {
			t.Fatalf("ParseTranscript(first %d of %d bytes) error = %v, want %v", n, len(valid), err, hostauth.ErrTranscript)
		}
	}
}

// TestParseTranscriptCopies checks that the parsed keys do not alias the
// input, which the caller may reuse.
func TestParseTranscriptCopies(t *testing.T) {
	in := encodeFields(sampleFields())
	tr, err := hostauth.ParseTranscript(in)
	if err != nil {
		t.Fatal(err)
	}
	clear(in)
	if diff := cmp.Diff(sampleTranscript(), tr); diff != "" {
		t.Errorf("ParseTranscript() result changed with its input (-want +got):\n%s", diff)
	}
}

func FuzzParseTranscript(f *testing.F) {
	// The vector transcript and malformed ones are in
	// testdata/fuzz/FuzzParseTranscript.
	f.Add(encodeFields(sampleFields()))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := hostauth.ParseTranscript(in)
		if err != nil {
			return
		}
		out, err := tr.Encode()
		if err != nil {
			t.Fatalf("Encode(ParseTranscript(%x)) error: %v", in, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("Encode(ParseTranscript(%x)) = %x", in, out)
		}
	})
}
