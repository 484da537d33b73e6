// Package hostauth is host authentication (contract "Host authentication:
// challenge, proof, session"; reference-behaviour §3). Its cryptographic core
// is pure: the host fingerprint, the length-prefixed proof transcript, the
// sealed challenge with the hash of the proof it expects, the proof check,
// and session tokens with their hashes. Those functions hold no state and
// read no clock: times and randomness are parameters, so tests reproduce the
// host-proof vector byte for byte. [Service] wraps them with the store and
// the clock and decides what is persisted.
//
// Nothing here returns, stores or logs a challenge secret, a proof or a
// session token in the clear: only their hashes leave the core.
package hostauth
