package httpx

import (
	"net/http"
	"strings"
)

// sharedIPKey is the one bucket key of every request whose client IP cannot
// be told.
const sharedIPKey = "unknown"

// ClientIP returns the key of r's client for the IP buckets
// (reference-behaviour §2.6 with our decision): the x-forwarded-for entry at
// hops from the right, since the platform appends the connecting peer and
// everything left of it is caller-supplied; with too few hops, x-real-ip;
// else one shared key. trustedHops is ORCA_PUSH_TRUSTED_PROXY_HOPS.
func ClientIP(r *http.Request, trustedHops int) string {
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, p := range strings.Split(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				hops = append(hops, p)
			}
		}
	}
	if i := len(hops) - 1 - trustedHops; i >= 0 && len(hops) > 0 {
		return hops[i]
	}
	if ip := strings.TrimSpace(r.Header.Get("X-Real-Ip")); ip != "" {
		return ip
	}
	return sharedIPKey
}
