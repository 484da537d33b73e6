package main

import (
	"cmp"
	"fmt"
	"slices"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
)

// injection is one fault the soak armed at a stand-in: times requests to
// provider (every token) get its answer, in the order faults were armed.
type injection struct {
	name     string
	provider standin.Provider
	at       int64 // epoch ms, just before it was armed
	times    int
	hang     bool
	kill     bool // the hang armed before a kill, not a provider fault
}

// process is one emulator process's faults: those armed while it ran, and
// when the last of them could have been taken (its kill, or the soak
// clearing the faults; a hang taken before a clear holds on).
type process struct {
	injections []injection
	end        int64
	killed     bool // end is its kill, not when the faults were cleared
}

// faultWindow is when one injected fault held its provider: from when it was
// armed until its last answer (a hang's until the provider timeout), or
// until its process ended or the faults were cleared when it still had
// answers left.
type faultWindow struct {
	name       string
	provider   standin.Provider
	start, end int64
	kill       bool
}

func (w faultWindow) String() string {
	return fmt.Sprintf("%s %d-%d", w.name, w.start, w.end)
}

// faultWindows matches each process's faulted requests (those its inbox
// records with a fault's reason) with the faults armed in it: a stand-in
// answers a provider's requests with the oldest armed fault that has answers
// left, so the first fault takes the first times requests, and so on.
func faultWindows(procs []process, inboxes [][]delivery) []faultWindow {
	var out []faultWindow
	for i, p := range procs {
		faulted := make(map[standin.Provider][]delivery)
		if i < len(inboxes) {
			for _, d := range inboxes[i] {
				if d.reason != "" {
					faulted[d.provider] = append(faulted[d.provider], d)
				}
			}
		}
		for _, in := range p.injections {
			w := faultWindow{name: in.name, provider: in.provider, start: in.at, end: in.at, kill: in.kill}
			q := faulted[in.provider]
			n := min(in.times, len(q))
			for _, d := range q[:n] {
				end := d.receivedAt
				if in.hang {
					end += contract.ProviderTimeout.Milliseconds()
				}
				w.end = max(w.end, end)
			}
			faulted[in.provider] = q[n:]
			if n < in.times {
				w.end = max(w.end, p.end)
			}
			if p.killed {
				w.end = min(w.end, p.end) // a hang ends with its process
			}
			out = append(out, w)
		}
	}
	return out
}

// reach is how long after a fault's last answer it may still hold a
// recipient back: the longest retry delay a faulted answer from provider
// can bring (contract's backoff cap, and FCM's minimum after a 429).
func reach(provider standin.Provider) int64 {
	d := contract.MaxBackoff
	if provider == standin.FCM {
		d = max(d, contract.FCMRateLimitedRetryMin)
	}
	return d.Milliseconds()
}

// explain returns the provider fault windows that held provider from a's
// acceptance until its deadline (less the dispatch margin, by when the
// gateway makes a batch due), each reaching reach(provider) past its end:
// only then may a recipient of a expire through the soak's faults. It
// returns nil when they leave a gap: a kill or a PostgreSQL restart never
// explains an expiry, for the sweep rescues what a dead process held long
// before a deadline of minutes.
func explain(a sentAlert, provider standin.Provider, windows []faultWindow) []string {
	var ws []faultWindow
	for _, w := range windows {
		if w.provider == provider && !w.kill {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b faultWindow) int { return cmp.Compare(a.start, b.start) })
	from, to := a.answeredAt, a.deadline()-contract.DispatchMargin.Milliseconds()
	var by []string
	for _, w := range ws {
		if from > to {
			break
		}
		if w.start > from {
			return nil // a gap the provider answered in
		}
		if end := w.end + reach(provider); end >= from {
			by = append(by, w.String())
			from = end + 1
		}
	}
	if from <= to {
		return nil
	}
	return by
}
