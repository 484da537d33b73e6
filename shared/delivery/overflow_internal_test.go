package delivery

import (
	"bytes"
	"testing"
)

// FuzzMayOverflow: mayOverflow's byte scan finds exactly the characters
// bytes.ContainsAny finds, in any bytes (invalid UTF-8 too).
func FuzzMayOverflow(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b", "a>b", "&", "\u2028", "x\u2029y", "\u2027\u202a",
		"\xe2\x80", "\xe2\x80\xa8", "\xe2\xe2\x80\xa9", "\xe2\x80\xa8"[:2] + "<", "é ü 日本"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := mayOverflow(b), bytes.ContainsAny(b, "<>&\u2028\u2029"); got != want {
			t.Errorf("mayOverflow(%q) = %v, want %v", b, got, want)
		}
	})
}
