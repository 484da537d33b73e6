package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain fails the run when a test made the emulator keep its keys in the
// package folder (the default data directory, ./data/push, relative to the
// test's working directory) instead of a directory of its own: that is how
// a key ring once came to be committed.
func TestMain(m *testing.M) {
	dir := filepath.Join("data", "push")
	_, before := os.Stat(dir)
	code := m.Run()
	if _, after := os.Stat(dir); after == nil && before != nil {
		fmt.Fprintf(os.Stderr, "a test left keys in scripts/emulator/%s: give its emulator a data directory of its own (t.TempDir())\n", dir)
		os.RemoveAll("data")
		code = 1
	}
	os.Exit(code)
}
