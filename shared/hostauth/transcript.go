package hostauth

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"onorca.dev/push/shared/contract"
)

// fieldNames are the transcript's ten field names in their one legal order
// (reference-behaviour §3, "Issuing a challenge", step 3).
var fieldNames = [fieldCount]string{
	"protocol",
	"version",
	"gatewayOrigin",
	"gatewayEphemeralPublicKey",
	"challengeNonce",
	"challengeId",
	"issuedAt",
	"expiresAt",
	"hostFingerprint",
	"hostPublicKey",
}

// The indexes of fieldNames.
const (
	fProtocol = iota
	fVersion
	fOrigin
	fEphemeralKey
	fNonce
	fChallengeID
	fIssuedAt
	fExpiresAt
	fFingerprint
	fHostKey
	fieldCount
)

// Transcript is what a challenge binds the host's proof to. Times are Unix
// milliseconds. The protocol and version fields are constants and so are not
// stored here.
type Transcript struct {
	GatewayOrigin             string
	GatewayEphemeralPublicKey []byte // contract.KeyBytes
	ChallengeNonce            []byte // contract.NonceBytes
	ChallengeID               string
	IssuedAt                  int64
	ExpiresAt                 int64
	HostFingerprint           string
	HostPublicKey             []byte // contract.KeyBytes
}

// Encode returns the transcript's wire form: for each of the ten fields in
// order, u32be(len(name)) || name || u32be(len(value)) || value, with the
// times as u64be (reference-behaviour §3). It returns ErrKeySize when a key or
// the nonce has the wrong size, and ErrTranscript when a time is outside
// 0..MaxSafeInteger or a string field is not UTF-8 or is too long for its u32
// length.
func (t Transcript) Encode() ([]byte, error) {
	if len(t.GatewayEphemeralPublicKey) != contract.KeyBytes ||
		len(t.ChallengeNonce) != contract.NonceBytes ||
		len(t.HostPublicKey) != contract.KeyBytes {
		return nil, fmt.Errorf("encode transcript: %w", ErrKeySize)
	}
	if !validTime(t.IssuedAt) || !validTime(t.ExpiresAt) {
		return nil, fmt.Errorf("encode transcript: time out of range: %w", ErrTranscript)
	}
	if !utf8.ValidString(t.GatewayOrigin) || !utf8.ValidString(t.ChallengeID) || !utf8.ValidString(t.HostFingerprint) {
		return nil, fmt.Errorf("encode transcript: string is not UTF-8: %w", ErrTranscript)
	}
	if !fitsU32(t.GatewayOrigin) || !fitsU32(t.ChallengeID) || !fitsU32(t.HostFingerprint) {
		return nil, fmt.Errorf("encode transcript: field over the u32 length limit: %w", ErrTranscript)
	}
	values := [fieldCount][]byte{
		fProtocol:     []byte(contract.ProofProtocol),
		fVersion:      {contract.ProofVersion},
		fOrigin:       []byte(t.GatewayOrigin),
		fEphemeralKey: t.GatewayEphemeralPublicKey,
		fNonce:        t.ChallengeNonce,
		fChallengeID:  []byte(t.ChallengeID),
		fIssuedAt:     binary.BigEndian.AppendUint64(nil, uint64(t.IssuedAt)),
		fExpiresAt:    binary.BigEndian.AppendUint64(nil, uint64(t.ExpiresAt)),
		fFingerprint:  []byte(t.HostFingerprint),
		fHostKey:      t.HostPublicKey,
	}
	n := 0
	for i, v := range values {
		n += 8 + len(fieldNames[i]) + len(v)
	}
	b := make([]byte, 0, n)
	for i, v := range values {
		b = appendChunk(b, []byte(fieldNames[i]))
		b = appendChunk(b, v)
	}
	return b, nil
}

// ParseTranscript is the inverse of [Transcript.Encode], and strict: exactly
// the ten fields in order (so no field is missing, repeated or unknown), no
// trailing bytes, keys of 32 bytes, a nonce of 24, times of exactly 8 bytes
// within 0..MaxSafeInteger, UTF-8 strings. Whatever it accepts encodes back to
// the same bytes. It returns ErrProtocol or ErrVersion for a protocol or
// version other than this package's, and ErrTranscript for anything else.
func ParseTranscript(b []byte) (Transcript, error) {
	var values [fieldCount][]byte
	rest := b
	for i, want := range fieldNames {
		var name []byte
		var ok bool
		if name, rest, ok = readChunk(rest); !ok || string(name) != want {
			return Transcript{}, fmt.Errorf("parse transcript: want field %s: %w", want, ErrTranscript)
		}
		if values[i], rest, ok = readChunk(rest); !ok {
			return Transcript{}, fmt.Errorf("parse transcript: field %s is truncated: %w", want, ErrTranscript)
		}
	}
	if len(rest) != 0 {
		return Transcript{}, fmt.Errorf("parse transcript: trailing bytes: %w", ErrTranscript)
	}
	if string(values[fProtocol]) != contract.ProofProtocol {
		return Transcript{}, fmt.Errorf("parse transcript: %w", ErrProtocol)
	}
	if !bytes.Equal(values[fVersion], []byte{contract.ProofVersion}) {
		return Transcript{}, fmt.Errorf("parse transcript: %w", ErrVersion)
	}
	t := Transcript{
		GatewayOrigin:             string(values[fOrigin]),
		GatewayEphemeralPublicKey: bytes.Clone(values[fEphemeralKey]),
		ChallengeNonce:            bytes.Clone(values[fNonce]),
		ChallengeID:               string(values[fChallengeID]),
		HostFingerprint:           string(values[fFingerprint]),
		HostPublicKey:             bytes.Clone(values[fHostKey]),
	}
	var ok1, ok2 bool
	t.IssuedAt, ok1 = readTime(values[fIssuedAt])
	t.ExpiresAt, ok2 = readTime(values[fExpiresAt])
	if !ok1 || !ok2 {
		return Transcript{}, fmt.Errorf("parse transcript: time is not a u64 in range: %w", ErrTranscript)
	}
	if _, err := t.Encode(); err != nil {
		// Sizes and UTF-8: Encode's rules, kept in one place.
		return Transcript{}, fmt.Errorf("parse transcript: field size or encoding: %w", ErrTranscript)
	}
	return t, nil
}

// fitsU32 reports whether s's length fits the u32 length prefix.
func fitsU32(s string) bool { return uint64(len(s)) <= math.MaxUint32 }

// validTime reports whether ms is a wire timestamp: an integer in
// 0..MaxSafeInteger, the range of every integer on the wire (§2.2).
func validTime(ms int64) bool { return ms >= 0 && ms <= contract.MaxSafeInteger }

// readTime reads a u64be time of exactly 8 bytes.
func readTime(v []byte) (int64, bool) {
	if len(v) != 8 {
		return 0, false
	}
	u := binary.BigEndian.Uint64(v)
	if u > contract.MaxSafeInteger {
		return 0, false
	}
	return int64(u), true
}

// appendChunk appends u32be(len(v)) || v.
func appendChunk(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// readChunk reads u32be(n) || n bytes from the front of b and returns the
// bytes and the rest. It reports false when b is too short.
func readChunk(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := uint64(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n > uint64(len(b)) {
		return nil, b, false
	}
	return b[:n:n], b[n:], true
}
