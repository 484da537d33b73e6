package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrBadRequest is returned by [ParseDeliverRequest] for a body that is not
// a task this package wrote.
var ErrBadRequest = errors.New("tasks: malformed deliver request")

// ParseDeliverRequest strictly decodes a task body [Scheduler.Schedule]
// wrote: unknown keys, trailing data and a missing batch id are
// ErrBadRequest.
func ParseDeliverRequest(body []byte) (DeliverRequest, error) {
	var req DeliverRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() || req.BatchID == "" {
		return DeliverRequest{}, ErrBadRequest
	}
	return req, nil
}
