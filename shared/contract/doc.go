// Package contract is the gateway's side of the mobile push contract
// (../shared/seeds/000_d0a54bcd2ed1a055.txt): the wire types of every route,
// strict JSON decoding, the error codes, and every limit the contract or the
// reference behaviour names. It is the only place such a number is written
// down, and it imports nothing of ours.
package contract
