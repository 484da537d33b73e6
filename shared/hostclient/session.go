package hostclient

// SetSession installs a session kept from an earlier run, token and expiry as
// [Client.Session] returned them, so that a short-lived program (the host
// command line) does not mint a new session, replacing the last, on every
// run. A token the gateway no longer honours is replaced on its 401, as any
// cached session is.
func (c *Client) SetSession(token string, expiresAt int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token, c.expiresAt = token, expiresAt
}
