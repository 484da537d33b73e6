package pushtest

import (
	"math/rand/v2"
	"strings"
	"unicode"

	"onorca.dev/push/shared/contract"
)

// runePool mixes what grows JSON the most: quotes, backslashes and control
// characters (escaped by every encoder), '<', '>' and '&' and U+2028/U+2029
// (escaped by Go's encoder only), multi-byte and astral characters (2 UTF-16
// units, 4 bytes), and plain ASCII.
var runePool = []rune{'"', '\\', '\n', '\x01', '\x1f', '<', '>', '&', '\u2028', '\u2029', 'é', '€', '✓', '😀', '𝄞', 'a', 'Z', '0', ' '}

// printablePool is the notificationId alphabet's worst cases (printable
// ASCII only, reference-behaviour §2.3).
var printablePool = []byte{'"', '\\', '<', '>', '&', 'a', '~', ' ', '0'}

// RandomNotification returns a valid alert whose fields are drawn up to
// every contract limit: title up to MaxTitle and body up to MaxBody
// UTF-16 units, notificationId up to MaxNotificationID, worktreeId up to
// MaxWorktreeID, paneKey (sealed or not) up to MaxPaneKey, executionHost up
// to MaxExecutionHost, and the whole JSON within MaxNotificationBytes
// (fields are shortened until it fits). With plain set, no character that only Go's
// encoder escapes ('<', '>', '&', U+2028, U+2029) is used.
//
// scale divides every length limit (1 draws up to the limits themselves);
// a scale above 1 also keeps notificationSeq small, so that summaries of
// MaxBatchMembers members can fit the payload budget.
func RandomNotification(r *rand.Rand, plain bool, scale int) contract.Notification {
	upTo := func(limit int) int { return r.IntN(max(limit/scale, 1) + 1) }
	seq := r.Int64N(contract.MaxSafeInteger + 1)
	if scale > 1 {
		seq = r.Int64N(1000)
	}
	n := contract.Notification{
		Seq:        seq,
		Epoch:      randOpaque(r, 1+upTo(contract.MaxOpaqueID-1), plain),
		Source:     []contract.Source{contract.SourceAgentTaskComplete, contract.SourceTerminalBell, contract.SourcePlugin}[r.IntN(3)],
		AgentState: []contract.AgentState{"", contract.AgentNeedsInput, contract.AgentFinished}[r.IntN(3)],
		Title:      randText(r, 1+upTo(contract.MaxTitle-1), plain),
		Body:       randText(r, upTo(contract.MaxBody), plain),
	}
	if r.IntN(8) > 0 {
		n.NotificationID = randID(r, 1+upTo(contract.MaxNotificationID-1), plain)
	}
	if r.IntN(2) == 0 {
		n.WorktreeID = randText(r, 1+upTo(contract.MaxWorktreeID-1), plain)
	}
	if r.IntN(4) == 0 {
		b := r.IntN(2) == 0
		n.Sound = &b
	}
	if r.IntN(4) == 0 {
		n.ExpiresAt = 1 + r.Int64N(contract.MaxSafeInteger)
	}
	if r.IntN(2) == 0 {
		prefix := []string{"", contract.SealedPaneKeyPrefix}[r.IntN(2)]
		n.PaneKey = prefix + randText(r, 1+upTo(contract.MaxPaneKey-len(prefix)-1), plain)
	}
	if r.IntN(2) == 0 {
		n.ExecutionHost = contract.ExecutionHostPrefix +
			hostText(randText(r, 1+upTo(contract.MaxExecutionHost-len(contract.ExecutionHostPrefix)-1), plain))
	}
	for len(n.AppendJSON(nil, true)) > contract.MaxNotificationBytes {
		switch r.IntN(5) {
		case 0:
			n.NotificationID = n.NotificationID[:len(n.NotificationID)*3/4]
		case 1:
			n.WorktreeID = truncateUnits(n.WorktreeID, contract.UTF16Len(n.WorktreeID)*3/4)
		case 2:
			n.PaneKey = truncateUnits(n.PaneKey, contract.UTF16Len(n.PaneKey)*3/4)
		case 3:
			rest := strings.TrimPrefix(n.ExecutionHost, contract.ExecutionHostPrefix)
			if rest = truncateUnits(rest, contract.UTF16Len(rest)*3/4); rest != "" {
				n.ExecutionHost = contract.ExecutionHostPrefix + rest
			} else {
				n.ExecutionHost = ""
			}
		default:
			if e := truncateUnits(n.Epoch, contract.UTF16Len(n.Epoch)*3/4); e != "" {
				n.Epoch = e
			}
		}
	}
	return n
}

// randText returns text of at most units UTF-16 code units.
func randText(r *rand.Rand, units int, plain bool) string {
	var sb strings.Builder
	for n := 0; n < units; {
		c := runePool[r.IntN(len(runePool))]
		if plain && (c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029') {
			continue
		}
		w := 1
		if c > 0xffff {
			w = 2
		}
		if n+w > units {
			c, w = 'x', 1
		}
		sb.WriteRune(c)
		n += w
	}
	return sb.String()
}

// randOpaque returns text of at most units UTF-16 code units with no
// control character, as an OpaqueId must be.
func randOpaque(r *rand.Rand, units int, plain bool) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return 'x'
		}
		return c
	}, randText(r, units, plain))
}

// hostText is s with what executionHost refuses after its prefix ('|' and
// the JavaScript white space runePool holds) replaced by 'x', one UTF-16
// unit for one.
func hostText(s string) string {
	return strings.Map(func(c rune) rune {
		switch c {
		case '|', ' ', '\n', '\u2028', '\u2029':
			return 'x'
		}
		return c
	}, s)
}

// randID returns a printable ASCII id of length n.
func randID(r *rand.Rand, n int, plain bool) string {
	b := make([]byte, 0, n)
	for len(b) < n {
		c := printablePool[r.IntN(len(printablePool))]
		if plain && (c == '<' || c == '>' || c == '&') {
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// truncateUnits cuts s to at most units UTF-16 code units on a rune
// boundary.
func truncateUnits(s string, units int) string {
	n := 0
	for i, c := range s {
		w := 1
		if c > 0xffff {
			w = 2
		}
		if n+w > units {
			return s[:i]
		}
		n += w
	}
	return s
}
