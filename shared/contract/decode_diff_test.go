package contract

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract/contracttest"
)

// nest returns a value of depth arrays, each holding the next.
func nest(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// nestObjects returns a value of depth objects, each holding the next.
func nestObjects(depth int) string {
	return strings.Repeat(`{"k":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// parseCases are the inputs the reader is checked on by name, with the
// Reason parseTop gives ("" when it accepts). They seed the fuzz test too.
func parseCases() []struct{ name, body, reason string } {
	const (
		notObject = "body is not an object"
		malformed = "body is malformed"
		repeats   = "body repeats a key"
		trailing  = "trailing data after the body"
	)
	return []struct{ name, body, reason string }{
		{"empty", ``, notObject},
		{"only white space", " \t\r\n", notObject},
		{"null", `null`, notObject},
		{"array", `[]`, notObject},
		{"string", `"{}"`, notObject},
		{"number", `1`, notObject},
		{"closing brace", `}`, notObject},
		{"unterminated string", `"abc`, notObject},
		{"form feed before", "\f{}", notObject},
		{"vertical tab before", "\v{}", notObject},
		{"byte order mark", "\ufeff{}", notObject},
		{"nul before", "\x00{}", notObject},

		{"empty object", `{}`, ""},
		{"empty object spaced", " \t\r\n{ \t\r\n} \t\r\n", ""},
		{"white space everywhere", " \t\n\r{ \t\n\r\"a\" \t\n\r: \t\n\r[ 1 , { \"b\" : null } , [ ] , { } ] \t\n\r, \"c\"\n:\ttrue\r} \n", ""},
		{"all value kinds", `{"s":"x","n":-1.5e+3,"t":true,"f":false,"z":null,"a":[1,"2",[3],{"4":4}],"o":{"p":{"q":[]}}}`, ""},
		{"numbers", `{"a":-0,"b":1e3,"c":1E+3,"d":1.5e-7,"e":0.0,"f":-0.0e-0,"g":123456789012345678901234567890,"h":0E0}`, ""},
		{"escapes", `{"a\n\"\\\/\b\f\r\t\u0041\u00e9\ud83d\ude00":"\u0000\u001F\uFFFF\ud800"}`, ""},
		{"invalid UTF-8 accepted", "{\"a\xff\":\"\xfe\xc0\x80\xed\xa0\x80\"}", ""},
		{"DEL and high bytes", "{\"\x7f\":\"\x7f\u00e9\"}", ""},
		{"keys differ in case", `{"a":1,"A":2}`, ""},
		{"keys differ in normalisation", `{"é":1,"e\u0301":2}`, ""},
		{"empty key", `{"":1}`, ""},
		{"value depth 10000", `{"a":` + nest(maxNestingDepth) + `}`, ""},
		{"object depth 10000", `{"a":` + nestObjects(maxNestingDepth) + `}`, ""},
		{"value depth 9999 beside", `{"a":1,"b":` + nest(maxNestingDepth-1) + `}`, ""},

		{"trailing object", `{}{}`, trailing},
		{"trailing garbage", `{} x`, trailing},
		{"trailing brace", `{}}`, trailing},
		{"trailing open brace", `{} {`, trailing},
		{"trailing form feed", "{}\f", trailing},
		{"trailing nul", "{}\x00", trailing},
		{"trailing unterminated string", `{}"`, trailing},

		{"open brace only", `{`, malformed},
		{"key only", `{"a"`, malformed},
		{"colon at end", `{"a":`, malformed},
		{"value at end", `{"a":1`, malformed},
		{"comma at end", `{"a":1,`, malformed},
		{"trailing comma", `{"a":1,}`, malformed},
		{"lone comma", `{,}`, malformed},
		{"leading comma", `{,"a":1}`, malformed},
		{"double comma", `{"a":1,,"b":2}`, malformed},
		{"missing comma", `{"a":1 "b":2}`, malformed},
		{"missing colon", `{"a" 1}`, malformed},
		{"double colon", `{"a"::1}`, malformed},
		{"missing value", `{"a":}`, malformed},
		{"bare key", `{a:1}`, malformed},
		{"number key", `{1:1}`, malformed},
		{"object key", `{{}:1}`, malformed},
		{"array close", `{"a":1]`, malformed},
		{"array open", `{[`, malformed},
		{"array trailing comma", `{"a":[1,]}`, malformed},
		{"array missing comma", `{"a":[1 2]}`, malformed},
		{"array leading comma", `{"a":[,1]}`, malformed},
		{"array unclosed", `{"a":[1}`, malformed},
		{"array closed by a brace", `{"a":[}}`, malformed},
		{"object closed by a bracket", `{"a":{]}`, malformed},
		{"nested key without value", `{"a":{"b"}}`, malformed},
		{"nested trailing comma", `{"a":{"b":1,}}`, malformed},
		{"nested bare key", `{"a":{b:1}}`, malformed},
		{"nested unclosed", `{"a":{"b":1]}`, malformed},
		{"control byte in value", "{\"a\":\"\x01\"}", malformed},
		{"newline in value", "{\"a\":\"\n\"}", malformed},
		{"control byte in key", "{\"a\x1f\":1}", malformed},
		{"unterminated key", `{"a:1}`, malformed},
		{"unterminated value", `{"a":"1}`, malformed},
		{"bad escape", `{"a":"\x"}`, malformed},
		{"bad escape in key", `{"\a":1}`, malformed},
		{"short unicode escape", `{"a":"\u12"}`, malformed},
		{"bad unicode escape", `{"a":"\u12G4"}`, malformed},
		{"escape at end", `{"a":"\`, malformed},
		{"unicode escape at end", `{"a":"\u123`, malformed},
		{"leading zero", `{"a":01}`, malformed},
		{"negative leading zero", `{"a":-01}`, malformed},
		{"bare dot", `{"a":1.}`, malformed},
		{"dot first", `{"a":.5}`, malformed},
		{"bare minus", `{"a":-}`, malformed},
		{"minus at end", `{"a":-`, malformed},
		{"plus", `{"a":+1}`, malformed},
		{"bare exponent", `{"a":1e}`, malformed},
		{"bare exponent sign", `{"a":1e+}`, malformed},
		{"two dots", `{"a":1.2.3}`, malformed},
		{"hex", `{"a":0x1}`, malformed},
		{"infinity", `{"a":Infinity}`, malformed},
		{"short true", `{"a":tru}`, malformed},
		{"long null", `{"a":nulll}`, malformed},
		{"capital true", `{"a":True}`, malformed},
		{"short false at end", `{"a":fals`, malformed},
		{"literal then letter", `{"a":truex}`, malformed},
		{"single quotes", `{'a':1}`, malformed},
		{"value depth 10001", `{"a":` + nest(maxNestingDepth+1) + `}`, malformed},
		{"object depth 10001", `{"a":` + nestObjects(maxNestingDepth+1) + `}`, malformed},

		{"repeated key", `{"a":1,"a":2}`, repeats},
		{"repeated key, other value types", `{"a":[],"b":0,"a":{}}`, repeats},
		{"repeated key by escape", `{"a":1,"\u0061":2}`, repeats},
		{"repeated key by escaped slash", `{"/":1,"\/":2}`, repeats},
		{"repeated lone surrogates", `{"\ud800":1,"\udc00":2}`, repeats},
		{"repeated invalid UTF-8", "{\"\xff\":1,\"\xfe\":2}", repeats},
		{"invalid UTF-8 repeats U+FFFD", "{\"\xff\":1,\"\ufffd\":2}", repeats},
		{"repeated empty key", `{"":1,"":2}`, repeats},
		{"repeat before a trailing comma", `{"a":1,"a":2,}`, repeats},
		{"repeat before a bad separator", `{"a":1,"a":2]`, repeats},
		{"repeat read as 0 before 1", `{"a":1,"a":01}`, repeats},
		{"repeat read as true before x", `{"a":1,"a":truex}`, repeats},
		{"repeat at end", `{"a":1,"a":2`, repeats},
		{"repeat before trailing data", `{"a":1,"a":2}x`, repeats},
		{"malformed repeat", `{"a":1,"a":tru}`, malformed},
		{"malformed repeat string", `{"a":1,"a":"x`, malformed},
		{"malformed repeat array", `{"a":1,"a":[1,]}`, malformed},
		{"repeat without colon", `{"a":1,"a"}`, malformed},
	}
}

// sameResult fails t unless the two results are the same: both accepted
// with the same keys and raw values, or both refused with the same
// *InvalidError reason.
func sameResult(t *testing.T, label string, input []byte, got *object, gotErr error, want *object, wantErr error) {
	t.Helper()
	if reason(gotErr) != reason(wantErr) {
		t.Fatalf("%s(%q): reason %q, encoding/json %q", label, input, reason(gotErr), reason(wantErr))
	}
	if gotErr != nil {
		if got != nil {
			t.Fatalf("%s(%q): an object with the error %v", label, input, gotErr)
		}
		return
	}
	if len(got.fields) != len(want.fields) {
		t.Fatalf("%s(%q): %d fields, encoding/json %d", label, input, len(got.fields), len(want.fields))
	}
	for k, w := range want.fields {
		if g, ok := got.fields[k]; !ok || !bytes.Equal(g, w) {
			t.Fatalf("%s(%q): field %q is %q (present %v), encoding/json %q", label, input, k, g, ok, w)
		}
	}
}

// reason returns the Reason of an *InvalidError, "" for nil, and a marker
// for any other error so that it never matches.
func reason(err error) string {
	if err == nil {
		return ""
	}
	var ie *InvalidError
	if !errors.As(err, &ie) {
		return "not an InvalidError: " + err.Error()
	}
	return ie.Reason
}

// checkAgainstOracle compares parseTop and parseObject with the
// json.Decoder reader on body, and, for each field of an object it accepts,
// parseObject as nested uses it and stringArray.
func checkAgainstOracle(t *testing.T, body []byte) {
	t.Helper()
	got, gotErr := parseTop(body)
	want, wantErr := oracleParseTop(body)
	sameResult(t, "parseTop", body, got, gotErr, want, wantErr)

	gotObj, gotErr := parseObject(body, "x")
	wantObj, wantErr := oracleParseObject(body, "x")
	sameResult(t, "parseObject", body, gotObj, gotErr, wantObj, wantErr)
	if wantErr != nil {
		return
	}
	for k, raw := range wantObj.fields {
		g, gErr := parseObject(raw, k)
		w, wErr := oracleParseObject(raw, k)
		sameResult(t, "parseObject", raw, g, gErr, w, wErr)

		a, b := &object{fields: wantObj.fields}, &object{fields: wantObj.fields}
		gs, ws := a.stringArray(k), b.oracleStringArray(k)
		if !reflect.DeepEqual(gs, ws) || reason(a.err) != reason(b.err) || a.used != b.used {
			t.Fatalf("stringArray(%q) = %q, %v (used %d), encoding/json %q, %v (used %d)",
				raw, gs, a.err, a.used, ws, b.err, b.used)
		}
	}
}

func TestParseTopCases(t *testing.T) {
	for _, tt := range parseCases() {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := oracleParseTop([]byte(tt.body)); reason(err) != tt.reason {
				t.Fatalf("encoding/json: reason %q, want %q", reason(err), tt.reason)
			}
			if _, err := parseTop([]byte(tt.body)); reason(err) != tt.reason {
				t.Fatalf("parseTop: reason %q, want %q", reason(err), tt.reason)
			}
			checkAgainstOracle(t, []byte(tt.body))
		})
	}
}

// TestParseObjectIgnoresTrailingData: parseObject, like the json.Decoder it
// replaced, reads one object and leaves what follows.
func TestParseObjectIgnoresTrailingData(t *testing.T) {
	for _, body := range []string{`{"a":1} x`, `{"a":1}{`, `{"a":1}]`} {
		o, err := parseObject([]byte(body), "x")
		if err != nil || string(o.fields["a"]) != "1" {
			t.Errorf("parseObject(%q) = %v, %v; want a=1", body, o, err)
		}
		checkAgainstOracle(t, []byte(body))
	}
}

// TestStringArray checks stringArray's answers, and the old one's, by name.
func TestStringArray(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string
		reason    string
	}{
		{"empty", `[]`, []string{}, ""},
		{"empty spaced", "[ \n]", []string{}, ""},
		{"strings", ` [ "a" , "b\u0063" ,"\ud800","` + "\xff" + `" ] `, []string{"a", "bc", "\ufffd", "\ufffd"}, ""},
		{"commas inside", `["a,b",","]`, []string{"a,b", ","}, ""},
		{"null", `null`, nil, "k must be an array"},
		{"object", `{}`, nil, "k must be an array"},
		{"string", `"[]"`, nil, "k must be an array"},
		{"number", `[1]`, nil, "k must hold strings"},
		{"null element", `["a",null]`, nil, "k must hold strings"},
		{"nested", `[["a"]]`, nil, "k must hold strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseTop([]byte(`{"k":` + tt.raw + `}`))
			if err != nil {
				t.Fatal(err)
			}
			got := o.stringArray("k")
			if !reflect.DeepEqual(got, tt.want) || reason(o.err) != tt.reason {
				t.Errorf("stringArray = %#v, %v; want %#v, %q", got, o.err, tt.want, tt.reason)
			}
			checkAgainstOracle(t, []byte(`{"k":`+tt.raw+`}`))
		})
	}
}

// FuzzParseTopMatchesEncodingJSON checks that for any input the scanner's
// reader gives the json.Decoder reader's answer: the same refusal reason,
// or the same keys with the same raw values; and that parseObject and
// stringArray agree with theirs too.
func FuzzParseTopMatchesEncodingJSON(f *testing.F) {
	for _, c := range parseCases() {
		f.Add([]byte(c.body))
	}
	for _, c := range append(contracttest.Sends(), contracttest.Registrations()...) {
		f.Add([]byte(c.Body))
	}
	f.Fuzz(checkAgainstOracle)
}
