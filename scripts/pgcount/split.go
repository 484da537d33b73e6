package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// With -split, each counted run also says where its instructions went, per
// statement. callgrind dumps its counts each time a backend creates a portal
// (--dump-before=CreatePortal: the server's binary exports it, not
// exec_bind_message, which calls it at the start of every Bind, before the
// plan), so each dump after a backend's first holds one statement: its
// bind, plan, execute and sync, up to the next statement's Bind. The server
// logs every statement it executes (log_statement = all, the process id
// first), one log line per portal, in the same order, so a backend's (k+1)th
// dump is its kth logged statement. (A simple-protocol query plans before
// its portal, so its plan counts with the statement before it; the gateway
// sends none, pgx's pings aside.) The logging itself is
// left out of the counts: callgrind stops collecting inside the functions
// that format and emit a log message (--toggle-collect, which turns
// collection off on their entry and back on at their exit, inside
// PostgresMain).

// splitValgrindArgs are the callgrind options -split adds.
var splitValgrindArgs = []string{
	"--dump-before=CreatePortal",
	"--toggle-collect=errmsg", "--toggle-collect=errfinish", "--toggle-collect=errhidestmt",
}

// splitServerConf is the server configuration -split adds.
const splitServerConf = "log_statement = 'all'\nlog_line_prefix = '%p '\nlog_parameter_max_length = 0\n" +
	"log_destination = 'stderr'\nlogging_collector = off\n"

// split is the instructions and the number of statements of each statement
// text (see label) in one run.
type split map[string]struct{ instructions, statements int64 }

// logLine matches the server's log line of an executed statement: the
// process id, then "LOG:  statement: ..." (simple protocol) or "LOG:
// execute <name>: ..." (extended).
var logLine = regexp.MustCompile(`^(\d+) LOG:  (?:statement|execute [^:]*): (.*)$`)

// readSplit matches the callgrind dumps of dir to the statements the server
// logged in log.
func readSplit(dir, log string) (split, error) {
	stmts, err := loggedStatements(log)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.cg*"))
	if err != nil {
		return nil, err
	}
	out := make(split)
	for _, name := range files {
		pid, part, err := dumpPart(name)
		if err != nil {
			return nil, err
		}
		n, err := fileTotal(name)
		if err != nil {
			return nil, err
		}
		l := "(connection start, before its first statement)"
		if part > 1 {
			if list := stmts[pid]; part-2 < len(list) {
				l = list[part-2]
			} else {
				l = "(unmatched: more dumps than logged statements)"
			}
		}
		e := out[l]
		e.instructions += n
		if part > 1 {
			e.statements++
		}
		out[l] = e
	}
	return out, nil
}

// dumpPart reads a dump file's process id (its name, %p.cg[.N]) and its
// part number (the "part:" line; 1 when the file has none).
func dumpPart(name string) (pid string, part int, err error) {
	pid, _, _ = strings.Cut(filepath.Base(name), ".")
	f, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	part = 1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "part:"); ok {
			part, err = strconv.Atoi(strings.TrimSpace(rest))
			return pid, part, err
		}
		if strings.HasPrefix(sc.Text(), "fn=") { // the header is over
			break
		}
	}
	return pid, part, sc.Err()
}

// loggedStatements reads the server's log: each process's executed
// statements, in order, as labels.
func loggedStatements(name string) (map[string][]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make(map[string][]string)
	var pid string
	var text strings.Builder
	flush := func() {
		if pid != "" {
			out[pid] = append(out[pid], label(text.String()))
		}
		pid = ""
		text.Reset()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "\t") && pid != "" { // a statement's next line
			text.WriteString(" " + line)
			continue
		}
		flush()
		// pgx's ping is an empty simple query: logged, but run without a
		// portal, so no dump of its own.
		if m := logLine.FindStringSubmatch(line); m != nil && m[2] != "-- ping" {
			pid = m[1]
			text.WriteString(m[2])
		}
	}
	flush()
	return out, sc.Err()
}

// runDatabase matches the name of a run's database, which differs between
// the two runs.
var runDatabase = regexp.MustCompile(`\brun\d+\b`)

// label is a statement's text with its white space collapsed and the run's
// database unnamed, cut to 110 characters: enough to tell the gateway's
// statements apart.
func label(text string) string {
	l := runDatabase.ReplaceAllString(strings.Join(strings.Fields(text), " "), "run…")
	if len(l) > 110 {
		l = l[:110] + "…"
	}
	return l
}

// printSplit prints, per statement, the difference of the two runs' splits
// over the difference of their counts: the instructions and the statements
// of one unit, most instructions first. It returns the instructions of the
// statements the counted units ran (those run at least once every two
// units), without what the two runs did apart from them: a connection's
// start-up (about 1.2 M instructions, which one run of a pair may make once
// more than the other, its pool's choice), set-up statements and the final
// check. That figure moves by less than 1 % from run to run where the sum
// moves by 1.2 M over the units.
func printSplit(w io.Writer, runs [2]split, units int) (statements float64) {
	type row struct {
		label              string
		instructions, runs float64
	}
	var rows []row
	var sum float64
	for l := range runs[1] {
		r := row{label: l,
			instructions: float64(runs[1][l].instructions-runs[0][l].instructions) / float64(units),
			runs:         float64(runs[1][l].statements-runs[0][l].statements) / float64(units)}
		sum += r.instructions
		rows = append(rows, r)
	}
	for l := range runs[0] {
		if _, ok := runs[1][l]; !ok {
			rows = append(rows, row{label: l, instructions: -float64(runs[0][l].instructions) / float64(units)})
			sum += rows[len(rows)-1].instructions
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		switch {
		case a.instructions > b.instructions:
			return -1
		case a.instructions < b.instructions:
			return 1
		}
		return strings.Compare(a.label, b.label)
	})
	fmt.Fprintf(w, "  %12s %6s  %s\n", "instr/unit", "runs", "statement")
	for _, r := range rows {
		if r.instructions > -500 && r.instructions < 500 && r.runs == 0 {
			continue
		}
		fmt.Fprintf(w, "  %12.0f %6.2f  %s\n", r.instructions, r.runs, r.label)
	}
	fmt.Fprintf(w, "  %12.0f %6s  (sum; logging left out)\n", sum, "")
	for _, r := range rows {
		if r.runs >= 0.5 {
			statements += r.instructions
		}
	}
	fmt.Fprintf(w, "  %12.0f %6s  (the counted statements alone)\n", statements, "")
	return statements
}
