package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPairRunsAgain: a measurement whose two runs counted different numbers
// of backends is run again, and the first pair that matches stands; one
// that never matches stands after pairTries, with a note.
func TestPairRunsAgain(t *testing.T) {
	for _, tt := range []struct {
		name     string
		backends []int // of each run, in order
		runs     int
		kept     [2]int64
		note     string
	}{
		{"matched", []int{4, 4}, 2, [2]int64{0, 1}, ""},
		{"matched the second time", []int{4, 5, 4, 4}, 4, [2]int64{2, 3}, "counted 4 and 5 backends; running both again"},
		{"never matched", []int{4, 5, 5, 4, 4, 6, 4, 4}, 6, [2]int64{4, 5}, "kept after 3 tries"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := &cluster{stderr: &stderr}
			runs := 0
			total, _, err := c.pair(func(i int) (counted, error) {
				runs++
				return counted{total: int64(runs - 1), backends: tt.backends[runs-1]}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if runs != tt.runs || total != tt.kept {
				t.Errorf("ran %d times and kept runs %v, want %d and %v", runs, total, tt.runs, tt.kept)
			}
			if note := stderr.String(); tt.note == "" && note != "" || !strings.Contains(note, tt.note) {
				t.Errorf("notes %q, want %q", note, tt.note)
			}
		})
	}
}

// TestTotalsCountsBackends: totals sums every callgrind file of a run, the
// parts of a backend's dumps too, and counts a backend once, and only when
// it ran something.
func TestTotalsCountsBackends(t *testing.T) {
	dir := t.TempDir()
	for name, total := range map[string]string{
		"100.cg": "0", "101.cg": "1000", "101.cg.1": "200", "101.cg.2": "300", "102.cg": "40", "103.cg.1": "5",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("events: Ir\ntotals: "+total+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sum, backends, err := totals(dir)
	if err != nil || sum != 1545 || backends != 3 {
		t.Errorf("totals = %d, %d, %v; want 1545, 3", sum, backends, err)
	}
}
