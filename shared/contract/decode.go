package contract

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// object is one parsed JSON object: each key with its raw value. Duplicate
// keys are refused, and reading a key marks it used so that an unknown key is
// an error (the zod schemas are .strict()).
type object struct {
	fields map[string]json.RawMessage
	used   int
	err    error
}

// InvalidError is [ErrInvalidRequest] with the reason the decoder refused the
// request: a field and the rule it broke, such as "token is not an APNs
// token". The reason is written only from the decoder's words and the
// contract's field names, never from the request (a test feeds the decoders
// marked values and checks), so it may be shown to the person running the
// gateway; it never goes into a response body. Callers find it with
// errors.As and test the outcome with errors.Is(err, ErrInvalidRequest).
type InvalidError struct {
	// Reason names the field and the rule broken.
	Reason string
}

// Error returns the code and the reason.
func (e *InvalidError) Error() string { return ErrInvalidRequest.Error() + ": " + e.Reason }

// Unwrap returns ErrInvalidRequest.
func (e *InvalidError) Unwrap() error { return ErrInvalidRequest }

// invalid returns an [*InvalidError]. format is a constant and args are field
// names written in this package or limits, never a value of the request.
func invalid(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

// parseTop parses a whole request body: exactly one JSON object and nothing
// after it but white space. It reads the body once, in place.
func parseTop(body []byte) (*object, error) {
	o, end, err := readObject(body, "body")
	if err != nil {
		return nil, err
	}
	if skipSpace(body, end) != len(body) {
		return nil, invalid("trailing data after the body")
	}
	return o, nil
}

// parseObject parses raw, which must be a JSON object, refusing duplicate
// keys. Like the json.Decoder it replaced, it ignores whatever follows the
// object; every caller passes a value encoding/json or parseTop validated.
func parseObject(raw json.RawMessage, what string) (*object, error) {
	o, _, err := readObject(raw, what)
	return o, err
}

// readObject reads the JSON object that starts b, after white space: each
// key with its raw value, refusing duplicate keys. It returns the index just
// past the closing brace. The raw values are b's own bytes, not copies: an
// object lives only while its request is decoded.
//
// It gives the answers the json.Decoder it replaced gave, in the same order:
// every value is validated before its key is looked up, so a malformed value
// under a repeated key is malformed, not a repeat.
func readObject(b []byte, what string) (*object, int, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, invalid("%s is not an object", what)
	}
	o := &object{fields: make(map[string]json.RawMessage)}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return o, i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, 0, invalid("%s is malformed", what)
		}
		keyEnd := scanString(b, i)
		start := skipColon(b, keyEnd)
		if start < 0 {
			return nil, 0, invalid("%s is malformed", what)
		}
		end := skipValue(b, start)
		if end < 0 {
			return nil, 0, invalid("%s is malformed", what)
		}
		// Keys are compared as encoding/json decodes them, escapes
		// resolved; the key was validated, so it unquotes. A repeated key
		// leaves the map's length as it was, which finds it with one hash
		// of the key rather than a look-up and an insertion. The value's
		// capacity is cut so that appending to it cannot overwrite the
		// bytes after it.
		key, _ := unquote(b[i:keyEnd])
		n := len(o.fields)
		if o.fields[key] = b[start:end:end]; len(o.fields) == n {
			return nil, 0, invalid("%s repeats a key", what)
		}
		if i = skipSpace(b, end); i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return o, i + 1, nil
		}
		return nil, 0, invalid("%s is malformed", what)
	}
}

// take returns the raw value of key and whether it is present.
func (o *object) take(key string) (json.RawMessage, bool) {
	v, ok := o.fields[key]
	if ok {
		o.used++
	}
	return v, ok
}

// fail records the first error.
func (o *object) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// finish reports the first error, or an unknown key.
func (o *object) finish(what string) error {
	if o.err != nil {
		return o.err
	}
	if o.used != len(o.fields) {
		return invalid("%s has an unknown key", what)
	}
	return nil
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// str reads a string field. A missing required key, a null or a non-string is
// an error; present reports whether an optional key was given.
func (o *object) str(key string, required bool) (s string, present bool) {
	raw, ok := o.take(key)
	if !ok {
		if required {
			o.fail(invalid("%s is required", key))
		}
		return "", false
	}
	s, ok = unquote(raw)
	if !ok {
		o.fail(invalid("%s must be a string", key))
		return "", false
	}
	return s, true
}

// unquote returns the string the JSON value raw holds, and false when raw is
// not a string. raw was read by readObject, so it is valid JSON. A
// string with no escape and valid UTF-8 (the common form, and every long
// paneKey's) is its bytes as they stand, without encoding/json scanning it
// twice more; any other goes through json.Unmarshal, which also replaces
// invalid UTF-8 with U+FFFD as before.
func unquote(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// integer reads an integer field in [min, MaxSafeInteger]. Like JavaScript's
// Number.isInteger, 1.0 and 1e3 are integers.
func (o *object) integer(key string, required bool, min int64) (n int64, present bool) {
	raw, ok := o.take(key)
	if !ok {
		if required {
			o.fail(invalid("%s is required", key))
		}
		return 0, false
	}
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		o.fail(invalid("%s must be a number", key))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || f < float64(min) || f > MaxSafeInteger {
		o.fail(invalid("%s is out of range", key))
		return 0, false
	}
	return int64(f), true
}

// boolean reads an optional boolean field.
func (o *object) boolean(key string) (b bool, present bool) {
	raw, ok := o.take(key)
	if !ok {
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	o.fail(invalid("%s must be a boolean", key))
	return false, false
}

// version reads the required "v": 1.
func (o *object) version() {
	if v, ok := o.integer("v", true, 1); ok && v != 1 {
		o.fail(invalid("v must be 1"))
	}
}

// nested reads a required or optional object field.
func (o *object) nested(key string, required bool) (*object, bool) {
	raw, ok := o.take(key)
	if !ok {
		if required {
			o.fail(invalid("%s is required", key))
		}
		return nil, false
	}
	n, err := parseObject(raw, key)
	if err != nil {
		o.fail(err)
		return nil, false
	}
	return n, true
}

// stringArray reads a required array of strings.
func (o *object) stringArray(key string) []string {
	raw, ok := o.take(key)
	if !ok {
		o.fail(invalid("%s is required", key))
		return nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		o.fail(invalid("%s must be an array", key))
		return nil
	}
	// The elements are walked in place rather than copied out by
	// json.Unmarshal. raw was validated with its object, so anything but a
	// string where an element starts is an element of another type, and the
	// "must be an array" refusals in the loop are only for a raw that was
	// not, as json.Unmarshal refused it. There are no more elements than
	// commas plus one.
	out := make([]string, 0, bytes.Count(raw, []byte{','})+1)
	i := skipSpace(raw, 1)
	if i < len(raw) && raw[i] == ']' {
		return out
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			o.fail(invalid("%s must hold strings", key))
			return nil
		}
		end := scanString(raw, i)
		if end < 0 {
			o.fail(invalid("%s must be an array", key))
			return nil
		}
		s, _ := unquote(raw[i:end])
		out = append(out, s)
		switch i = skipSpace(raw, end); {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == ']':
			return out
		default:
			o.fail(invalid("%s must be an array", key))
			return nil
		}
	}
}

// UTF16Len returns the length of s as JavaScript counts it: UTF-16 code units.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// validOpaqueID reports whether s is an OpaqueId: valid UTF-8 of
// 1..MaxOpaqueID code units, none of them a control character (C0, DEL or
// C1). The original schema let control characters in, but PostgreSQL cannot
// store NUL in text (the gateway answered 500 and logged an error, and SQLite
// stored it as is), and no id an Orca desktop makes holds one, so both
// databases refuse them alike (issue "Hardening" §3). Likewise a path
// segment is percent-decoded into any bytes, and PostgreSQL refuses text
// that is not UTF-8 (SQLSTATE 22021, a 500) where SQLite answered 404, so
// both refuse it before any SQL (issue 26 §1).
func validOpaqueID(s string) bool {
	n := UTF16Len(s)
	return n >= 1 && n <= MaxOpaqueID && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// DecodeRegistrationID checks the registrationId of DELETE
// /v1/devices/{registrationId}: an OpaqueId like every id the gateway hands
// out. Anything else is ErrInvalidRequest.
func DecodeRegistrationID(s string) (string, error) {
	if !validOpaqueID(s) {
		return "", invalid("registrationId is out of range")
	}
	return s, nil
}

// DecodeKey32 decodes canonical padded standard base64 of exactly KeyBytes
// bytes: 43 alphabet characters and one '=', whose re-encoding round-trips.
func DecodeKey32(s string) ([]byte, bool) {
	if len(s) != 44 || s[43] != '=' {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != KeyBytes || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}
