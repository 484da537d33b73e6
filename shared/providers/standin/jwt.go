package standin

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
)

// verifyJWT checks an APNs provider token (Apple, "Establishing a
// token-based connection to APNs"): header {alg: ES256, kid}, claims {iss,
// iat}, and an ES256 signature in IEEE P1363 form (r‖s, 64 bytes) by pub.
// The issue time is not compared with any clock: apns2 signs with the real
// time, and the stand-in may run on a manual one.
func verifyJWT(tok string, pub *ecdsa.PublicKey, keyID, teamID string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errBadJWT
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string   `json:"iss"`
		Iat *float64 `json:"iat"`
	}
	if !decodeSegment(parts[0], &header) || !decodeSegment(parts[1], &claims) {
		return errBadJWT
	}
	if header.Alg != "ES256" || header.Kid != keyID || claims.Iss != teamID || claims.Iat == nil {
		return errBadJWT
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return errBadJWT
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return errBadJWT
	}
	return nil
}

// decodeSegment decodes one base64url JSON segment of a JWT into v.
func decodeSegment(seg string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	return err == nil && json.Unmarshal(b, v) == nil
}
