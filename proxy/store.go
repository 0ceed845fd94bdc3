package proxy

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"strata/hybrid"
)

// Store is the cache the proxy reads and fills: hybrid.Cache satisfies it.
//
// Keys the proxy uses: metaKey(objectKey) for an object's record and
// sliceKey(objectKey, i) for its body slices. They start with different
// bytes, and a slice key ends with the object key's length, so no slice key
// can equal a record key or a slice key of another object.
type Store interface {
	// Get appends the value stored under key to dst and returns it, with
	// the tier that answered. dst may be reused by the caller afterwards.
	Get(key, dst []byte) (value []byte, tier hybrid.Tier, ok bool)
	// Lend sets v to the value stored under key, without a copy where the
	// store can lend its bytes (hybrid.Cache: large memory hits), and
	// returns the tier that answered. On a hit the caller must Release v
	// (see hybrid.Value for how long its bytes stay valid).
	Lend(key []byte, v *hybrid.Value) (tier hybrid.Tier, ok bool)
	// Insert stores a copy of value; it may silently drop it (admission).
	// A zero expiry means none.
	Insert(key, value []byte, expiry time.Time)
	// Remove deletes key if present.
	Remove(key []byte)
	// Contains reports whether a Get of key may hit, without reading the
	// value. It may say yes for a key a Get then misses (an entry found
	// damaged when read), never no for one that is there.
	Contains(key []byte) bool
}

// writePacer is a Store with disk write queues that a writer may wait on
// (hybrid.Cache): WaitWriteRoom waits up to d for room for n bytes and
// reports whether it got it.
type writePacer interface {
	WaitWriteRoom(n int, d time.Duration) bool
}

// partsInserter is a Store that stores a value given as head|body|tail,
// copying each part once (hybrid.Cache): the fill's record goes in with
// its inline body straight from the fill buffer, not joined first.
type partsInserter interface {
	InsertParts(key, head, body, tail []byte, expiry time.Time)
}

// insertRecord stores the record of o under key, copying an inline body
// once where s takes parts (else the record is encoded whole first).
// hdrLen is about the bytes of o's header names and values (it sizes a
// buffer); block is o's header block in wire form when the caller has it,
// else nil (appendObjectHeadBlock).
func insertRecord(s Store, key []byte, o *object, block []byte, expiry time.Time, hdrLen int) {
	n := objectFixedLen + hdrLen + 16 + 6*len(o.Headers) + len(o.Digests) + 4
	pi, ok := s.(partsInserter)
	if !ok || !o.inline() || o.BodyLen == 0 {
		if o.inline() {
			n += int(o.BodyLen)
		}
		rec, sum := appendObjectHeadBlock(getSlab(n), o, block)
		if o.inline() {
			rec = append(rec, o.Body[:o.BodyLen]...)
		}
		rec = binary.BigEndian.AppendUint32(rec, sum)
		s.Insert(key, rec, expiry)
		putSlab(rec)
		return
	}
	rec, sum := appendObjectHeadBlock(getSlab(n), o, block)
	head := len(rec)
	rec = binary.BigEndian.AppendUint32(rec, sum)
	pi.InsertParts(key, rec[:head], o.Body[:o.BodyLen], rec[head:], expiry)
	putSlab(rec)
}

// paceWait bounds one wait of a fill for room in the store's disk write
// queues before it inserts a slice. A fill whose wait runs out stops
// pacing (its slices may then be dropped, as before): a disk that cannot
// write a slice in this long should not slow an origin fetch at all.
const paceWait = 250 * time.Millisecond

// paced waits for room for n bytes in s's write queues unless *off (a
// wait already ran out for this writer, which then sets it).
func paced(s Store, n int, off *bool) {
	if p, ok := s.(writePacer); ok && !*off && !p.WaitWriteRoom(n, paceWait) {
		*off = true
	}
}

const (
	metaKeyPrefix  = 'm'
	sliceKeyPrefix = 's'
)

// metaKey appends the record key of objectKey to dst.
func metaKey(dst, objectKey []byte) []byte {
	return append(append(dst, metaKeyPrefix), objectKey...)
}

// sliceKey appends the key of slice i of objectKey to dst:
// 's' | objectKey | index u32 | len(objectKey) u32.
func sliceKey(dst, objectKey []byte, i int) []byte {
	dst = append(append(dst, sliceKeyPrefix), objectKey...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(i))
	return binary.BigEndian.AppendUint32(dst, uint32(len(objectKey)))
}

// mapStore is a map-backed Store for the package's tests. Safe for
// concurrent use.
type mapStore struct {
	mu sync.Mutex
	m  map[string][]byte
	// Disk makes Get report hybrid.TierDisk instead of TierMemory.
	Disk atomic.Bool
	// Drop, when set, is asked on each Insert; true drops the value (as
	// admission would).
	Drop func(key []byte) bool
	// Inserts counts Insert calls, dropped or not.
	Inserts atomic.Int64
	// Lose, when set, is asked on each Get of a present key; true makes
	// the Get miss while Contains still says yes (as an entry found
	// damaged when read back from disk).
	Lose func(key []byte) bool
	// Pace, when set, answers WaitWriteRoom (writePacer); unset, there is
	// always room.
	Pace func(n int) bool
	// AfterLend, when set, is called at the end of each Lend with its
	// answer, outside the lock: a test stalls a request between its
	// lookup and what follows.
	AfterLend func(key []byte, hit bool)
	// AfterGet, when set, is called at the end of each Get, outside the
	// lock, like AfterLend.
	AfterGet func(key []byte)
	// Pieces, above 1, makes Lend hand values out in that many pieces
	// (hybrid.Value.SetCopyPieces), as the memory tier lends an entry
	// stored in several runs of its arena.
	Pieces atomic.Int32
}

// WaitWriteRoom implements writePacer.
func (s *mapStore) WaitWriteRoom(n int, _ time.Duration) bool {
	if s.Pace == nil {
		return true
	}
	return s.Pace(n)
}

// newMapStore returns an empty mapStore.
func newMapStore() *mapStore { return &mapStore{m: make(map[string][]byte)} }

// Get implements Store.
func (s *mapStore) Get(key, dst []byte) ([]byte, hybrid.Tier, bool) {
	s.mu.Lock()
	v, ok := s.m[string(key)]
	if ok && s.Lose != nil && s.Lose(key) {
		ok = false
	}
	if ok {
		dst = append(dst, v...)
	}
	s.mu.Unlock()
	if s.AfterGet != nil {
		s.AfterGet(key)
	}
	if !ok {
		return dst, hybrid.TierMiss, false
	}
	if s.Disk.Load() {
		return dst, hybrid.TierDisk, true
	}
	return dst, hybrid.TierMemory, true
}

// Lend implements Store with a copy into v.
func (s *mapStore) Lend(key []byte, v *hybrid.Value) (hybrid.Tier, bool) {
	v.Release()
	s.mu.Lock()
	b, ok := s.m[string(key)]
	if ok && s.Lose != nil && s.Lose(key) {
		ok = false
	}
	if ok {
		v.SetCopyPieces(b, int(s.Pieces.Load()))
	}
	s.mu.Unlock()
	if s.AfterLend != nil {
		s.AfterLend(key, ok)
	}
	switch {
	case !ok:
		return hybrid.TierMiss, false
	case s.Disk.Load():
		return hybrid.TierDisk, true
	}
	return hybrid.TierMemory, true
}

// Insert implements Store; expiry is ignored.
func (s *mapStore) Insert(key, value []byte, _ time.Time) {
	s.Inserts.Add(1)
	if s.Drop != nil && s.Drop(key) {
		return
	}
	v := append([]byte(nil), value...)
	s.mu.Lock()
	s.m[string(key)] = v
	s.mu.Unlock()
}

// Remove implements Store.
func (s *mapStore) Remove(key []byte) {
	s.mu.Lock()
	delete(s.m, string(key))
	s.mu.Unlock()
}

// Contains implements Store.
func (s *mapStore) Contains(key []byte) bool {
	s.mu.Lock()
	_, ok := s.m[string(key)]
	s.mu.Unlock()
	return ok
}

// Len returns the number of entries.
func (s *mapStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

var (
	_ Store = (*mapStore)(nil)
	_ Store = (*hybrid.Cache)(nil)
)
