package apns

import "net/http"

// exchangeKey is the context key of a Send's *exchange.
type exchangeKey struct{}

// exchange carries one Send's token into the transport and brings back
// what apns2.Response does not expose: the status when the body could not
// be decoded, and Retry-After. The transport runs in Send's goroutine.
type exchange struct {
	bearer     string
	status     int
	retryAfter string
}

// transport adds the provider token to each request and records the answer
// in the request's exchange. It implements CloseIdleConnections, which
// apns2.Client.CloseIdleConnections requires.
type transport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, ok := req.Context().Value(exchangeKey{}).(*exchange)
	if !ok {
		return t.base.RoundTrip(req)
	}
	resp, err := t.base.RoundTrip(withBearer(req, ex.bearer))
	if err == nil {
		ex.status = resp.StatusCode
		ex.retryAfter = resp.Header.Get("Retry-After")
	}
	return resp, err
}

// withBearer returns a copy of req with the provider token added. A
// RoundTripper must not modify req; the copy shares everything else, the
// header values included, which neither side changes.
func withBearer(req *http.Request, bearer string) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Header = make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		r.Header[k] = v
	}
	r.Header["Authorization"] = []string{"bearer " + bearer}
	return r
}

// CloseIdleConnections closes the base transport's idle connections.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
