package contract

// ChallengeRequest is the body of POST /v1/host/challenge.
type ChallengeRequest struct {
	// HostPublicKey is the host's X25519 public key, canonically decoded.
	HostPublicKey []byte
}

// ChallengeResponse is the 200 answer of POST /v1/host/challenge. The host
// fingerprint is deliberately absent (reference-behaviour §1.2).
type ChallengeResponse struct {
	ChallengeID                  string `json:"challengeId"`
	GatewayEphemeralPublicKeyB64 string `json:"gatewayEphemeralPublicKeyB64"`
	NonceB64                     string `json:"nonceB64"`
	CiphertextB64                string `json:"ciphertextB64"`
	ExpiresAt                    int64  `json:"expiresAt"`
}

// SessionRequest is the body of POST /v1/host/session.
type SessionRequest struct {
	// ChallengeID names the challenge being answered.
	ChallengeID string
	// ProofB64 is the proof as sent; its canonical decode is checked by the
	// verifier, where a bad proof is invalid_proof rather than a 400.
	ProofB64 string
}

// SessionResponse is the 200 answer of POST /v1/host/session.
type SessionResponse struct {
	SessionToken    string `json:"sessionToken"`
	ExpiresAt       int64  `json:"expiresAt"`
	HostFingerprint string `json:"hostFingerprint"`
}

// DecodeChallengeRequest strictly decodes {v: 1, hostPublicKeyB64}. It returns
// ErrInvalidRequest for any schema failure, including a key that is not the
// canonical base64 of 32 bytes.
func DecodeChallengeRequest(body []byte) (ChallengeRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return ChallengeRequest{}, err
	}
	o.version()
	keyB64, _ := o.str("hostPublicKeyB64", true)
	if err := o.finish("body"); err != nil {
		return ChallengeRequest{}, err
	}
	key, ok := DecodeKey32(keyB64)
	if !ok {
		return ChallengeRequest{}, invalid("hostPublicKeyB64 is not a canonical 32-byte key")
	}
	return ChallengeRequest{HostPublicKey: key}, nil
}

// DecodeSessionRequest strictly decodes {v: 1, challengeId, proofB64}. The
// proof must have the shape of padded base64 of 32 bytes (44 characters
// ending in '='); its canonical decode is the verifier's business.
func DecodeSessionRequest(body []byte) (SessionRequest, error) {
	o, err := parseTop(body)
	if err != nil {
		return SessionRequest{}, err
	}
	o.version()
	id, _ := o.str("challengeId", true)
	proof, _ := o.str("proofB64", true)
	if err := o.finish("body"); err != nil {
		return SessionRequest{}, err
	}
	if !validOpaqueID(id) {
		return SessionRequest{}, invalid("challengeId is out of range")
	}
	if !isBase64Key44(proof) {
		return SessionRequest{}, invalid("proofB64 is malformed")
	}
	return SessionRequest{ChallengeID: id, ProofB64: proof}, nil
}

// isBase64Key44 matches /^[A-Za-z0-9+/]{43}=$/, the schema of a 32-byte value.
func isBase64Key44(s string) bool {
	if len(s) != 44 || s[43] != '=' {
		return false
	}
	for i := 0; i < 43; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}
