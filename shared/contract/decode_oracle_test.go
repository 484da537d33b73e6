package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// This file keeps the object reader that parseTop and parseObject replaced,
// built on encoding/json's Decoder, as the oracle the differential tests
// compare the scanner with. It is the old code unchanged but for its names.

// oracleParseTop is the old parseTop.
func oracleParseTop(body []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	o, err := oracleReadObject(dec, "body")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("trailing data after the body")
	}
	return o, nil
}

// oracleParseObject is the old parseObject.
func oracleParseObject(raw json.RawMessage, what string) (*object, error) {
	return oracleReadObject(json.NewDecoder(bytes.NewReader(raw)), what)
}

// oracleReadObject is the old readObject: one JSON object read from dec as
// tokens, each value copied out with dec.Decode.
func oracleReadObject(dec *json.Decoder, what string) (*object, error) {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, invalid("%s is not an object", what)
	}
	o := &object{fields: make(map[string]json.RawMessage)}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("%s is malformed", what)
		}
		key := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid("%s is malformed", what)
		}
		if _, dup := o.fields[key]; dup {
			return nil, invalid("%s repeats a key", what)
		}
		o.fields[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, invalid("%s is malformed", what)
	}
	return o, nil
}

// oracleStringArray is the old stringArray, which read the array with
// json.Unmarshal.
func (o *object) oracleStringArray(key string) []string {
	raw, ok := o.take(key)
	if !ok {
		o.fail(invalid("%s is required", key))
		return nil
	}
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		o.fail(invalid("%s must be an array", key))
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := unquote(it)
		if !ok {
			o.fail(invalid("%s must hold strings", key))
			return nil
		}
		out = append(out, s)
	}
	return out
}
