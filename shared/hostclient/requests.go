package hostclient

import (
	"bytes"
	"encoding/json"

	"onorca.dev/push/shared/contract"
)

// The request bodies, in the contract's key order. Each carries "v": 1.

// challengeRequest is the body of POST /v1/host/challenge.
type challengeRequest struct {
	V                int    `json:"v"`
	HostPublicKeyB64 string `json:"hostPublicKeyB64"`
}

// sessionRequest is the body of POST /v1/host/session.
type sessionRequest struct {
	V           int    `json:"v"`
	ChallengeID string `json:"challengeId"`
	ProofB64    string `json:"proofB64"`
}

// registerRequest is the body of POST /v1/devices.
type registerRequest struct {
	V               int                      `json:"v"`
	DeviceID        string                   `json:"deviceId"`
	Platform        contract.Platform        `json:"platform"`
	Token           string                   `json:"token"`
	APNSEnvironment contract.APNSEnvironment `json:"apnsEnvironment,omitempty"`
	Filter          *contract.Filter         `json:"filter,omitempty"`
}

// sendRequest is the body of POST /v1/send. The notification is written by
// contract.Notification's MarshalJSON, the wire form.
type sendRequest struct {
	V               int                   `json:"v"`
	RegistrationIDs []string              `json:"registrationIds"`
	Notification    contract.Notification `json:"notification"`
}

// badgeRequest is the body of PUT /v1/devices/{registrationId}/badge.
type badgeRequest struct {
	V     int   `json:"v"`
	Count int64 `json:"count"`
}

// receiptsRequest is the body of POST /v1/receipts.
type receiptsRequest struct {
	V      int        `json:"v"`
	Events []eventRef `json:"events"`
}

// eventRef is one event of a receipts request.
type eventRef struct {
	Kind              contract.Kind `json:"kind,omitempty"`
	NotificationEpoch string        `json:"notificationEpoch"`
	NotificationSeq   int64         `json:"notificationSeq"`
}

// encodeJSON marshals v without HTML escaping, so strings go out as the
// desktop's JSON.stringify writes them.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
