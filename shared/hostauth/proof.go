package hostauth

import (
	"crypto/subtle"

	"onorca.dev/push/shared/contract"
)

// CheckProof reports whether proofB64 answers the challenge whose
// [Challenge.ProofHash] is storedHash. The proof must be the canonical padded
// base64 of 32 bytes; anything else is a mismatch, never an error
// (reference-behaviour §3, "Verifying a proof", step 1). The hashes are
// compared in constant time (step 5).
func CheckProof(proofB64, storedHash string) bool {
	proof, ok := contract.DecodeKey32(proofB64)
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashB64(proof)), []byte(storedHash)) == 1
}
