// Package contracttest holds request bodies that break each rule of the
// contract, shared by the decoder tests and the handler tests (which check
// that each refused body changes no row). It must only be imported by tests.
package contracttest

import "strings"

// Case is one request body and whether the contract accepts it.
type Case struct {
	Name string
	Body string
	OK   bool
}

// Registrations returns registration bodies, valid and not: every field
// wrong in each way (reference-behaviour §2.3 with the decisions table).
func Registrations() []Case {
	hex64 := strings.Repeat("ab", 32)
	fcm := strings.Repeat("a", 40) + ":_.-"
	ios := func(extra string) string {
		return `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `","apnsEnvironment":"sandbox"` + extra + `}`
	}
	return []Case{
		{"ios", ios(""), true},
		{"ios with filter", ios(`,"filter":{"sources":["plugin","terminal-bell"],"agentStates":["finished"]}`), true},
		{"ios empty filter arrays", ios(`,"filter":{"sources":[],"agentStates":[]}`), true},
		{"ios 32 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64[:32] + `","apnsEnvironment":"production"}`, true},
		{"ios 4096 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + strings.Repeat("a", 4096) + `","apnsEnvironment":"production"}`, true},
		{"android", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `"}`, true},
		{"ios 4098 hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + strings.Repeat("a", 4098) + `","apnsEnvironment":"production"}`, false},
		{"ios odd hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"abc","apnsEnvironment":"sandbox"}`, false},
		{"ios empty token", `{"v":1,"deviceId":"d1","platform":"ios","token":"","apnsEnvironment":"sandbox"}`, false},
		{"ios non-hex", `{"v":1,"deviceId":"d1","platform":"ios","token":"zz","apnsEnvironment":"sandbox"}`, false},
		{"ios spaces", `{"v":1,"deviceId":"d1","platform":"ios","token":"ab cd ","apnsEnvironment":"sandbox"}`, false},
		{"ios no environment", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `"}`, false},
		{"ios bad environment", `{"v":1,"deviceId":"d1","platform":"ios","token":"` + hex64 + `","apnsEnvironment":"dev"}`, false},
		{"android with environment", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `","apnsEnvironment":"sandbox"}`, false},
		{"android short token", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm[:31] + `"}`, false},
		{"android bad char", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `/"}`, false},
		{"android long token", `{"v":1,"deviceId":"d1","platform":"android","token":"` + strings.Repeat("a", 4097) + `"}`, false},
		{"platform unknown", `{"v":1,"deviceId":"d1","platform":"web","token":"` + fcm + `"}`, false},
		{"platform number", `{"v":1,"deviceId":"d1","platform":1,"token":"` + fcm + `"}`, false},
		{"device id empty", `{"v":1,"deviceId":"","platform":"android","token":"` + fcm + `"}`, false},
		{"device id 129", `{"v":1,"deviceId":"` + strings.Repeat("d", 129) + `","platform":"android","token":"` + fcm + `"}`, false},
		{"device id missing", `{"v":1,"platform":"android","token":"` + fcm + `"}`, false},
		{"device id null", `{"v":1,"deviceId":null,"platform":"android","token":"` + fcm + `"}`, false},
		{"device id nul", `{"v":1,"deviceId":"d\u00001","platform":"android","token":"` + fcm + `"}`, false},
		{"device id newline", `{"v":1,"deviceId":"d\n1","platform":"android","token":"` + fcm + `"}`, false},
		{"device id DEL", `{"v":1,"deviceId":"d\u007f","platform":"android","token":"` + fcm + `"}`, false},
		{"device id C1", `{"v":1,"deviceId":"d\u0085","platform":"android","token":"` + fcm + `"}`, false},
		{"device id unicode", `{"v":1,"deviceId":"téléphone 😀","platform":"android","token":"` + fcm + `"}`, true},
		{"token missing", `{"v":1,"deviceId":"d1","platform":"android"}`, false},
		{"unknown key", `{"v":1,"deviceId":"d1","platform":"android","token":"` + fcm + `","deviceName":"x"}`, false},
		{"v missing", `{"deviceId":"d1","platform":"android","token":"` + fcm + `"}`, false},
		{"filter null", ios(`,"filter":null`), false},
		{"filter array", ios(`,"filter":[]`), false},
		{"filter unknown key", ios(`,"filter":{"sources":[],"agentStates":[],"x":1}`), false},
		{"filter missing array", ios(`,"filter":{"sources":[]}`), false},
		{"filter unknown source", ios(`,"filter":{"sources":["email"],"agentStates":[]}`), false},
		{"filter duplicate source", ios(`,"filter":{"sources":["plugin","plugin"],"agentStates":[]}`), false},
		{"filter duplicate state", ios(`,"filter":{"sources":[],"agentStates":["finished","finished"]}`), false},
		{"filter non-string", ios(`,"filter":{"sources":[1],"agentStates":[]}`), false},
		{"not json", `{"v":1,"deviceId":"d1"`, false},
		{"empty body", ``, false},
	}
}

// SendJSON returns a valid /v1/send body to registration "r1" whose
// notification has the given extra fields (a JSON fragment, or "").
func SendJSON(fields string) string {
	base := `"notificationSeq":1,"notificationEpoch":"e1","source":"agent-task-complete","agentState":null,"title":"t","body":""`
	if fields != "" {
		base += "," + fields
	}
	return `{"v":1,"registrationIds":["r1"],"notification":{` + base + `}}`
}

// Sends returns /v1/send bodies, valid and not: every field wrong in each
// way (reference-behaviour §2.3), then Gen D's fields (genDSends).
func Sends() []Case {
	long := func(n int, s string) string { return strings.Repeat(s, n) }
	return append([]Case{
		{"minimal", SendJSON(""), true},
		{"full", SendJSON(`"notificationId":"n1","sound":false,"kind":"alert","expiresAt":1,"worktreeId":"w"`), true},
		{"dismissal", SendJSON(`"notificationId":"n1","kind":"dismiss"`), true},
		{"title 80 astral units", strings.Replace(SendJSON(""), `"title":"t"`, `"title":"`+long(40, "😀")+`"`, 1), true},
		{"title 81 units", strings.Replace(SendJSON(""), `"title":"t"`, `"title":"`+long(40, "😀")+`a"`, 1), false},
		{"title empty", strings.Replace(SendJSON(""), `"title":"t"`, `"title":""`, 1), false},
		{"body 180", strings.Replace(SendJSON(""), `"body":""`, `"body":"`+long(180, "é")+`"`, 1), true},
		{"body 181", strings.Replace(SendJSON(""), `"body":""`, `"body":"`+long(181, "b")+`"`, 1), false},
		{"id 2048", SendJSON(`"notificationId":"` + long(2048, "%") + `"`), true},
		{"id 2049", SendJSON(`"notificationId":"` + long(2049, "a") + `"`), false},
		{"id empty", SendJSON(`"notificationId":""`), false},
		{"id newline", SendJSON(`"notificationId":"a\nb"`), false},
		{"id tab", SendJSON(`"notificationId":"a\tb"`), false},
		{"id nul", SendJSON(`"notificationId":"a\u0000b"`), false},
		{"id non-ascii", SendJSON(`"notificationId":"émoji"`), false},
		{"worktree 1100 wide", SendJSON(`"worktreeId":"` + long(1100, "界") + `"`), false},
		{"worktree 2049", SendJSON(`"worktreeId":"` + long(2049, "w") + `"`), false},
		{"worktree empty", SendJSON(`"worktreeId":""`), false},
		{"worktree null", SendJSON(`"worktreeId":null`), false},
		{"seq negative", strings.Replace(SendJSON(""), `"notificationSeq":1`, `"notificationSeq":-1`, 1), false},
		{"seq fraction", strings.Replace(SendJSON(""), `"notificationSeq":1`, `"notificationSeq":1.5`, 1), false},
		{"seq max safe", strings.Replace(SendJSON(""), `"notificationSeq":1`, `"notificationSeq":9007199254740991`, 1), true},
		{"seq over max safe", strings.Replace(SendJSON(""), `"notificationSeq":1`, `"notificationSeq":9007199254740993`, 1), false},
		{"seq string", strings.Replace(SendJSON(""), `"notificationSeq":1`, `"notificationSeq":"1"`, 1), false},
		{"epoch empty", strings.Replace(SendJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":""`, 1), false},
		{"epoch 129", strings.Replace(SendJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":"`+long(129, "e")+`"`, 1), false},
		{"epoch nul", strings.Replace(SendJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":"e\u00001"`, 1), false},
		{"epoch tab", strings.Replace(SendJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":"e\t1"`, 1), false},
		{"epoch C1", strings.Replace(SendJSON(""), `"notificationEpoch":"e1"`, `"notificationEpoch":"e\u009f"`, 1), false},
		{"registration id nul", strings.Replace(SendJSON(""), `["r1"]`, `["r\u00001"]`, 1), false},
		{"registration id newline", strings.Replace(SendJSON(""), `["r1"]`, `["r1\n"]`, 1), false},
		{"title with control characters", strings.Replace(SendJSON(""), `"title":"t"`, `"title":"a\u0000b\u0007c\u0085"`, 1), true},
		{"worktree with nul", SendJSON(`"worktreeId":"w\u0000"`), true},
		{"source unknown", strings.Replace(SendJSON(""), `"agent-task-complete"`, `"email"`, 1), false},
		{"agent state missing", strings.Replace(SendJSON(""), `"agentState":null,`, ``, 1), false},
		{"agent state unknown", strings.Replace(SendJSON(""), `"agentState":null`, `"agentState":"working"`, 1), false},
		{"agent state needs input", strings.Replace(SendJSON(""), `"agentState":null`, `"agentState":"needs-input"`, 1), true},
		{"sound string", SendJSON(`"sound":"no"`), false},
		{"kind unknown", SendJSON(`"kind":"update"`), false},
		{"dismissal without id", SendJSON(`"kind":"dismiss"`), false},
		{"expires zero", SendJSON(`"expiresAt":0`), false},
		{"expires negative", SendJSON(`"expiresAt":-5`), false},
		{"unknown notification key", SendJSON(`"pane":"p"`), false},
		{"unknown top key", strings.Replace(SendJSON(""), `{"v":1,`, `{"v":1,"x":true,`, 1), false},
		{"no ids", strings.Replace(SendJSON(""), `["r1"]`, `[]`, 1), false},
		{"21 copies of one id", strings.Replace(SendJSON(""), `["r1"]`, `[`+strings.TrimSuffix(long(21, `"r1",`), ",")+`]`, 1), false},
		{"20 copies of one id", strings.Replace(SendJSON(""), `["r1"]`, `[`+strings.TrimSuffix(long(20, `"r1",`), ",")+`]`, 1), true},
		{"id not string", strings.Replace(SendJSON(""), `["r1"]`, `[1]`, 1), false},
		{"ids not array", strings.Replace(SendJSON(""), `["r1"]`, `"r1"`, 1), false},
		{"notification missing", `{"v":1,"registrationIds":["r1"]}`, false},
	}, append(genDSends(), urgencySends()...)...)
}

// urgencySends returns /v1/send bodies with the optional urgency (issue
// "What the phone shows"): "high" or "normal", nothing else.
func urgencySends() []Case {
	u := func(v string) string { return SendJSON(`"urgency":` + v) }
	return []Case{
		{"urgency high", u(`"high"`), true},
		{"urgency normal", u(`"normal"`), true},
		{"urgency normal on a dismissal", SendJSON(`"notificationId":"n1","kind":"dismiss","urgency":"normal"`), true},
		{"urgency upper-case", u(`"HIGH"`), false},
		{"urgency low", u(`"low"`), false},
		{"urgency empty", u(`""`), false},
		{"urgency null", u(`null`), false},
		{"urgency number", u(`10`), false},
		{"urgency padded", u(`" normal"`), false},
		// The urgency counts in the 3000-byte rule: 3000 bytes with it, then
		// 3001, which without the urgency would be 2982.
		{"urgency at 3000 bytes", SendJSON(`"paneKey":"` + strings.Repeat("p", 2048) + `","executionHost":"runtime:` +
			strings.Repeat("h", 776) + `","urgency":"normal"`), true},
		{"urgency over 3000 bytes", SendJSON(`"paneKey":"` + strings.Repeat("p", 2048) + `","executionHost":"runtime:` +
			strings.Repeat("h", 777) + `","urgency":"normal"`), false},
	}
}

// genDSends returns /v1/send bodies exercising Gen D's paneKey and
// executionHost (decisions table; issue "Today's Orca desktops and phones"),
// valid and not. Lengths are UTF-16 code units: an astral character counts
// 2, 'é' counts 1 (and 2 bytes), so a byte or a rune count gets the
// boundary cases wrong. Escapes such as \u00a0 are JSON's, in the body.
func genDSends() []Case {
	long := func(n int, s string) string { return strings.Repeat(s, n) }
	pane := func(v string) string { return SendJSON(`"paneKey":"` + v + `"`) }
	host := func(v string) string { return SendJSON(`"executionHost":"` + v + `"`) }
	return []Case{
		{"pane key", pane("p"), true},
		{"sealed pane key", pane("e2e1:" + long(100, "A") + "=="), true},
		{"pane key any characters", pane(`a b|c\n\u0001😀<&>`), true},
		{"pane key 2048", pane(long(2048, "p")), true},
		{"pane key 2049", pane(long(2049, "p")), false},
		{"pane key 2046 and a surrogate pair", pane(long(2046, "p") + "😀"), true},
		{"pane key 2047 and a surrogate pair", pane(long(2047, "p") + "😀"), false},
		{"pane key 2047 and a two-byte unit", pane(long(2047, "p") + "é"), true},
		{"pane key empty", pane(""), false},
		{"pane key null", SendJSON(`"paneKey":null`), false},
		{"pane key number", SendJSON(`"paneKey":1`), false},
		{"execution host", host("runtime:env%201"), true},
		{"execution host local", host("local"), false},
		{"execution host ssh", host("ssh:box"), false},
		{"execution host bare prefix", host("runtime:"), false},
		{"execution host pipe", host("runtime:a|b"), false},
		{"execution host upper-case prefix", host("Runtime:a"), false},
		{"execution host empty", host(""), false},
		{"execution host null", SendJSON(`"executionHost":null`), false},
		{"execution host 2048", host("runtime:" + long(2040, "x")), true},
		{"execution host 2049", host("runtime:" + long(2041, "x")), false},
		{"execution host prefix and 2048", host("runtime:" + long(2048, "x")), false},
		{"execution host 2046 and a surrogate pair", host("runtime:" + long(2038, "x") + "😀"), true},
		{"execution host 2047 and a surrogate pair", host("runtime:" + long(2039, "x") + "😀"), false},
		{"execution host space", host("runtime:a b"), false},
		{"execution host tab", host(`runtime:a\tb`), false},
		{"execution host VT", host(`runtime:a\u000bb`), false},
		{"execution host FF", host(`runtime:a\fb`), false},
		{"execution host NBSP", host(`runtime:a\u00a0b`), false},
		{"execution host BOM", host(`runtime:a\ufeffb`), false},
		{"execution host U+1680", host(`runtime:a\u1680b`), false},
		{"execution host U+2000", host(`runtime:a\u2000b`), false},
		{"execution host U+200A", host(`runtime:a\u200ab`), false},
		{"execution host U+2028", host(`runtime:a\u2028b`), false},
		{"execution host U+2029", host(`runtime:a\u2029b`), false},
		{"execution host U+202F", host(`runtime:a\u202fb`), false},
		{"execution host U+205F", host(`runtime:a\u205fb`), false},
		{"execution host U+3000", host(`runtime:a\u3000b`), false},
		{"execution host trailing LF", host(`runtime:ab\n`), false},
		{"execution host trailing CR", host(`runtime:ab\r`), false},
		// Not JavaScript white space, though unicode.IsSpace says U+0085 is.
		{"execution host NEL", host(`runtime:a\u0085b`), true},
		{"execution host U+200B", host(`runtime:a\u200bb`), true},
		{"execution host U+180E", host(`runtime:a\u180eb`), true},
		{"both", SendJSON(`"notificationId":"n1","kind":"alert","paneKey":"e2e1:AAAA","executionHost":"runtime:h"`), true},
		{"both on a dismissal", SendJSON(`"notificationId":"n1","kind":"dismiss","paneKey":"e2e1:AAAA","executionHost":"runtime:h"`), true},
		{"both over 3000 bytes", SendJSON(`"paneKey":"` + long(2048, "p") + `","executionHost":"runtime:` + long(1000, "h") + `"`), false},
	}
}

// Badges returns PUT /v1/devices/{registrationId}/badge bodies, valid and
// not (issue "What the phone shows"): {"v":1,"count":N}, N an integer
// 0..MaxBadge.
func Badges() []Case {
	count := func(v string) string { return `{"v":1,"count":` + v + `}` }
	return []Case{
		{"badge zero", count("0"), true},
		{"badge one", count("1"), true},
		{"badge max", count("99999"), true},
		{"badge integral float", count("7.0"), true},
		{"badge over max", count("100000"), false},
		{"badge negative", count("-1"), false},
		{"badge fraction", count("1.5"), false},
		{"badge string", count(`"3"`), false},
		{"badge null", count("null"), false},
		{"badge bool", count("true"), false},
		{"badge huge", count("1e400"), false},
		{"badge missing", `{"v":1}`, false},
		{"badge v 2", `{"v":2,"count":1}`, false},
		{"badge v missing", `{"count":1}`, false},
		{"badge unknown key", `{"v":1,"count":1,"x":1}`, false},
		{"badge repeated key", `{"v":1,"count":1,"count":2}`, false},
		{"badge not an object", `[1]`, false},
		{"badge trailing data", count("1") + `{}`, false},
		{"badge empty body", ``, false},
	}
}
