package httpx

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"onorca.dev/push/shared/contract"
)

// Buckets is a set of token buckets, one per key (an IP or a host
// fingerprint), each holding capacity tokens and refilling continuously at
// capacity per contract.BucketWindow (reference-behaviour §2.6). A new key
// starts full. It is in memory and per instance: it blunts floods, it does not
// meter. Time comes from the caller, so a manual clock drives it.
type Buckets struct {
	capacity int
	maxKeys  int
	// mu guards keys.
	mu   sync.Mutex
	keys map[string]*bucket
}

type bucket struct {
	lim      *rate.Limiter
	lastUsed time.Time
}

// NewBuckets returns buckets of the given capacity per minute that track at
// most contract.MaxTrackedBucketKeys keys.
func NewBuckets(capacity int) *Buckets {
	return &Buckets{capacity: capacity, maxKeys: contract.MaxTrackedBucketKeys, keys: make(map[string]*bucket)}
}

// Allow spends one token of key's bucket at now and reports whether one was
// there. A refusal spends nothing.
func (b *Buckets) Allow(key string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.get(key, now).lim.AllowN(now, 1)
}

// Has reports whether key's bucket holds at least one whole token at now,
// without spending it.
func (b *Buckets) Has(key string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.keys[key]
	return !ok || k.lim.TokensAt(now) >= 1
}

// Len returns the number of tracked keys.
func (b *Buckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.keys)
}

// get returns key's bucket, creating it full; b.mu is held.
func (b *Buckets) get(key string, now time.Time) *bucket {
	k, ok := b.keys[key]
	if !ok {
		if len(b.keys) >= b.maxKeys {
			b.evict(now)
		}
		every := contract.BucketWindow / time.Duration(b.capacity)
		// A new limiter starts full.
		k = &bucket{lim: rate.NewLimiter(rate.Every(every), b.capacity)}
		b.keys[key] = k
	}
	k.lastUsed = now
	return k
}

// evict drops full buckets (forgetting them loses nothing) or, when none is
// full, the least recently used one; b.mu is held.
func (b *Buckets) evict(now time.Time) {
	var oldestKey string
	var oldest time.Time
	dropped := false
	for key, k := range b.keys {
		if k.lim.TokensAt(now) >= float64(b.capacity) {
			delete(b.keys, key)
			dropped = true
			continue
		}
		if oldestKey == "" || k.lastUsed.Before(oldest) {
			oldestKey, oldest = key, k.lastUsed
		}
	}
	if !dropped && oldestKey != "" {
		delete(b.keys, oldestKey)
	}
}
