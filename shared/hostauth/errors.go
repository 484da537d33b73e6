package hostauth

import "errors"

// Errors returned by this package. None of their texts holds a key, secret,
// proof, token or fingerprint.
var (
	// ErrKeySize is returned by [Transcript.Encode], [NewChallenge] and
	// [BuildChallenge] when a public key is not 32 bytes or a nonce not 24.
	ErrKeySize = errors.New("hostauth: key or nonce has the wrong size")

	// ErrWeakKey is returned by [NewChallenge] and [BuildChallenge] when the
	// host public key is a low-order point (the all-zero key among them):
	// its shared secret with any gateway key is zero, known to everyone, so
	// the sealed challenge secret would not be secret.
	ErrWeakKey = errors.New("hostauth: host public key is a low-order point")

	// ErrTranscript is returned by [ParseTranscript] when the bytes are not
	// exactly the ten fields in order with the right sizes, and by
	// [Transcript.Encode] when a time is outside 0..MaxSafeInteger or a string
	// is not UTF-8.
	ErrTranscript = errors.New("hostauth: malformed transcript")

	// ErrProtocol is returned by [ParseTranscript] when the protocol field is
	// not contract.ProofProtocol.
	ErrProtocol = errors.New("hostauth: unknown transcript protocol")

	// ErrVersion is returned by [ParseTranscript] when the version field is
	// not the single byte contract.ProofVersion.
	ErrVersion = errors.New("hostauth: unknown transcript version")

	// ErrChallengeDomain is returned by [SplitPlaintext] when the opened
	// challenge does not start with contract.ChallengeDomain and a NUL.
	ErrChallengeDomain = errors.New("hostauth: challenge has the wrong domain")

	// ErrChallengeLength is returned by [SplitPlaintext] when the opened
	// challenge's transcript length does not leave exactly a 32-byte secret.
	ErrChallengeLength = errors.New("hostauth: challenge has the wrong length")
)
