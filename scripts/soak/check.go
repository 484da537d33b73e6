package main

import (
	"slices"

	"onorca.dev/push/shared/contract"
)

// report is what the soak prints.
type report struct {
	Seed      uint64         `json:"seed"`
	Kills     int            `json:"kills"`
	Faults    map[string]int `json:"faults"`
	Accepted  int            `json:"accepted"`  // alerts queued for both phones
	Unsure    int            `json:"unsure"`    // sends whose answer never came
	Delivered int            `json:"delivered"` // recipients sent and found accepted at a stand-in
	Expired   int            `json:"expired"`   // recipients expired with a reason
	// Duplicates are recipients a provider accepted more than once, each
	// time with the same collapse id and in different processes: accepted
	// by the provider, not recorded before a kill.
	Duplicates int `json:"duplicates"`
	// Lost are recipients not final after the drain, sent without a
	// request the stand-in accepted, or expired without a reason.
	Lost int `json:"lost"`
	// Failed are recipients dead, error, dismissed or dropped, which none
	// of the soak's faults should cause.
	Failed          int `json:"failed"`
	WrongDuplicates int `json:"wrongDuplicates"`
}

func (r report) lost() bool { return r.Lost > 0 || r.Failed > 0 || r.WrongDuplicates > 0 }

// check compares each host's receipts with what the stand-ins accepted.
func (s *soak) check(receipts [][]contract.Receipt, inboxes [][]delivery) report {
	rep := report{Seed: s.o.seed, Kills: s.kills, Faults: s.faults}
	type key struct{ token, id string }
	accepted := make(map[key][]delivery)
	for _, in := range inboxes {
		for _, d := range in {
			if d.accepted {
				k := key{d.token, d.id}
				accepted[k] = append(accepted[k], d)
			}
		}
	}
	for i, h := range s.hosts {
		rep.Accepted += len(h.accepted)
		rep.Unsure += h.unsure
		for j, r := range receipts[i] {
			if !r.Known || len(r.Recipients) != len(h.regs) {
				rep.Lost += len(h.regs)
				continue
			}
			for _, rr := range r.Recipients {
				copies := accepted[key{h.tokens[rr.RegistrationID], h.accepted[j].NotificationID}]
				switch rr.Status {
				case contract.ReceiptSent:
					if len(copies) == 0 {
						rep.Lost++
						continue
					}
					rep.Delivered++
				case contract.ReceiptExpired:
					if rr.Reason == "" {
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
					if wrongDuplicate(copies, s.pgRestarts) {
						rep.WrongDuplicates++
					} else {
						rep.Duplicates++
					}
				}
			}
		}
	}
	return rep
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
