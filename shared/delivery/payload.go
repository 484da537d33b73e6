package delivery

import (
	"fmt"

	"onorca.dev/push/shared/contract"
)

// A batch's payload_json is the JSON array of its members' notifications in
// arrival order, each as contract.Notification's MarshalJSON writes it.

// decodeMembers returns the members of a stored batch.
func decodeMembers(batchID, payload string) ([]contract.Notification, error) {
	ns, err := contract.DecodeNotifications([]byte(payload))
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", batchID, err)
	}
	return ns, nil
}

// singlePayload is the payload of a batch holding item alone.
func singlePayload(item []byte) string {
	return "[" + string(item) + "]"
}

// appendPayload is payload, a stored non-empty array, with item appended
// as it stands: joining an alert rewrites no earlier member.
func appendPayload(payload string, item []byte) string {
	return payload[:len(payload)-1] + "," + string(item) + "]"
}
