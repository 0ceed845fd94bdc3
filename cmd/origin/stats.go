package main

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// stats counts what the origin served, so tests can assert "one origin
// request" and "origin bytes". Counters are atomics; the per-URI map is
// under a mutex and capped at maxPaths entries (more are counted in
// paths_dropped), so a benchmark of unique URLs cannot grow it without
// bound.
type stats struct {
	requests    atomic.Uint64 // every request but /_stats, /_control, /healthz
	bytes       atomic.Uint64 // body bytes handed to connections
	notModified atomic.Uint64 // 304 answers
	partial     atomic.Uint64 // 206 answers
	inflight    atomic.Int64
	maxInflight atomic.Int64

	mu       sync.Mutex
	maxPaths int
	paths    map[string]uint64 // request URI (path and query) → requests
	dropped  uint64
}

func newStats(maxPaths int) *stats {
	return &stats{maxPaths: maxPaths, paths: map[string]uint64{}}
}

// begin counts a request to uri and returns the function that ends it.
func (s *stats) begin(uri []byte) func() {
	s.requests.Add(1)
	n := s.inflight.Add(1)
	for {
		m := s.maxInflight.Load()
		if n <= m || s.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	s.mu.Lock()
	if c, ok := s.paths[string(uri)]; ok {
		s.paths[string(uri)] = c + 1
	} else if len(s.paths) < s.maxPaths {
		s.paths[string(uri)] = 1
	} else {
		s.dropped++
	}
	s.mu.Unlock()
	return func() { s.inflight.Add(-1) }
}

// snapshot is the JSON of GET /_stats.
type snapshot struct {
	Requests     uint64            `json:"requests"`
	Bytes        uint64            `json:"bytes"`
	NotModified  uint64            `json:"not_modified"`
	Partial      uint64            `json:"partial"`
	Inflight     int64             `json:"inflight"`
	MaxInflight  int64             `json:"max_inflight"`
	Paths        map[string]uint64 `json:"paths"`
	PathsDropped uint64            `json:"paths_dropped"`
}

func (s *stats) json() []byte {
	s.mu.Lock()
	snap := snapshot{Paths: make(map[string]uint64, len(s.paths)), PathsDropped: s.dropped}
	for k, v := range s.paths {
		snap.Paths[k] = v
	}
	s.mu.Unlock()
	snap.Requests, snap.Bytes = s.requests.Load(), s.bytes.Load()
	snap.NotModified, snap.Partial = s.notModified.Load(), s.partial.Load()
	snap.Inflight, snap.MaxInflight = s.inflight.Load(), s.maxInflight.Load()
	b, _ := json.Marshal(snap) // a map of strings and numbers cannot fail
	return append(b, '\n')
}

// reset zeroes every counter (requests in flight stay counted in inflight).
func (s *stats) reset() {
	s.requests.Store(0)
	s.bytes.Store(0)
	s.notModified.Store(0)
	s.partial.Store(0)
	s.maxInflight.Store(s.inflight.Load())
	s.mu.Lock()
	s.paths, s.dropped = map[string]uint64{}, 0
	s.mu.Unlock()
}
