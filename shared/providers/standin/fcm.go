package standin

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"onorca.dev/push/shared/contract"
)

// fcmErrorType is the @type of FCM's error detail.
const fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"

// ttlPattern is the protobuf Duration form FCM accepts for android.ttl.
var ttlPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,9})?s$`)

// canonicalStatus maps an HTTP status to its google.rpc.Code name (the
// first one, where several share a status).
var canonicalStatus = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
	500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

// canonicalNames holds every google.rpc.Code name.
var canonicalNames = map[string]bool{
	"OK": true, "CANCELLED": true, "UNKNOWN": true, "INVALID_ARGUMENT": true,
	"DEADLINE_EXCEEDED": true, "NOT_FOUND": true, "ALREADY_EXISTS": true,
	"PERMISSION_DENIED": true, "RESOURCE_EXHAUSTED": true, "FAILED_PRECONDITION": true,
	"ABORTED": true, "OUT_OF_RANGE": true, "UNIMPLEMENTED": true, "INTERNAL": true,
	"UNAVAILABLE": true, "DATA_LOSS": true, "UNAUTHENTICATED": true,
}

// serveFCM serves POST /v1/projects/{project}/messages:send.
func (s *Server) serveFCM(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxReadBody))
	req, status, msg := s.checkFCM(r, body)
	f, faulted := s.record(s.newDelivery(FCM, HostFCM, r, body), req.token, status)

	switch {
	case faulted:
		s.answerFault(w, r, f)
	case status != http.StatusOK:
		writeFCMError(w, status, canonicalStatus[status], msg)
	case req.validateOnly:
		// A dry run answers FCM's fixed fake id.
		writeJSON(w, http.StatusOK, map[string]string{"name": "projects/" + s.project + "/messages/fake_message_id"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"name": "projects/" + s.project + "/messages/" + newUUID()})
	}
}

// fcmRequest is what checkFCM read of a send.
type fcmRequest struct {
	token        string
	validateOnly bool
}

// checkFCM checks a send as FCM would, returning 200 or the error status
// and message. Messages never mention the token unless the token is what
// is wrong: the client marks a device dead on INVALID_ARGUMENT about it.
func (s *Server) checkFCM(r *http.Request, body []byte) (fcmRequest, int, string) {
	var req fcmRequest
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/")
	project, ok2 := strings.CutSuffix(rest, "/messages:send")
	switch {
	case !ok || !ok2 || strings.Contains(project, "/"):
		return req, http.StatusNotFound, "The requested URL was not found on this server."
	case r.Method != http.MethodPost:
		return req, http.StatusMethodNotAllowed, "Method not allowed."
	case project != s.project:
		return req, http.StatusNotFound, "Requested entity was not found."
	}
	top, err := objectOf(body)
	if err != nil {
		return req, http.StatusBadRequest, "Invalid JSON payload received."
	}
	if msg := unknownKey(top, "message", "validate_only"); msg != "" {
		return req, http.StatusBadRequest, msg
	}
	if v, ok := top["validate_only"]; ok && json.Unmarshal(v, &req.validateOnly) != nil {
		return req, http.StatusBadRequest, "Invalid value at 'validate_only' (TYPE_BOOL)"
	}
	m, err := objectOf(top["message"])
	if err != nil {
		return req, http.StatusBadRequest, "Invalid value at 'message' (type.googleapis.com/google.firebase.fcm.v1.Message)"
	}
	if msg := checkMessage(m, &req.token); msg != "" {
		return req, http.StatusBadRequest, msg
	}
	// The size FCM's 4 KB limit is held to here is the message's JSON
	// without its token, as providers/fcm measures it.
	size := len(top["message"]) - len(`"token":`) - len(m["token"]) - 1
	if size > contract.MaxProviderPayload {
		return req, http.StatusBadRequest, "Message is too big"
	}
	return req, http.StatusOK, ""
}

// checkMessage checks a v1 Message's shape and sets token.
func checkMessage(m map[string]json.RawMessage, token *string) string {
	if msg := unknownKey(m, "token", "topic", "condition", "name", "data", "notification",
		"android", "webpush", "apns", "fcm_options"); msg != "" {
		return msg
	}
	if json.Unmarshal(m["token"], token) != nil || *token == "" {
		return "Recipient of the message is not set."
	}
	if msg := stringValues(m["data"], "message.data"); msg != "" {
		return msg
	}
	if msg := stringFields(m["notification"], "message.notification", "title", "body", "image"); msg != "" {
		return msg
	}
	raw, ok := m["android"]
	if !ok {
		return ""
	}
	a, err := objectOf(raw)
	if err != nil {
		return "Invalid value at 'message.android' (type.googleapis.com/google.firebase.fcm.v1.AndroidConfig)"
	}
	if msg := unknownKey(a, "collapse_key", "priority", "ttl", "restricted_package_name",
		"data", "notification", "fcm_options", "direct_boot_ok"); msg != "" {
		return msg
	}
	var priority, ttl string
	switch {
	case json.Unmarshal(orNull(a["priority"]), &priority) != nil ||
		(priority != "" && !strings.EqualFold(priority, "high") && !strings.EqualFold(priority, "normal")):
		return "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority)"
	case json.Unmarshal(orNull(a["ttl"]), &ttl) != nil || (ttl != "" && !ttlPattern.MatchString(ttl)):
		return "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)"
	}
	if !isString(a["collapse_key"]) {
		return "Invalid value at 'message.android.collapse_key' (TYPE_STRING)"
	}
	if msg := stringValues(a["data"], "message.android.data"); msg != "" {
		return msg
	}
	return stringFields(a["notification"], "message.android.notification", "channel_id", "tag", "title", "body")
}

// objectOf parses raw as one JSON object.
func objectOf(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, io.ErrUnexpectedEOF
	}
	return m, nil
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	_, err := objectOf(b)
	return err == nil && json.Valid(b)
}

// orNull returns raw, or the JSON null when raw is absent.
func orNull(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage("null")
	}
	return raw
}

// unknownKey names the first key of m not in known, as FCM words it.
func unknownKey(m map[string]json.RawMessage, known ...string) string {
	for k := range m {
		if !slices.Contains(known, k) {
			return `Invalid JSON payload received. Unknown name "` + k + `": Cannot find field.`
		}
	}
	return ""
}

// stringValues checks that raw, when present, maps keys to strings.
func stringValues(raw json.RawMessage, at string) string {
	if raw == nil {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "Invalid value at '" + at + "' (type.googleapis.com/google.protobuf.Struct)"
	}
	for k, v := range m {
		if !isString(v) {
			return "Invalid value at '" + at + "[" + k + "].value' (TYPE_STRING)"
		}
	}
	return ""
}

// stringFields checks that raw, when present, is an object whose keys
// named in fields are strings.
func stringFields(raw json.RawMessage, at string, fields ...string) string {
	if raw == nil {
		return ""
	}
	m, err := objectOf(raw)
	if err != nil {
		return "Invalid value at '" + at + "'"
	}
	for _, f := range fields {
		if !isString(m[f]) {
			return "Invalid value at '" + at + "." + f + "' (TYPE_STRING)"
		}
	}
	return ""
}

// isString reports whether raw is absent or a JSON string (not null).
func isString(raw json.RawMessage) bool {
	var s string
	return raw == nil || len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil
}

// writeFCMError answers FCM's v1 error shape. The status string is reason
// when reason is a canonical code name, else the one for the HTTP status.
func writeFCMError(w http.ResponseWriter, status int, reason, message string) {
	name := canonicalStatus[status]
	if canonicalNames[reason] {
		name = reason
	}
	if name == "" {
		name = "UNKNOWN"
	}
	type detail struct {
		Type      string `json:"@type"`
		ErrorCode string `json:"errorCode"`
	}
	var body struct {
		Error struct {
			Code    int      `json:"code"`
			Message string   `json:"message"`
			Status  string   `json:"status"`
			Details []detail `json:"details"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message, body.Error.Status = status, message, name
	body.Error.Details = []detail{{Type: fcmErrorType, ErrorCode: reason}}
	writeJSON(w, status, body)
}
