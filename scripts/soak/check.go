package main

import (
	"fmt"
	"slices"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
)

// payloadKeyUnknown is the reason a batch ends expired when no key of the
// instance opens it (shared/delivery): no fault of the soak explains it.
const payloadKeyUnknown = "payload_key_unknown"

// maxNotes bounds the expiries and unreported entries the report lists one by
// one; the counts hold all of them.
const maxNotes = 50

// report is what the soak prints.
type report struct {
	Seed      uint64         `json:"seed"`
	Kills     int            `json:"kills"`
	Faults    map[string]int `json:"faults"`
	Accepted  int            `json:"accepted"`  // alerts queued for both phones
	Unsure    int            `json:"unsure"`    // sends whose answer never came
	Delivered int            `json:"delivered"` // recipients sent and found accepted at a stand-in
	// Expired are recipients expired with a reason that one of the soak's
	// provider faults explains: the faults on its provider held from its
	// acceptance past its deadline (see explain).
	Expired int `json:"expired"`
	// FaultWindows is how many provider fault windows the soak recorded.
	FaultWindows int `json:"faultWindows"`
	// Duplicates are recipients a provider accepted more than once, each
	// time with the same collapse id and in different processes: accepted
	// by the provider, not recorded before a kill.
	Duplicates int `json:"duplicates"`
	// Lost are recipients not final after the drain, sent without a
	// request the stand-in accepted, expired without a reason, expired
	// with payload_key_unknown, or expired with no fault of the soak's to
	// explain it.
	Lost int `json:"lost"`
	// Failed are recipients dead, error, dismissed or dropped, which none
	// of the soak's faults should cause.
	Failed          int `json:"failed"`
	WrongDuplicates int `json:"wrongDuplicates"`
	// Unreported are requests a stand-in accepted for a recipient whose
	// receipt is not sent, or for no alert the soak sent.
	Unreported int `json:"unreported"`
	// Expiries explains each expired recipient (the first maxNotes): the
	// fault windows that explain it, or why it is a loss.
	Expiries []expiryNote `json:"expiries,omitempty"`
	// UnreportedEntries describes the first maxNotes unreported requests.
	UnreportedEntries []string `json:"unreportedEntries,omitempty"`
}

// expiryNote is the report's account of one expired recipient. Phones are
// named by host and device, never by token.
type expiryNote struct {
	Host     int    `json:"host"`
	Device   string `json:"device"`
	Alert    string `json:"alert"`
	Reason   string `json:"reason"`
	SentAt   int64  `json:"sentAt"`
	Deadline int64  `json:"deadline"`
	// ExplainedBy names the fault windows that held its provider from its
	// acceptance past its deadline; empty when it is a loss.
	ExplainedBy []string `json:"explainedBy,omitempty"`
	Loss        string   `json:"loss,omitempty"`
}

func (r report) lost() bool {
	return r.Lost > 0 || r.Failed > 0 || r.WrongDuplicates > 0 || r.Unreported > 0
}

// verdict is the soak's result: an error when anything was lost, failed,
// duplicated wrongly or accepted unreported.
func (r report) verdict() error {
	if !r.lost() {
		return nil
	}
	return fmt.Errorf("%d lost, %d failed, %d wrong duplicates, %d unreported (seed %d)",
		r.Lost, r.Failed, r.WrongDuplicates, r.Unreported, r.Seed)
}

// sentAlert is one alert a host sent and when: SentAt just before the send
// and AnsweredAt once its answer came, epoch ms of the soak's clock (the
// emulator's is the same real clock), so the gateway accepted it between
// the two.
type sentAlert struct {
	n                  contract.Notification
	sentAt, answeredAt int64
}

// deadline is the earliest the gateway may have given a: its expiresAt, or
// the contract's lifetime from the earliest acceptance.
func (a sentAlert) deadline() int64 {
	d := a.sentAt + contract.EventLifetime.Milliseconds()
	if a.n.ExpiresAt != 0 {
		d = min(d, a.n.ExpiresAt)
	}
	return d
}

// phone is one registration of a host.
type phone struct {
	id, device, token string
	provider          standin.Provider
}

// fleetHost is what the check needs of one host: its phones, the alerts
// queued for all of them in the order their receipts are asked, and the ids
// of alerts whose fate the soak cannot know (no answer, or not queued for
// every phone), whose accepted requests are not unreported.
type fleetHost struct {
	phones    []phone
	accepted  []sentAlert
	unchecked map[string]bool
}

// fates is everything the check compares.
type fates struct {
	seed     uint64
	kills    int
	faults   map[string]int
	unsure   int
	hosts    []fleetHost
	receipts [][]contract.Receipt // per host, one per accepted alert
	inboxes  [][]delivery         // each process's inbox
	windows  []faultWindow        // the provider faults' windows
	// pgRestarts are when the cluster came back from each restart, in
	// epoch ms: a copy accepted again after one is explained by it.
	pgRestarts []int64
}

// check compares each host's receipts with what the stand-ins accepted and
// with the soak's own faults.
func check(f fates) report {
	rep := report{Seed: f.seed, Kills: f.kills, Faults: f.faults, Unsure: f.unsure}
	for _, w := range f.windows {
		if !w.kill {
			rep.FaultWindows++
		}
	}
	type key struct{ token, id string }
	accepted := make(map[key][]delivery)
	for _, in := range f.inboxes {
		for _, d := range in {
			if d.accepted {
				k := key{d.token, d.id}
				accepted[k] = append(accepted[k], d)
			}
		}
	}
	reported := make(map[key]bool) // recipients whose receipt is sent
	known := make(map[key]bool)    // every recipient of every alert the soak sent
	for i, h := range f.hosts {
		rep.Accepted += len(h.accepted)
		for id := range h.unchecked {
			for _, p := range h.phones {
				known[key{p.token, id}] = true
				reported[key{p.token, id}] = true
			}
		}
		for j, a := range h.accepted {
			for _, p := range h.phones {
				known[key{p.token, a.n.NotificationID}] = true
			}
			if j >= len(f.receipts[i]) {
				rep.Lost += len(h.phones)
				continue
			}
			r := f.receipts[i][j]
			if !r.Known || len(r.Recipients) != len(h.phones) {
				rep.Lost += len(h.phones)
				continue
			}
			for _, rr := range r.Recipients {
				p, ok := h.phone(rr.RegistrationID)
				if !ok {
					rep.Lost++
					continue
				}
				k := key{p.token, a.n.NotificationID}
				copies := accepted[k]
				switch rr.Status {
				case contract.ReceiptSent:
					if len(copies) == 0 {
						rep.Lost++
						continue
					}
					reported[k] = true
					rep.Delivered++
				case contract.ReceiptExpired:
					note := expiryNote{Host: i, Device: p.device, Alert: a.n.NotificationID, Reason: rr.Reason,
						SentAt: a.sentAt, Deadline: a.deadline()}
					switch by := explain(a, p.provider, f.windows); {
					case rr.Reason == "":
						note.Loss = "expired without a reason"
					case rr.Reason == payloadKeyUnknown:
						note.Loss = "no key opened it: no fault of the soak's explains that"
					case len(by) == 0:
						note.Loss = "no fault of the soak's held its provider from its acceptance past its deadline"
					default:
						note.ExplainedBy = by
					}
					if len(rep.Expiries) < maxNotes {
						rep.Expiries = append(rep.Expiries, note)
					}
					if note.Loss != "" {
						rep.Lost++
						continue
					}
					rep.Expired++
				case contract.ReceiptQueued, contract.ReceiptRetrying:
					rep.Lost++
					continue
				default:
					rep.Failed++
					continue
				}
				if len(copies) > 1 {
					if wrongDuplicate(copies, f.pgRestarts) {
						rep.WrongDuplicates++
					} else {
						rep.Duplicates++
					}
				}
			}
		}
	}
	for _, in := range f.inboxes {
		for _, d := range in {
			k := key{d.token, d.id}
			if !d.accepted || reported[k] {
				continue
			}
			rep.Unreported++
			if len(rep.UnreportedEntries) < maxNotes {
				what := "its receipt is not sent"
				if !known[k] {
					what = "the soak sent no such alert to that phone"
				}
				rep.UnreportedEntries = append(rep.UnreportedEntries,
					fmt.Sprintf("%s accepted %q at %d: %s", d.provider, d.id, d.receivedAt, what))
			}
		}
	}
	return rep
}

// phone returns the host's phone with registration id id.
func (h fleetHost) phone(id string) (phone, bool) {
	i := slices.IndexFunc(h.phones, func(p phone) bool { return p.id == id })
	if i < 0 {
		return phone{}, false
	}
	return h.phones[i], true
}

// wrongDuplicate reports whether copies of one recipient's alert differ in
// collapse id, or two of them were accepted by one process with no
// PostgreSQL restart between them: no crash explains those.
func wrongDuplicate(copies []delivery, pgRestarts []int64) bool {
	for i, d := range copies {
		if d.collapse != copies[0].collapse {
			return true
		}
		for _, e := range copies[:i] {
			if e.process == d.process && !slices.ContainsFunc(pgRestarts, func(at int64) bool {
				return min(e.receivedAt, d.receivedAt) <= at && at <= max(e.receivedAt, d.receivedAt)
			}) {
				return true
			}
		}
	}
	return false
}
