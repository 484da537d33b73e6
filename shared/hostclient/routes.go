package hostclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"onorca.dev/push/shared/contract"
)

// RegisterParams are the fields of a device registration (POST /v1/devices).
type RegisterParams struct {
	// DeviceID is the desktop's id of the paired phone.
	DeviceID string
	// Platform is the phone's platform.
	Platform contract.Platform
	// Token is the phone's native push token.
	Token string
	// APNSEnvironment is required for iOS and must be empty for Android.
	APNSEnvironment contract.APNSEnvironment
	// Filter is the optional delivery filter; nil leaves it out.
	Filter *contract.Filter
}

// Register registers (or re-registers) a phone and returns its registration
// id. A 65th device is an [*APIError] that matches contract.ErrTooManyDevices.
func (c *Client) Register(ctx context.Context, p RegisterParams) (registrationID string, err error) {
	body, err := encodeJSON(registerRequest{
		V:               1,
		DeviceID:        p.DeviceID,
		Platform:        p.Platform,
		Token:           p.Token,
		APNSEnvironment: p.APNSEnvironment,
		Filter:          p.Filter,
	})
	if err != nil {
		return "", fmt.Errorf("register: %w", err)
	}
	var resp contract.RegisterResponse
	if err := c.call(ctx, "register", http.MethodPost, "/v1/devices", body, &resp); err != nil {
		return "", err
	}
	return resp.RegistrationID, nil
}

// Devices lists the host's registrations.
func (c *Client) Devices(ctx context.Context) ([]contract.Device, error) {
	var resp contract.DeviceList
	if err := c.call(ctx, "devices", http.MethodGet, "/v1/devices", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Devices, nil
}

// Delete deletes a registration of this host. An unknown or foreign id is an
// [*APIError] that matches contract.ErrNotFound.
func (c *Client) Delete(ctx context.Context, registrationID string) error {
	return c.call(ctx, "delete", http.MethodDelete, "/v1/devices/"+url.PathEscape(registrationID), nil, nil)
}

// Badge sets a registration's app-icon badge to count, the phone's own
// (PUT /v1/devices/{registrationId}/badge), opting it in: from then on
// every alert push raises it by the notifications it carries and shows the
// total. It returns the count the gateway stored. An unknown or foreign id
// is an [*APIError] that matches contract.ErrNotFound; a count outside
// 0..contract.MaxBadge one that matches contract.ErrInvalidRequest.
func (c *Client) Badge(ctx context.Context, registrationID string, count int64) (int64, error) {
	body, err := encodeJSON(badgeRequest{V: 1, Count: count})
	if err != nil {
		return 0, fmt.Errorf("badge: %w", err)
	}
	var resp contract.BadgeResponse
	path := "/v1/devices/" + url.PathEscape(registrationID) + "/badge"
	if err := c.call(ctx, "badge", http.MethodPut, path, body, &resp); err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// Send sends n to registrationIDs in requests of at most
// contract.MaxRegistrationIDs ids, as the desktop dispatcher does, and
// returns the results of all requests in order. The gateway drops repeated
// ids within one request, so a repeated id may yield fewer results. With no
// ids it sends nothing. On an error it returns the results of the requests
// that succeeded before it, with the error.
func (c *Client) Send(ctx context.Context, registrationIDs []string, n contract.Notification) ([]contract.SendResult, error) {
	var results []contract.SendResult
	for chunk := range slices.Chunk(registrationIDs, contract.MaxRegistrationIDs) {
		body, err := encodeJSON(sendRequest{V: 1, RegistrationIDs: chunk, Notification: n})
		if err != nil {
			return results, fmt.Errorf("send: %w", err)
		}
		var resp contract.SendResponse
		if err := c.call(ctx, "send", http.MethodPost, "/v1/send", body, &resp); err != nil {
			return results, err
		}
		results = append(results, resp.Results...)
	}
	return results, nil
}

// EventOf returns the identity of notification n, as a receipts request
// names it.
func EventOf(n contract.Notification) contract.EventRef {
	return contract.EventRef{Kind: n.EffectiveKind(), Epoch: n.Epoch, Seq: n.Seq}
}

// Receipts asks what became of events (POST /v1/receipts), in requests of at
// most contract.MaxReceiptEvents events, and returns one receipt per event,
// in order. With no events it asks nothing. On an error it returns the
// receipts of the requests that succeeded before it, with the error.
func (c *Client) Receipts(ctx context.Context, events []contract.EventRef) ([]contract.Receipt, error) {
	var receipts []contract.Receipt
	for chunk := range slices.Chunk(events, contract.MaxReceiptEvents) {
		req := receiptsRequest{V: 1, Events: make([]eventRef, len(chunk))}
		for i, e := range chunk {
			req.Events[i] = eventRef{Kind: e.Kind, NotificationEpoch: e.Epoch, NotificationSeq: e.Seq}
		}
		body, err := encodeJSON(req)
		if err != nil {
			return receipts, fmt.Errorf("receipts: %w", err)
		}
		var resp contract.ReceiptsResponse
		if err := c.call(ctx, "receipts", http.MethodPost, "/v1/receipts", body, &resp); err != nil {
			return receipts, err
		}
		receipts = append(receipts, resp.Receipts...)
	}
	return receipts, nil
}

// Raw sends one request to path with the cached session's bearer, signing in
// first when there is none, for tests that craft odd requests. A non-nil body
// is sent as application/json. It neither retries nor checks the status; the
// caller closes the body.
func (c *Client) Raw(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	token, err := c.ensureSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	resp, err := c.send(ctx, method, path, token, body)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return resp, nil
}
