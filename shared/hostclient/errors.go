package hostclient

import (
	"errors"
	"fmt"
	"strconv"

	"onorca.dev/push/shared/contract"
)

// Errors returned by [Answer] (and so by [Client.SignIn] and any call that
// signs in), one per host-side check of reference-behaviour §3, "The host's
// side". An opened challenge that is malformed fails earlier with
// hostauth.ErrChallengeDomain or hostauth.ErrChallengeLength; a transcript
// that does not parse fails with ErrTranscript wrapping hostauth's precise
// error, which is hostauth.ErrProtocol or hostauth.ErrVersion when the
// protocol or version differs from ours.
var (
	// ErrMalformedChallenge is returned when the ephemeral key, nonce or
	// ciphertext of the wire answer is not canonical standard base64 of the
	// right size.
	ErrMalformedChallenge = errors.New("hostclient: malformed challenge")
	// ErrUnopenable is returned when the box does not open with the host's
	// secret key and the wire's ephemeral key and nonce.
	ErrUnopenable = errors.New("hostclient: challenge does not open")
	// ErrTranscript is returned when the sealed transcript does not parse.
	ErrTranscript = errors.New("hostclient: transcript does not parse")
	// ErrIssuedInFuture is returned when issuedAt is more than
	// contract.HostClockSkew after the host's clock.
	ErrIssuedInFuture = errors.New("hostclient: challenge issued in the future")
	// ErrExpired is returned when expiresAt is more than
	// contract.HostClockSkew before the host's clock.
	ErrExpired = errors.New("hostclient: challenge expired")
	// ErrExpiresBeforeIssued is returned when expiresAt precedes issuedAt.
	ErrExpiresBeforeIssued = errors.New("hostclient: challenge expires before it was issued")
	// ErrLifetime is returned when expiresAt − issuedAt exceeds
	// contract.ChallengeTTL.
	ErrLifetime = errors.New("hostclient: challenge lives too long")
	// ErrExpiresAtMismatch is returned when the transcript's expiresAt
	// differs from the wire's.
	ErrExpiresAtMismatch = errors.New("hostclient: expiresAt differs from the wire")
	// ErrOrigin is returned, as an [*OriginError] that names both origins,
	// when the transcript names another gateway origin.
	ErrOrigin = errors.New("hostclient: transcript names another origin")
	// ErrEphemeralKey is returned when the transcript's ephemeral key differs
	// from the wire's.
	ErrEphemeralKey = errors.New("hostclient: ephemeral key differs from the wire")
	// ErrNonce is returned when the transcript's nonce differs from the
	// wire's.
	ErrNonce = errors.New("hostclient: nonce differs from the wire")
	// ErrChallengeID is returned when the transcript's challengeId differs
	// from the wire's.
	ErrChallengeID = errors.New("hostclient: challengeId differs from the wire")
	// ErrFingerprint is returned when the transcript names another host
	// fingerprint.
	ErrFingerprint = errors.New("hostclient: transcript names another fingerprint")
	// ErrHostKey is returned when the transcript names another host public
	// key.
	ErrHostKey = errors.New("hostclient: transcript names another host key")

	// ErrSessionHost is returned by [Client.SignIn] when the gateway mints a
	// session for a fingerprint that is not this host's.
	ErrSessionHost = errors.New("hostclient: session is for another host")
)

// OriginError is a challenge whose transcript names another gateway origin
// than the host expects: a gateway whose ORCA_PUSH_PUBLIC_URL is not the URL
// the host uses (localhost against 127.0.0.1, a trailing slash, a proxy). It
// matches [ErrOrigin] with errors.Is.
type OriginError struct {
	// Expected is the origin the host expects (Options.Origin).
	Expected string
	// Received is the origin the gateway's transcript names.
	Received string
}

// Error names both origins.
func (e *OriginError) Error() string {
	return fmt.Sprintf("%v: expected %q, received %q", ErrOrigin, e.Expected, e.Received)
}

// Unwrap returns ErrOrigin.
func (e *OriginError) Unwrap() error { return ErrOrigin }

// APIError is a non-2xx answer from the gateway. Client methods return it
// wrapped with the operation name; find it with errors.As.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the body's "error" string (reference-behaviour §2.1), or empty
	// when the body is not a JSON error (such as the plain-text 404 of an
	// unknown route).
	Code string
}

// Error returns the status and code.
func (e *APIError) Error() string {
	return "hostclient: gateway answered " + strconv.Itoa(e.Status) + " " + e.Code
}

// Is reports whether target is the contract error of the same status and
// code, so errors.Is(err, contract.ErrTooManyDevices) works on a client
// error.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*contract.Error)
	return ok && t.Status == e.Status && t.Code == e.Code
}
