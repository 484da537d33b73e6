package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
)

// The check's fixture: one host with an iPhone and a Pixel, which sent n1
// at t0 (answered 100 ms later) and n2 after it, and n3 without an answer.
const (
	t0        = int64(1_000_000)
	iphoneTok = "aaaa"
	pixelTok  = "ffff"
)

const lifetime = int64(contract.EventLifetime / time.Millisecond)

func fixtureHost() fleetHost {
	return fleetHost{
		phones: []phone{
			{id: "reg-ios", device: "iphone", token: iphoneTok, provider: "apns"},
			{id: "reg-android", device: "pixel", token: pixelTok, provider: "fcm"},
		},
		accepted: []sentAlert{
			{n: contract.Notification{NotificationID: "n1", Seq: 1}, sentAt: t0, answeredAt: t0 + 100},
			{n: contract.Notification{NotificationID: "n2", Seq: 2}, sentAt: t0 + 1000, answeredAt: t0 + 1100},
		},
		unchecked: map[string]bool{"n3": true},
	}
}

// recipients makes one alert's receipt: the iPhone's status and the Pixel's.
func recipients(ios, android contract.RecipientReceipt) contract.Receipt {
	ios.RegistrationID, android.RegistrationID = "reg-ios", "reg-android"
	return contract.Receipt{Known: true, Recipients: []contract.RecipientReceipt{ios, android}}
}

var (
	sent    = contract.RecipientReceipt{Status: contract.ReceiptSent}
	expired = contract.RecipientReceipt{Status: contract.ReceiptExpired, Reason: "expired"}
)

func accepted(provider standin.Provider, token, id string, at int64) delivery {
	return delivery{accepted: true, provider: provider, token: token, id: id, collapse: id, process: "1", receivedAt: at}
}

// allSent is the inbox in which every recipient of n1 and n2 was accepted.
func allSent() []delivery {
	return []delivery{
		accepted("apns", iphoneTok, "n1", t0+200), accepted("fcm", pixelTok, "n1", t0+210),
		accepted("apns", iphoneTok, "n2", t0+1200), accepted("fcm", pixelTok, "n2", t0+1210),
	}
}

// withoutIPhoneN2 is allSent without the iPhone's copy of n2.
func withoutIPhoneN2() []delivery {
	return slices.DeleteFunc(allSent(), func(d delivery) bool { return d.token == iphoneTok && d.id == "n2" })
}

func TestCheck(t *testing.T) {
	n2Deadline := t0 + 1000 + lifetime
	apnsDown := func(start, end int64) faultWindow {
		return faultWindow{name: "apns 500", provider: "apns", start: start, end: end}
	}
	tests := []struct {
		name    string
		n2      contract.Receipt // n1 is sent to both phones
		inbox   []delivery
		windows []faultWindow
		want    report // the counts compared
		lost    bool
		explain string // a window the one expiry is explained by, "" when it is a loss
	}{
		{name: "all sent and in the inbox", n2: recipients(sent, sent), inbox: allSent(),
			want: report{Delivered: 4}},
		{name: "sent but not in the inbox", n2: recipients(sent, sent), inbox: withoutIPhoneN2(),
			want: report{Delivered: 3, Lost: 1}, lost: true},
		{name: "in the inbox but not reported sent", n2: recipients(contract.RecipientReceipt{Status: contract.ReceiptQueued}, sent),
			inbox: allSent(), want: report{Delivered: 3, Lost: 1, Unreported: 1}, lost: true},
		{name: "an inbox entry for no alert the soak sent", n2: recipients(sent, sent),
			inbox: append(allSent(), accepted("fcm", pixelTok, "n9", t0+5000)),
			want:  report{Delivered: 4, Unreported: 1}, lost: true},
		{name: "an inbox entry for an alert whose answer never came", n2: recipients(sent, sent),
			inbox: append(allSent(), accepted("apns", iphoneTok, "n3", t0+5000)),
			want:  report{Delivered: 4}},
		{name: "unexplained expiry: no fault", n2: recipients(expired, sent), inbox: withoutIPhoneN2(),
			want: report{Delivered: 3, Lost: 1}, lost: true},
		{name: "explained expiry: an APNs fault from its acceptance past its deadline", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0+500, n2Deadline)},
			want: report{Delivered: 3, Expired: 1, FaultWindows: 1}, explain: "apns 500"},
		{name: "explained expiry: faults one after another, each within the retry reach of the last", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{
				{name: "apns hang", provider: "apns", start: t0 + 150_000, end: n2Deadline - reach("apns")},
				apnsDown(t0+500, t0+150_000-reach("apns")),
			},
			want: report{Delivered: 3, Expired: 1, FaultWindows: 2}, explain: "apns hang"},
		{name: "unexplained expiry: the fault ended a retry reach before its deadline", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0+500, n2Deadline-reach("apns")-5_000)},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 1}, lost: true},
		{name: "unexplained expiry: the fault began after its acceptance", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0+60_000, n2Deadline)},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 1}, lost: true},
		{name: "unexplained expiry: a gap between two faults", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0+500, t0+60_000), apnsDown(t0+200_000, n2Deadline)},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 2}, lost: true},
		{name: "unexplained expiry: the other provider's fault", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{{name: "fcm 503", provider: "fcm", start: t0, end: n2Deadline}},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 1}, lost: true},
		{name: "unexplained expiry: a kill's hang", n2: recipients(expired, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{{name: "kill", provider: "apns", start: t0, end: n2Deadline, kill: true}},
			want: report{Delivered: 3, Lost: 1}, lost: true},
		{name: "payload_key_unknown is a loss even under a fault", n2: recipients(
			contract.RecipientReceipt{Status: contract.ReceiptExpired, Reason: payloadKeyUnknown}, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0, n2Deadline)},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 1}, lost: true},
		{name: "expired without a reason", n2: recipients(contract.RecipientReceipt{Status: contract.ReceiptExpired}, sent),
			inbox: withoutIPhoneN2(), windows: []faultWindow{apnsDown(t0, n2Deadline)},
			want: report{Delivered: 3, Lost: 1, FaultWindows: 1}, lost: true},
		{name: "not final after the drain", n2: recipients(contract.RecipientReceipt{Status: contract.ReceiptRetrying, Reason: "transport"}, sent),
			inbox: withoutIPhoneN2(), want: report{Delivered: 3, Lost: 1}, lost: true},
		{name: "unknown to the gateway", n2: contract.Receipt{}, inbox: allSent()[:2],
			want: report{Delivered: 2, Lost: 2}, lost: true},
		{name: "dead", n2: recipients(contract.RecipientReceipt{Status: contract.ReceiptDead, Reason: "Unregistered"}, sent),
			inbox: withoutIPhoneN2(), want: report{Delivered: 3, Failed: 1}, lost: true},
		{name: "a copy accepted twice by one process", n2: recipients(sent, sent),
			inbox: append(allSent(), accepted("apns", iphoneTok, "n2", t0+9000)),
			want:  report{Delivered: 4, WrongDuplicates: 1}, lost: true},
		{name: "a copy accepted again by the next process", n2: recipients(sent, sent),
			inbox: append(allSent(), delivery{accepted: true, provider: "apns", token: iphoneTok, id: "n2", collapse: "n2", process: "2", receivedAt: t0 + 9000}),
			want:  report{Delivered: 4, Duplicates: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fates{hosts: []fleetHost{fixtureHost()}, windows: tt.windows,
				receipts: [][]contract.Receipt{{recipients(sent, sent), tt.n2}}, inboxes: [][]delivery{tt.inbox}}
			got := check(f)
			counts := report{Delivered: got.Delivered, Expired: got.Expired, FaultWindows: got.FaultWindows,
				Duplicates: got.Duplicates, Lost: got.Lost, Failed: got.Failed, WrongDuplicates: got.WrongDuplicates,
				Unreported: got.Unreported}
			tt.want.Accepted = 2
			counts.Accepted = got.Accepted
			if !equalCounts(counts, tt.want) {
				t.Errorf("counts = %+v, want %+v", counts, tt.want)
			}
			if err := got.verdict(); (err != nil) != tt.lost {
				t.Errorf("verdict() = %v, want an error: %v", err, tt.lost)
			}
			if got.Unreported != len(got.UnreportedEntries) {
				t.Errorf("%d unreported, %d described: %q", got.Unreported, len(got.UnreportedEntries), got.UnreportedEntries)
			}
			expiries := tt.n2.Known && tt.n2.Recipients[0].Status == contract.ReceiptExpired
			if !expiries {
				if len(got.Expiries) != 0 {
					t.Errorf("expiries = %+v, want none", got.Expiries)
				}
				return
			}
			if len(got.Expiries) != 1 {
				t.Fatalf("expiries = %+v, want the iPhone's of n2", got.Expiries)
			}
			e := got.Expiries[0]
			if e.Device != "iphone" || e.Alert != "n2" || e.Deadline != n2Deadline {
				t.Errorf("expiry = %+v, want the iPhone's of n2, deadline %d", e, n2Deadline)
			}
			switch {
			case tt.explain == "" && (e.Loss == "" || len(e.ExplainedBy) != 0):
				t.Errorf("expiry = %+v, want a loss", e)
			case tt.explain != "" && (e.Loss != "" || !slices.ContainsFunc(e.ExplainedBy, func(s string) bool { return strings.HasPrefix(s, tt.explain) })):
				t.Errorf("expiry = %+v, want explained by %q", e, tt.explain)
			}
		})
	}
}

func equalCounts(a, b report) bool {
	a.Faults, b.Faults = nil, nil
	a.Expiries, b.Expiries = nil, nil
	a.UnreportedEntries, b.UnreportedEntries = nil, nil
	return a.Seed == b.Seed && a.Kills == b.Kills && a.Accepted == b.Accepted && a.Unsure == b.Unsure &&
		a.Delivered == b.Delivered && a.Expired == b.Expired && a.FaultWindows == b.FaultWindows &&
		a.Duplicates == b.Duplicates && a.Lost == b.Lost && a.Failed == b.Failed &&
		a.WrongDuplicates == b.WrongDuplicates && a.Unreported == b.Unreported
}

// TestFaultWindows: a stand-in answers with the oldest armed fault first, so
// the faulted requests of a process's inbox are matched in order; a hang
// holds its request for the provider timeout, and a fault with answers left
// holds until its process ends (a kill ends a hang; clearing the faults
// does not).
func TestFaultWindows(t *testing.T) {
	timeout := contract.ProviderTimeout.Milliseconds()
	faulted := func(provider standin.Provider, reason string, at int64) delivery {
		return delivery{provider: provider, reason: reason, receivedAt: at}
	}
	procs := []process{
		{end: 50_000, killed: true, injections: []injection{
			{name: "apns 500", provider: "apns", at: 1000, times: 2},
			{name: "fcm hang", provider: "fcm", at: 2000, times: 1, hang: true},
			{name: "apns hang", provider: "apns", at: 3000, times: 1, hang: true},
			{name: "kill", provider: "apns", at: 49_000, times: killHang, hang: true, kill: true},
		}},
		{end: 90_000, injections: []injection{
			{name: "fcm 503", provider: "fcm", at: 60_000, times: 3},
			{name: "apns hang", provider: "apns", at: 80_000, times: 1, hang: true},
		}},
	}
	inboxes := [][]delivery{
		{
			faulted("apns", "InternalServerError", 1100), accepted("fcm", pixelTok, "n1", 1150),
			faulted("apns", "InternalServerError", 1200), faulted("fcm", "hang", 2500),
			faulted("apns", "hang", 4000), accepted("apns", iphoneTok, "n1", 4100), faulted("apns", "hang", 49_500),
		},
		{faulted("fcm", "UNAVAILABLE", 61_000), faulted("apns", "hang", 89_000)},
	}
	got := faultWindows(procs, inboxes)
	want := []faultWindow{
		{name: "apns 500", provider: "apns", start: 1000, end: 1200},
		{name: "fcm hang", provider: "fcm", start: 2000, end: 2500 + timeout},
		{name: "apns hang", provider: "apns", start: 3000, end: 4000 + timeout},
		{name: "kill", provider: "apns", start: 49_000, end: 50_000, kill: true},
		{name: "fcm 503", provider: "fcm", start: 60_000, end: 90_000},
		{name: "apns hang", provider: "apns", start: 80_000, end: 89_000 + timeout}, // held on after the clear
	}
	if !slices.Equal(got, want) {
		t.Errorf("faultWindows =\n%+v, want\n%+v", got, want)
	}
}
