// Command keyscan fails when a file tracked by git holds a key: a payload
// key ring entry (ORCA_PUSH_PAYLOAD_KEYS, "id:" and 32 bytes in standard
// base64), a digest key set as ORCA_PUSH_DIGEST_KEY, or one of the
// emulator's key files (its data directory belongs in no repository).
// scripts/test runs it.
//
//	go run ./scripts/keyscan
//
// A key whose 32 bytes are printable text was written by hand for a test
// (shared/seal/sealtest); a generated one never is, so only those are
// reported. go.sum is skipped: its "h1:" module hashes have a ring entry's
// shape. It prints each finding as "path:line: what", never the key, and
// exits 1 when there is one.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "keyscan:", err)
		os.Exit(1)
	}
}

// errFound is run's error when a tracked file holds a key.
var errFound = errors.New("a tracked file holds a key: remove it from git (git rm --cached) and rotate the key")

// run scans the files git tracks in the working directory's repository.
func run(ctx context.Context, stdout io.Writer) error {
	out, err := exec.CommandContext(ctx, "git", "ls-files", "-z", "--full-name").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return fmt.Errorf("git rev-parse: %w", err)
	}
	root := string(bytes.TrimSpace(top))
	found := 0
	for _, name := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		b, err := os.ReadFile(root + "/" + string(name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			return err
		}
		for _, f := range scan(string(name), b) {
			fmt.Fprintln(stdout, f)
			found++
		}
	}
	if found > 0 {
		return errFound
	}
	return nil
}

// keyFiles are the names of the files the emulator keeps its keys in
// (scripts/emulator/keys.go).
var keyFiles = map[string]bool{"payload-keys": true, "digest-key": true}

var (
	// ringEntry is a payload key ring entry: an id, a colon, and 32 bytes
	// in standard base64.
	ringEntry = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/]{43}=)`)
	// digestVar is a digest key set as its variable.
	digestVar = regexp.MustCompile(`ORCA_PUSH_DIGEST_KEY\s*[=:]\s*["']?([A-Za-z0-9+/]{43}=)`)
)

// scan returns the findings in the file name holding b.
func scan(name string, b []byte) []string {
	if path.Base(name) == "go.sum" {
		return nil
	}
	var out []string
	if keyFiles[path.Base(name)] {
		out = append(out, name+": the emulator's key file")
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		for _, m := range ringEntry.FindAllSubmatch(line, -1) {
			if generated(m[2]) {
				out = append(out, fmt.Sprintf("%s:%d: payload key %q", name, i+1, m[1]))
			}
		}
		for _, m := range digestVar.FindAllSubmatch(line, -1) {
			if generated(m[1]) {
				out = append(out, fmt.Sprintf("%s:%d: digest key", name, i+1))
			}
		}
	}
	return out
}

// generated reports whether b64 is 32 bytes that are not all printable
// ASCII: a key made by a random source, not written for a test.
func generated(b64 []byte) bool {
	raw, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil || len(raw) != 32 {
		return false
	}
	for _, c := range raw {
		if c < 0x20 || c > 0x7e {
			return true
		}
	}
	return false
}
