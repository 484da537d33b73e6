package routes_test

import "crypto/rand"

// randReader reads crypto/rand; it exists so key generation reads clearly.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }
