package delivery

import (
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/seal"
)

// SealedPayload is the payload_json of batch batchID of registration reg
// holding ns sealed under keys, as admission writes it: for tests that
// store batches themselves.
func SealedPayload(keys *seal.Ring, batchID, reg string, ns ...contract.Notification) string {
	return payloads{keys}.encode(batchID, reg, ns)
}
