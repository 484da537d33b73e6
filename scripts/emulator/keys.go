package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"onorca.dev/push/shared/seal"
)

// payloadKeysFile is the file in ORCA_PUSH_DATA_DIR where the emulator
// keeps its payload key ring when ORCA_PUSH_PAYLOAD_KEYS is unset, written
// as that variable is.
const payloadKeysFile = "payload-keys"

// emulatorKeys returns the ring kept in dir's payloadKeysFile, made with one
// new key on first start (mode 0600, dir 0700 if it must be made): pending
// alerts survive a restart on the same data, SQLite or PostgreSQL.
func emulatorKeys(dir string, rnd io.Reader) (*seal.Ring, error) {
	path := filepath.Join(dir, payloadKeysFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = newKeysFile(dir, path, rnd)
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: payload keys in data directory %q: %w", dir, err)
	}
	ring, err := seal.ParseRing(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("emulator: payload keys in %s: %w", path, err)
	}
	return ring, nil
}

// newKeysFile writes a ring of one new key to path, unless another process
// just did, and returns what the file holds.
func newKeysFile(dir, path string, rnd io.Reader) ([]byte, error) {
	entry, err := seal.NewEntry(rnd, "emulator1")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(entry + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return []byte(entry), nil
}
