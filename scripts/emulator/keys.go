package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/seal"
)

// The files in ORCA_PUSH_DATA_DIR where the emulator keeps its keys when
// their variables are unset, written as the variables are: the payload key
// ring (ORCA_PUSH_PAYLOAD_KEYS) and the digest key (ORCA_PUSH_DIGEST_KEY).
// The data directory is no place of the repository's: .gitignore keeps
// every data/ out of git, and scripts/keyscan fails on a tracked key file.
const (
	payloadKeysFile = "payload-keys"
	digestKeyFile   = "digest-key"
)

// emulatorKeys gives cfg the keys kept in its DataDir for those its
// environment does not set, each file made with a new key on first start
// (mode 0600, the directory 0700 if it must be made): pending alerts, and
// the events a resend is compared with, survive a restart on the same data,
// SQLite or PostgreSQL.
func emulatorKeys(cfg *config.Config, rnd io.Reader) error {
	dir := cfg.DataDir
	if cfg.PayloadKeys == nil {
		text, err := keyFile(dir, payloadKeysFile, func() (string, error) { return seal.NewEntry(rnd, "emulator1") })
		if err != nil {
			return err
		}
		if cfg.PayloadKeys, err = seal.ParseRing(text); err != nil {
			return fmt.Errorf("emulator: payload keys in %s: %w", filepath.Join(dir, payloadKeysFile), err)
		}
	}
	if cfg.DigestKey == nil {
		text, err := keyFile(dir, digestKeyFile, func() (string, error) { return seal.NewDigestKey(rnd) })
		if err != nil {
			return err
		}
		if cfg.DigestKey, err = seal.ParseDigestKey(text); err != nil {
			return fmt.Errorf("emulator: digest key in %s: %w", filepath.Join(dir, digestKeyFile), err)
		}
	}
	return nil
}

// keyFile returns what dir's file name holds, trimmed, writing newKey's key
// there first when there is no such file.
func keyFile(dir, name string, newKey func() (string, error)) (string, error) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = newKeyFile(dir, path, newKey)
	}
	if err != nil {
		return "", fmt.Errorf("emulator: %s in data directory %q: %w", name, dir, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// newKeyFile writes newKey's key to path, unless another process just did,
// and returns what the file holds.
func newKeyFile(dir, path string, newKey func() (string, error)) ([]byte, error) {
	key, err := newKey()
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
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return []byte(key), nil
}
