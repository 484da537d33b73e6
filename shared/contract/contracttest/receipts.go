package contracttest

import (
	"strconv"
	"strings"
)

// ReceiptsJSON returns a receipts request for the given events, each the
// fields of one event object.
func ReceiptsJSON(events ...string) string {
	for i, e := range events {
		events[i] = "{" + e + "}"
	}
	return `{"v":1,"events":[` + strings.Join(events, ",") + `]}`
}

// Receipts returns POST /v1/receipts bodies, valid and not: every field wrong
// in each way (issue "delivery receipts").
func Receipts() []Case {
	ev := `"notificationEpoch":"e1","notificationSeq":1`
	many := func(n int) string {
		events := make([]string, n)
		for i := range events {
			events[i] = `"notificationEpoch":"e1","notificationSeq":` + strconv.Itoa(i)
		}
		return ReceiptsJSON(events...)
	}
	return []Case{
		{"one alert", ReceiptsJSON(ev), true},
		{"kind alert", ReceiptsJSON(`"kind":"alert",` + ev), true},
		{"kind dismiss", ReceiptsJSON(`"kind":"dismiss",` + ev), true},
		{"twenty", many(20), true},
		{"repeated event", ReceiptsJSON(ev, ev), true},
		{"seq 0", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":0`), true},
		{"seq max safe", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":9007199254740991`), true},
		{"seq 1.0", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":1.0`), true},
		{"epoch 128", ReceiptsJSON(`"notificationEpoch":"` + strings.Repeat("e", 128) + `","notificationSeq":1`), true},
		{"epoch unicode", ReceiptsJSON(`"notificationEpoch":"époque 😀","notificationSeq":1`), true},
		{"no events", ReceiptsJSON(), false},
		{"twenty-one", many(21), false},
		{"events missing", `{"v":1}`, false},
		{"events null", `{"v":1,"events":null}`, false},
		{"events object", `{"v":1,"events":{}}`, false},
		{"event not an object", `{"v":1,"events":["e1"]}`, false},
		{"event null", `{"v":1,"events":[null]}`, false},
		{"event empty", ReceiptsJSON(``), false},
		{"v missing", `{"events":[{` + ev + `}]}`, false},
		{"v 2", `{"v":2,"events":[{` + ev + `}]}`, false},
		{"v string", `{"v":"1","events":[{` + ev + `}]}`, false},
		{"unknown key", `{"v":1,"events":[{` + ev + `}],"host":"x"}`, false},
		{"event unknown key", ReceiptsJSON(ev + `,"notificationId":"n1"`), false},
		{"repeated key", `{"v":1,"v":1,"events":[{` + ev + `}]}`, false},
		{"event repeated key", ReceiptsJSON(ev + `,"notificationSeq":2`), false},
		{"kind unknown", ReceiptsJSON(`"kind":"alarm",` + ev), false},
		{"kind empty", ReceiptsJSON(`"kind":"",` + ev), false},
		{"kind null", ReceiptsJSON(`"kind":null,` + ev), false},
		{"kind number", ReceiptsJSON(`"kind":1,` + ev), false},
		{"epoch missing", ReceiptsJSON(`"notificationSeq":1`), false},
		{"epoch empty", ReceiptsJSON(`"notificationEpoch":"","notificationSeq":1`), false},
		{"epoch 129", ReceiptsJSON(`"notificationEpoch":"` + strings.Repeat("e", 129) + `","notificationSeq":1`), false},
		{"epoch number", ReceiptsJSON(`"notificationEpoch":1,"notificationSeq":1`), false},
		{"epoch control", ReceiptsJSON(`"notificationEpoch":"e\u00001","notificationSeq":1`), false},
		{"seq missing", ReceiptsJSON(`"notificationEpoch":"e1"`), false},
		{"seq negative", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":-1`), false},
		{"seq fraction", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":1.5`), false},
		{"seq over max safe", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":9007199254740992`), false},
		{"seq string", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":"1"`), false},
		{"seq null", ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":null`), false},
		{"trailing data", ReceiptsJSON(ev) + `{}`, false},
		{"not json", `{"v":1,"events":[`, false},
		{"empty body", ``, false},
		{"array body", `[]`, false},
	}
}
