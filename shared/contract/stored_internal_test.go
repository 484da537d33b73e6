package contract

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// storedPool holds what AppendJSString escapes, what only other encoders
// escape, and multi-byte and astral characters.
var storedPool = []rune{'"', '\\', '\n', '\r', '\t', '\b', '\f', '\x00', '\x01', '\x1f', '/', '<', '&',
	'\u007f', '\u2028', 'é', '😀', 'a', ' '}

func randStored(r *rand.Rand) Notification {
	text := func(max int) string {
		var b strings.Builder
		for range r.IntN(max + 1) {
			b.WriteRune(storedPool[r.IntN(len(storedPool))])
		}
		return b.String()
	}
	n := Notification{Seq: r.Int64N(MaxSafeInteger + 1), Epoch: "e" + text(8),
		Source: []Source{SourcePlugin, SourceTerminalBell}[r.IntN(2)], Title: "t" + text(20), Body: text(40)}
	if r.IntN(2) == 0 {
		n.NotificationID = "id-" + strings.Map(func(c rune) rune {
			if c < 0x20 || c > 0x7e {
				return 'x'
			}
			return c
		}, text(10))
	}
	if r.IntN(2) == 0 {
		b := r.IntN(2) == 0
		n.Sound = &b
	}
	n.Kind = []Kind{"", KindAlert, KindDismiss}[r.IntN(3)]
	if r.IntN(2) == 0 {
		n.ExpiresAt = 1 + r.Int64N(MaxSafeInteger)
	}
	n.AgentState = []AgentState{"", AgentNeedsInput, AgentFinished}[r.IntN(3)]
	if r.IntN(2) == 0 {
		n.WorktreeID = "w" + text(10)
	}
	if r.IntN(2) == 0 {
		n.PaneKey = []string{"", SealedPaneKeyPrefix}[r.IntN(2)] + "p" + text(10)
	}
	if r.IntN(2) == 0 {
		n.ExecutionHost = ExecutionHostPrefix + "h" + text(10)
	}
	n.Urgency = []Urgency{"", UrgencyHigh, UrgencyNormal}[r.IntN(3)]
	return n
}

// fallback decodes payload with encoding/json only.
func fallback(t testing.TB, payload []byte) ([]Notification, error) {
	t.Helper()
	var stored []storedNotification
	if err := json.Unmarshal(payload, &stored); err != nil {
		return nil, err
	}
	out := make([]Notification, len(stored))
	for i := range stored {
		out[i] = stored[i].notification()
	}
	return out, nil
}

// TestScanNotifications: the scanner reads everything AppendNotifications
// writes, exactly as encoding/json does; the summary scan reads the same
// with only the summary's fields ([DecodeSummaries]).
func TestScanNotifications(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		ns := make([]Notification, 1+r.IntN(4))
		for j := range ns {
			ns[j] = randStored(r)
		}
		payload := AppendNotifications(nil, ns)
		got, ok := scan(nil, payload, false)
		if !ok {
			t.Fatalf("case %d: scan gave up on %s", i, payload)
		}
		if diff := cmp.Diff(ns, got); diff != "" {
			t.Fatalf("case %d: scan (-want +got):\n%s", i, diff)
		}
		slow, err := fallback(t, payload)
		if err != nil {
			t.Fatalf("case %d: encoding/json: %v", i, err)
		}
		if diff := cmp.Diff(slow, got); diff != "" {
			t.Fatalf("case %d: scanner and encoding/json differ (-json +scan):\n%s", i, diff)
		}
		sum, ok := scan(nil, payload, true)
		if !ok {
			t.Fatalf("case %d: the summary scan gave up on %s", i, payload)
		}
		if diff := cmp.Diff(summariesOf(ns), sum); diff != "" {
			t.Fatalf("case %d: summary scan (-want +got):\n%s", i, diff)
		}
	}
	// Other valid forms are left to encoding/json, which reads them.
	canonical := `[{"notificationSeq":1,"notificationEpoch":"e","source":"plugin","agentState":null,"title":"t","body":""}]`
	for _, other := range []string{
		`[ ` + canonical[1:],
		strings.Replace(canonical, `"notificationSeq":1,"notificationEpoch":"e"`, `"notificationEpoch":"e","notificationSeq":1`, 1),
		strings.Replace(canonical, `"title":"t"`, `"title":"\u0074"`, 1),
	} {
		if _, ok := scan(nil, []byte(other), false); ok {
			t.Errorf("scan accepted the non-canonical %s", other)
		}
		got, err := DecodeNotifications(nil, []byte(other))
		if err != nil || len(got) != 1 || got[0].Title != "t" || got[0].Seq != 1 {
			t.Errorf("DecodeNotifications(%s) = %+v, %v", other, got, err)
		}
	}
}

// FuzzScanNotifications: whatever the scanner accepts, encoding/json reads
// the same way, and the same holds for the summary scan
// ([DecodeSummaries]) with only the summary's fields.
func FuzzScanNotifications(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		f.Add(AppendNotifications(nil, []Notification{randStored(r), randStored(r)}))
	}
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, summary := range []bool{false, true} {
			got, ok := scan(nil, payload, summary)
			if !ok {
				continue
			}
			want, err := fallback(t, payload)
			if err != nil {
				t.Fatalf("scanner (summary %v) accepted what encoding/json refuses (%v): %q", summary, err, payload)
			}
			if summary {
				want = summariesOf(want)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("scanner (summary %v) and encoding/json differ on %q (-json +scan):\n%s", summary, payload, diff)
			}
		}
	})
}

// summariesOf is ns with only the fields DecodeSummaries keeps.
func summariesOf(ns []Notification) []Notification {
	out := make([]Notification, len(ns))
	for i := range ns {
		out[i] = summaryFields(&ns[i])
	}
	return out
}

// TestDecodeSummaries: forms the summary scan leaves to encoding/json
// (non-canonical, and invalid UTF-8 in a field it skips) read with the same
// summary fields, and malformed payloads fail as they fail for
// DecodeNotifications.
func TestDecodeSummaries(t *testing.T) {
	canonical := `[{"notificationId":"a","notificationSeq":1,"notificationEpoch":"e","source":"plugin","agentState":"needs-input","title":"t","body":"","urgency":"normal"}]`
	want := []Notification{{NotificationID: "a", Seq: 1, Epoch: "e", AgentState: AgentNeedsInput, Urgency: UrgencyNormal}}
	for _, other := range []string{
		`[ ` + canonical[1:],
		strings.Replace(canonical, `"title":"t"`, `"title":"\u0074"`, 1),
		strings.Replace(canonical, `"title":"t"`, "\"title\":\"\xff\"", 1),
	} {
		if got, err := DecodeSummaries(nil, []byte(other)); err != nil || !cmp.Equal(want, got) {
			t.Errorf("DecodeSummaries(%s) = %+v, %v; want %+v", other, got, err, want)
		}
	}
	for _, bad := range []string{
		strings.Replace(canonical, `"title":"t"`, "\"title\":\"\x01\"", 1),
		strings.Replace(canonical, `"title":"t"`, `"title":"\q"`, 1),
		strings.Replace(canonical, `"body":""`, `"body":3`, 1),
		canonical[:len(canonical)-1],
	} {
		if got, err := DecodeSummaries(nil, []byte(bad)); err == nil {
			t.Errorf("DecodeSummaries(%q) = %+v, nil error", bad, got)
		}
	}
}

// TestAppendJSString: for valid UTF-8 without U+2028 and U+2029 (which only
// Go's encoder escapes), AppendJSString writes what encoding/json writes
// without HTML escaping, which for those strings is JSON.stringify's text.
func TestAppendJSString(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		var sb strings.Builder
		for range r.IntN(40) {
			if c := storedPool[r.IntN(len(storedPool))]; c != '\u2028' {
				sb.WriteRune(c)
			}
		}
		s := sb.String()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendJSString([]byte("x"), s); string(got) != "x"+strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("AppendJSString(%q) = %s, want x%s", s, got, want.String())
		}
	}
}
