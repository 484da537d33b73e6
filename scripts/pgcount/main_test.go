package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"extra argument", []string{"now"}},
		{"regs over the request cap", []string{"-regs", "21"}},
		{"window at the quota", []string{"-in-window", "300"}},
		{"one count of sends", []string{"-sends", "100"}},
		{"decreasing counts", []string{"-sends", "400,100"}},
		{"port out of range", []string{"-port", "65536"}},
		{"unknown mode", []string{"-mode", "deliver"}},
		{"members at the batch cap", []string{"-mode", "window", "-members", "32"}},
		{"no rounds", []string{"-mode", "window", "-rounds", "0"}},
		{"burst over the request's alerts", []string{"-mode", "burst", "-alerts", "21"}},
		{"one count of bursts", []string{"-mode", "burst", "-bursts", "3"}},
		{"negative pending", []string{"-pending", "-1"}},
		{"pending with a window", []string{"-mode", "window", "-pending", "10"}},
		{"setting without a value", []string{"-pg-setting", "deadlock_timeout"}},
		{"setting with a quote", []string{"-pg-setting", "deadlock_timeout=1s'"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), tt.args, &out, &out); !errors.Is(err, errUsage) {
				t.Errorf("run(%q) = %v, want a usage error", tt.args, err)
			}
		})
	}
}

// TestCount runs a small count on a real cluster under callgrind: it needs
// valgrind and PostgreSQL's server binaries, as the command does.
func TestCount(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind twice")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-regs", "2", "-in-window", "3", "-sends", "1,3"}, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "pgcount mode=send regs=2 in-window=3 instructions/send=") {
		t.Fatalf("output:\n%s", out.String())
	}
	var m struct {
		InstructionsPerSend int64
		Totals              [2]int64
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	// A send costs PostgreSQL hundreds of thousands of instructions; a count
	// of nothing, or of the set-up alone, would not differ by that.
	if m.InstructionsPerSend < 100_000 || m.Totals[0] <= 0 || m.Totals[1] <= m.Totals[0] {
		t.Errorf("counted %+v", m)
	}
}

// TestCountModes counts a whole push, the floor of its rows and the
// yardstick insert on a real cluster: a push costs more than its rows alone,
// and those more than an insert.
func TestCountModes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind four times")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	per := map[string]int64{}
	// Runs of a few units read their first plans and cold caches; an
	// insert is small enough for them to show, so its runs are longer.
	for mode, sends := range map[string]string{"push": "1,3", "floor": "20,100", "insert": "20,100"} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), []string{"-mode", mode, "-regs", "1", "-in-window", "3", "-sends", sends}, &out, &errs); err != nil {
			t.Fatalf("run -mode %s: %v\n%s", mode, err, errs.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "pgcount mode="+mode+" ") {
			t.Fatalf("output:\n%s", out.String())
		}
		var m struct{ InstructionsPerSend int64 }
		if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
			t.Fatal(err)
		}
		per[mode] = m.InstructionsPerSend
	}
	// A push is a send (hundreds of thousands of instructions) and a
	// delivery; an insert transaction is tens of thousands.
	if per["push"] < 300_000 || per["insert"] <= 0 || per["insert"] > per["push"]/5 ||
		per["floor"] <= 3*per["insert"] || per["floor"] >= per["push"] {
		t.Errorf("counted %v", per)
	}
}

// TestPushCostHeld holds what PostgreSQL spends on one inline push to one
// phone of a quiet host, as measured when inline delivery came to lease at
// admission (issue 32): 1,069,594 instructions (1,794,558 before), 1,045,048
// since the send's statement reads the session in every row, 1,037,120
// since recipients are pruned with their event (no index by time), 976,450
// since the send's statement reads the registrations and the event once
// and the slots' transactions wait as their sessions do (issue 33), 947,535
// since the recipients are the registrations read and a holder's end and
// its siblings' are two updates, 929,953 since a transaction of one round
// trip (the outcome) runs without BEGIN and COMMIT, and 950,037 since a
// busy host's quota is read from its session's ring (the quiet send stores
// its count and reads whether there is a ring: 20,000 more), 921,241
// since a delivery's end reads the batches held back behind it rather than
// marking them (store.ReadHeldBack), and 878,815 since the batches have no
// index by due time (migration 0014), every indexed key is in the C
// collation (0015) and batch ids grow with time (store.NewBatchID), and
// 821,921 since a sent batch's end takes no host lock and reads the
// batches held back only when a hold-back marked its row
// (store.EndLeasedBatch), and 751,240 (750,464 to 751,989 in ten runs)
// since the batches have no index of finished ones (migration 0016) nor of
// badge raises owed (0017) and a transaction sends no BEGIN or COMMIT
// (store's pipeline). It is held at the goal, 753,000: 0.13 % over
// the highest run (the runs' spread is 0.2 %), so that a later change
// cannot quietly give the saving back nor the goal. Runs of 100 and 400 sends, as the
// measurement: shorter runs read first plans.
//
// It holds the push of a host at its quota (299 alerts in the window),
// decided by the ring: 853,057 (925,342 before migrations 0016 and 0017 and
// the pipeline; 982,800 before
// the end without the host lock, 1,027,635 before migrations 0014 and 0015,
// 1,053,733 before the end's read, 1,538,458 counting the window's rows),
// under the goal of 1,112,000; and the quiet push with 2,000 batches of other hosts pending,
// planned on a table of their finished ones with none pending (-pending):
// 767,557 (842,126 before migrations 0016 and 0017 and the pipeline, 904,637 before the end without the host
// lock, 963,598 before migrations 0014 and 0015, 974,800 and 982,689
// before the end's read, 959,075 before the
// ring in the same session, 943,377 in an earlier one: this case reads some
// 2 % apart from run to run), where the partial indexes of pending batches
// on state alone made it 9,107,350 (the outcome and the lease probe read
// every pending batch; TestNoPlanReadsATableWhole holds the plans
// themselves). It holds a send to five phones with their five inline
// deliveries too, quiet and at the quota: 1,689,767 and 1,803,303 (goals
// 3,755,000 and 5,560,000; 1,904,405 and 2,018,836 before migrations 0016
// and 0017 and the pipeline), with 2 % room.
func TestPushCostHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind ten times")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	for _, c := range []struct {
		name                    string
		regs, inWindow, pending string
		measured, held          int64
	}{
		{"one phone of a quiet host", "1", "10", "0", 751_240, 753_000},
		{"one phone of a host at its quota", "1", "299", "0", 853_057, 870_000},
		{"one phone of a quiet host, 2,000 batches pending elsewhere", "1", "10", "2000", 767_557, 783_000},
		{"five phones of a quiet host", "5", "10", "0", 1_689_767, 1_724_000},
		{"five phones of a host at its quota", "5", "299", "0", 1_803_303, 1_840_000},
	} {
		var out, errs bytes.Buffer
		args := []string{"-mode", "push", "-regs", c.regs, "-in-window", c.inWindow, "-sends", "100,400", "-pending", c.pending}
		if err := run(context.Background(), args, &out, &errs); err != nil {
			t.Fatalf("run: %v\n%s", err, errs.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var m struct{ InstructionsPerSend int64 }
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		t.Logf("one inline push to %s: %d instructions", c.name, m.InstructionsPerSend)
		if m.InstructionsPerSend > c.held || m.InstructionsPerSend < c.measured/2 {
			t.Errorf("one inline push to %s: %d instructions, want at most %d (measured %d)",
				c.name, m.InstructionsPerSend, c.held, c.measured)
		}
	}
}

// TestWindowCostHeld counts sends that join open batches of 1 and of 16
// members at one and five registrations on a real cluster (each run checks that every
// send joined) and holds what their statements cost, as measured when the
// send's statement came to read the registrations and the event once, and
// the quota's rows by a plain index scan, and the slots' transactions to
// wait as their connections' sessions do (issue 33): 702,263 and 1,235,747
// instructions (742,045 and 1,347,512 before, 711,635 and 1,290,712 at
// 51fab5c, the commit before sealing and receipts); 639,686 and 1,179,710
// since the recipients are the registrations read (issue 32; 638,689 and
// 1,175,820 in other runs), with 1 % and 2 % room over their run-to-run
// spread (0.3 % and 1 %), so that a later
// change cannot quietly give the saving back: the room stays under
// 51fab5c's counts, so the test also holds issue 33's goal (the quota
// counted by an index-only scan again fails it at k = 16, a lock_timeout
// set in every slot's transaction at k = 1). Five registrations are held
// at the highest of three runs, 1,477,157 and 2,370,780 (the others
// 1,419,296 and 2,305,061: runs of one build read 4 % apart there; 1,539,826
// and 2,418,706 before; 51fab5c: 2,227,121 and 3,918,599) with 3 % room
// (the joins named by the join with their arrays alone read 2.6 M and
// 6.2 M there, JoinBatches). Since a busy host's quota is read from its
// session's ring (migration 0013), the host of k = 16, 136 alerts in its
// window, is decided by the ring: 896,782 and 910,018 at one registration
// (1,179,710 counting), 2,091,863 and 2,112,049 at five (2,370,780); k = 1
// at one registration counts and stores its
// count, 658,510 and 659,518 (639,686 before). Since migrations 0016 and
// 0017 and the pipeline (no BEGIN or COMMIT), three runs read 673,363,
// 672,666 and 672,925 (k = 1) and 856,506, 848,339 and 848,403 (k = 16) at
// one registration, 1,395,224, 1,398,836 and 1,394,525 and 2,026,792,
// 2,035,458 and 2,017,164 at five. Those at k = 1 read higher than before
// while the send costs less (by the full sum, k = 1 at one registration:
// 646,125 at 3420241, 612,602 since): with no COMMIT statement a
// transaction's commit is counted in its last statement, and the insert
// that opens each round's batch, which both runs make as often and which is
// therefore not counted, reads 57,000 a unit apart between the runs
// (-split). Counting every statement instead (but a connection's start-up)
// read 554,000 to 615,000 for k = 1 from run to run, too loose to hold.
// Each is held at the highest of its runs
// with 1 % (k = 1), 2 % (k = 16) and 3 % (five registrations) room. It
// holds the counted statements alone (printSplit): the sum moves by a
// connection's start-up, 61,000 a round, from run to run.
func TestWindowCostHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind eight times")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-mode", "window", "-regs", "1,5", "-members", "1,16", "-rounds", "20", "-split"}, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	type key struct{ regs, members int }
	held := map[key]struct{ measured, room int64 }{
		{1, 1}: {673_363, 1}, {1, 16}: {856_506, 2}, {5, 1}: {1_398_836, 3}, {5, 16}: {2_035_458, 3}}
	seen := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m struct {
			Regs, Members     int
			StatementsPerSend int64
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		h, ok := held[key{m.Regs, m.Members}]
		if !ok {
			t.Fatalf("unexpected line %s", line)
		}
		seen++
		t.Logf("a send to %d registrations joining batches of %d members: %d instructions in its statements",
			m.Regs, m.Members, m.StatementsPerSend)
		if most := h.measured * (100 + h.room) / 100; m.StatementsPerSend > most || m.StatementsPerSend < h.measured/2 {
			t.Errorf("a send to %d registrations joining batches of %d members: %d instructions in its statements, want at most %d (measured %d)",
				m.Regs, m.Members, m.StatementsPerSend, most, h.measured)
		}
	}
	if seen != len(held) {
		t.Fatalf("output:\n%s", out.String())
	}
}

// TestCountBurst counts bursts of 1 and 5 alerts to one phone on a real
// cluster; each run checks that every push of its bursts was sent, inline
// or by the hand-on. Runs of a few bursts read first plans and cold caches,
// so only the order of magnitude is held.
func TestCountBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind four times")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-mode", "burst", "-alerts", "1,5", "-bursts", "2,4"}, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "pgcount mode=burst alerts=1 instructions/delivered push=") {
		t.Fatalf("output:\n%s", out.String())
	}
	var per []int64
	for _, line := range []string{lines[1], lines[3]} {
		var m struct{ InstructionsPerPush int64 }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		per = append(per, m.InstructionsPerPush)
	}
	// A push is a send and a delivery, hundreds of thousands of
	// instructions at least; tens of millions would be a count of more.
	for i, n := range per {
		if n < 300_000 || n > 50_000_000 {
			t.Errorf("counted %d instructions per delivered push in bursts of %d", n, []int{1, 5}[i])
		}
	}
}

// TestSplit counts a small push with -split: every statement of the push
// (the send's, the batch's insert, which takes the lease inline delivery
// would have claimed, the outcome's) has its line, each run once per
// push, and the lines add up to what the statements cost.
func TestSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL under valgrind twice")
	}
	if _, err := exec.LookPath("valgrind"); err != nil || newestPGBin() == "" {
		t.Skip("needs valgrind and PostgreSQL's server binaries")
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-mode", "push", "-regs", "1", "-in-window", "3", "-sends", "2,6", "-split"}, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	text := out.String()
	for _, want := range []string{
		"WITH session AS ( SELECT expires_at, alert_n",             // the send's first round trip (a quiet host's)
		"INSERT INTO push_delivery_batches",                        // the batch it opens, leased with its insert
		"UPDATE push_delivery_batches SET state = $3, reason = $4", // the outcome
		"(sum; logging left out)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no line with %q in:\n%s", want, text)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.HasPrefix(f[2], "WITH") && f[1] != "1.00" {
			t.Errorf("statement run %s times per push: %s", f[1], line)
		}
	}
}
