package standin

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"onorca.dev/push/shared/contract"
)

// maxReadBody bounds what a stand-in reads of one request body.
const maxReadBody = 1 << 20

// maxCollapseID is APNs' limit on apns-collapse-id, in bytes (Apple,
// "Sending notification requests to APNs").
const maxCollapseID = 64

// apnsHandler serves one APNs environment whose real host name is host.
func (s *Server) apnsHandler(host string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxReadBody))
		token, _ := strings.CutPrefix(r.URL.Path, "/3/device/")
		status, reason := s.checkAPNS(r, token, body)
		f, faulted := s.record(s.newDelivery(APNS, host, r, body), token, status)

		switch {
		case faulted:
			s.answerFault(w, r, f)
		case status != http.StatusOK:
			writeJSON(w, status, map[string]string{"reason": reason})
		default:
			w.Header().Set("apns-id", newUUID())
			w.WriteHeader(http.StatusOK)
		}
	})
}

// checkAPNS checks a request as APNs would, returning 200 or the error
// status and reason (Apple, "Handling notification responses from APNs").
func (s *Server) checkAPNS(r *http.Request, token string, body []byte) (int, string) {
	h := r.Header
	switch {
	case r.Method != http.MethodPost:
		return http.StatusMethodNotAllowed, "MethodNotAllowed"
	case !strings.HasPrefix(r.URL.Path, "/3/device/"):
		return http.StatusNotFound, "BadPath"
	}
	bearer, ok := cutPrefixFold(h.Get("Authorization"), "bearer ")
	switch {
	case !ok || bearer == "":
		return http.StatusForbidden, "MissingProviderToken"
	case !s.validToken(bearer):
		return http.StatusForbidden, "InvalidProviderToken"
	case h.Get("apns-topic") == "":
		return http.StatusBadRequest, "MissingTopic"
	case h.Get("apns-topic") != s.topic:
		return http.StatusBadRequest, "BadTopic"
	case token == "":
		return http.StatusBadRequest, "MissingDeviceToken"
	case !isHex(token):
		return http.StatusBadRequest, "BadDeviceToken"
	}
	pushType, priority := h.Get("apns-push-type"), h.Get("apns-priority")
	switch {
	case pushType != "alert" && pushType != "background":
		return http.StatusBadRequest, "InvalidPushType"
	case priority != "" && priority != "5" && priority != "10",
		pushType == "background" && priority != "5":
		// Background pushes must use priority 5.
		return http.StatusBadRequest, "BadPriority"
	case !validExpiration(h.Get("apns-expiration")):
		return http.StatusBadRequest, "BadExpirationDate"
	case len(h.Get("apns-collapse-id")) > maxCollapseID:
		return http.StatusBadRequest, "BadCollapseId"
	case len(body) == 0:
		return http.StatusBadRequest, "PayloadEmpty"
	case len(body) > contract.MaxProviderPayload:
		return http.StatusRequestEntityTooLarge, "PayloadTooLarge"
	case !isJSONObject(body):
		// APNs documents no reason for malformed JSON; this one is the
		// stand-in's own.
		return http.StatusBadRequest, "BadPayload"
	}
	return http.StatusOK, ""
}

// validToken reports whether bearer is a provider token signed by the
// configured key, remembering the ones that were.
func (s *Server) validToken(bearer string) bool {
	s.mu.Lock()
	ok := s.verified[bearer]
	s.mu.Unlock()
	if ok {
		return true
	}
	if verifyJWT(bearer, s.apnsKey, s.keyID, s.teamID) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.verified) >= maxVerified {
		clear(s.verified)
	}
	s.verified[bearer] = true
	return true
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// isHex reports whether s is hex digits only.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validExpiration reports whether v is absent or a non-negative integer of
// seconds.
func validExpiration(v string) bool {
	if v == "" {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && n >= 0
}

// newUUID returns a random version-4 UUID, the form of apns-id.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%X-%X-%X-%X-%X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
