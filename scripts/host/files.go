package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

// The files of one host key: the key itself (the 32-byte secret in standard
// base64), and beside it the session kept between runs and the notification
// epoch and sequence, so that each send is a new event. All are 0600: the
// key and the session bearer are secrets.

// loadOrCreateKey reads the key at path, creating it (and its directory,
// 0700) with a fresh key on first use.
func loadOrCreateKey(path string) (kp hostclient.Keypair, created bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err = createKey(path)
		return kp, err == nil, err
	}
	if err != nil {
		return kp, false, err
	}
	secret, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil {
		return kp, false, fmt.Errorf("host key %s is not base64", path)
	}
	kp, err = hostclient.KeypairFromSecret(secret)
	if err != nil {
		return kp, false, fmt.Errorf("host key %s: %w", path, err)
	}
	return kp, false, nil
}

func createKey(path string) (hostclient.Keypair, error) {
	secret := make([]byte, contract.KeyBytes)
	if _, err := rand.Read(secret); err != nil {
		return hostclient.Keypair{}, err
	}
	kp, err := hostclient.KeypairFromSecret(secret)
	if err != nil {
		return kp, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return kp, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return kp, err
	}
	_, err = fmt.Fprintln(f, base64.StdEncoding.EncodeToString(secret))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return kp, err
}

// savedSession is the session kept beside the key, for one gateway.
type savedSession struct {
	Gateway      string `json:"gateway"`
	SessionToken string `json:"sessionToken"`
	ExpiresAt    int64  `json:"expiresAt"`
}

// sequence is the host's notification epoch and last sequence number.
type sequence struct {
	Epoch string `json:"epoch"`
	Seq   int64  `json:"seq"`
}

func sessionPath(keyPath string) string  { return keyPath + ".session" }
func sequencePath(keyPath string) string { return keyPath + ".sequence" }

// readJSON reads path into v; a missing file leaves v as it is.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path with v, 0600, through a temporary file so that a
// reader never sees half of it.
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil { // CreateTemp makes the file 0600
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// nextSequence returns the epoch and the next sequence number of the key at
// keyPath and records it, so that the next send is a new event. A given seq
// is used as it is (and later sends follow it).
func nextSequence(keyPath string, given int64) (sequence, error) {
	var s sequence
	if err := readJSON(sequencePath(keyPath), &s); err != nil {
		return s, err
	}
	if s.Epoch == "" {
		s.Epoch = "cli-" + randomHex(6)
	}
	next := s.Seq + 1
	if given >= 0 {
		next = given
	}
	s.Seq = max(s.Seq, next)
	if err := writeJSON(sequencePath(keyPath), s); err != nil {
		return s, err
	}
	s.Seq = next
	return s, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
