package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// purgeTable is lazy invalidation: it remembers when each tag and each key
// prefix was last purged, and a stored record whose origin request was
// sent at or before a purge that matches it (one of its tags, or its key
// starts with the prefix) is a miss. So a purge is O(1) however many
// objects it covers, covers objects on disk that no index knows (after a
// restart, or when the tag index overflowed), and covers a fill in flight
// when the purge came (its request was sent before the purge).
//
// Bounded: at most MaxTags tags and MaxPrefixes prefixes are remembered.
// When one more arrives, the oldest entry is folded into a floor: every
// tagged record (tag floor) or every record (prefix floor) requested at or
// before the floor is a miss. Folding only purges more, never less, so the
// table stays correct at any size, at the cost of extra misses.
//
// The hit path pays one atomic load: a record requested after the newest
// purge (latest) skips every check; only older records take the read lock
// and look at their tags and key.
//
// Time is the Server's clock (Options.Now) in Unix nanoseconds (0: none),
// and purges are ordered against records' RequestTime. Limit: if the wall
// clock steps back, records stored before the step may carry times after
// a later purge and survive it; a purge issued after the clock caught up
// again covers them.
//
// Durability: with a state file, every change is written to a temporary
// file, synced and renamed over it before the purge returns, and New
// loads it. A file that does not decode sets both floors to the load time
// (everything stored before is a miss): safe, never wrong bytes.
type purgeTable struct {
	mu          sync.RWMutex
	tags        map[string]int64
	prefixes    []prefixPurge
	tagFloor    int64
	prefixFloor int64
	latest      atomic.Int64 // max of every time in the table

	maxTags, maxPrefixes int
	path                 string // "" = not persisted
}

type prefixPurge struct {
	prefix []byte // key prefix (see prefixKey)
	at     int64
}

func newPurgeTable(maxTags, maxPrefixes int, path string) *purgeTable {
	return &purgeTable{tags: make(map[string]int64), maxTags: maxTags, maxPrefixes: maxPrefixes, path: path}
}

// purged reports whether a record requested at t (Unix ns) with key and
// headers is covered by a purge. It does not allocate.
func (p *purgeTable) purged(t int64, key []byte, headers []headerKV) bool {
	if latest := p.latest.Load(); latest == 0 || t > latest {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.prefixFloor != 0 && t <= p.prefixFloor {
		return true
	}
	for _, pp := range p.prefixes {
		if t <= pp.at && bytes.HasPrefix(key, pp.prefix) {
			return true
		}
	}
	hit := false
	forEachTag(headers, func(tag []byte) bool {
		if p.tagFloor != 0 && t <= p.tagFloor {
			hit = true
		} else if at, ok := p.tags[string(tag)]; ok && t <= at {
			hit = true
		}
		return !hit
	})
	return hit
}

// addTags records a purge of tags at now and persists the table.
func (p *purgeTable) addTags(now int64, tags []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range tags {
		if _, ok := p.tags[t]; !ok && len(p.tags) >= p.maxTags {
			p.foldOldestTag()
		}
		p.tags[t] = max(p.tags[t], now)
	}
	p.bump(now)
	return p.save()
}

// addPrefix records a purge of every key starting with prefix at now and
// persists the table.
func (p *purgeTable) addPrefix(now int64, prefix []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	found := false
	for i := range p.prefixes {
		if bytes.Equal(p.prefixes[i].prefix, prefix) {
			p.prefixes[i].at, found = max(p.prefixes[i].at, now), true
		}
	}
	if !found {
		if len(p.prefixes) >= p.maxPrefixes {
			p.foldOldestPrefix()
		}
		p.prefixes = append(p.prefixes, prefixPurge{append([]byte(nil), prefix...), now})
	}
	p.bump(now)
	return p.save()
}

// latestTime is the time of the newest purge (zero time: none).
func (p *purgeTable) latestTime() time.Time { return fromUnixNano(p.latest.Load()) }

func (p *purgeTable) bump(now int64) {
	if now > p.latest.Load() {
		p.latest.Store(now)
	}
}

// foldOldestTag forgets the oldest tag, raising the tag floor to its time.
// O(tags): purges are rare next to hits. REQUIRES: p.mu held.
func (p *purgeTable) foldOldestTag() {
	var oldest string
	at := int64(-1)
	for t, a := range p.tags {
		if at < 0 || a < at {
			oldest, at = t, a
		}
	}
	delete(p.tags, oldest)
	p.tagFloor = max(p.tagFloor, at)
}

// foldOldestPrefix forgets the oldest prefix, raising the prefix floor
// (which covers every record) to its time. REQUIRES: p.mu held.
func (p *purgeTable) foldOldestPrefix() {
	if len(p.prefixes) == 0 {
		return
	}
	i := 0
	for j, pp := range p.prefixes {
		if pp.at < p.prefixes[i].at {
			i = j
		}
	}
	p.prefixFloor = max(p.prefixFloor, p.prefixes[i].at)
	p.prefixes = append(p.prefixes[:i], p.prefixes[i+1:]...)
}

// The state file:
//
//	magic "STPG" | version u8 | tagFloor i64 | prefixFloor i64 |
//	ntags uvarint, per tag: uvarint len + tag, at i64 |
//	nprefixes uvarint, per prefix: uvarint len + prefix, at i64 | crc32c u32
//
// Integers big-endian.
const (
	purgeVersion    = 1
	maxPurgeFile    = 64 << 20
	purgeFixedLen   = 4 + 1 + 8 + 8
	purgeTmpPattern = ".purge-*.tmp"
)

var purgeMagic = [4]byte{'S', 'T', 'P', 'G'}

// encode appends the table to dst. REQUIRES: p.mu held.
func (p *purgeTable) encode(dst []byte) []byte {
	start := len(dst)
	dst = append(append(dst, purgeMagic[:]...), purgeVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.tagFloor))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.prefixFloor))
	dst = binary.AppendUvarint(dst, uint64(len(p.tags)))
	for t, at := range p.tags {
		dst = binary.BigEndian.AppendUint64(appendBytes(dst, []byte(t)), uint64(at))
	}
	dst = binary.AppendUvarint(dst, uint64(len(p.prefixes)))
	for _, pp := range p.prefixes {
		dst = binary.BigEndian.AppendUint64(appendBytes(dst, pp.prefix), uint64(pp.at))
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// decode replaces the table's contents with b's. On error the table is
// left empty. Entries beyond the table's bounds are folded.
func (p *purgeTable) decode(b []byte) error {
	p.tags, p.prefixes, p.tagFloor, p.prefixFloor = make(map[string]int64), nil, 0, 0
	if len(b) < purgeFixedLen+4 {
		return fmt.Errorf("%w: purge state of %d bytes", ErrCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum || [4]byte(body[:4]) != purgeMagic || body[4] != purgeVersion {
		return fmt.Errorf("%w: purge state checksum, magic or version", ErrCorrupt)
	}
	p.tagFloor = int64(binary.BigEndian.Uint64(body[5:]))
	p.prefixFloor = int64(binary.BigEndian.Uint64(body[13:]))
	rest := body[purgeFixedLen:]
	var err error
	if rest, err = p.decodeEntries(rest, func(k []byte, at int64) {
		if len(p.tags) >= p.maxTags {
			p.foldOldestTag()
		}
		p.tags[string(k)] = at
	}); err == nil {
		rest, err = p.decodeEntries(rest, func(k []byte, at int64) {
			if len(p.prefixes) >= p.maxPrefixes {
				p.foldOldestPrefix()
			}
			p.prefixes = append(p.prefixes, prefixPurge{append([]byte(nil), k...), at})
		})
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: purge state: %d trailing bytes", ErrCorrupt, len(rest))
	}
	if err != nil {
		p.tags, p.prefixes, p.tagFloor, p.prefixFloor = make(map[string]int64), nil, 0, 0
		return err
	}
	p.latest.Store(max(p.tagFloor, p.prefixFloor))
	for _, at := range p.tags {
		p.bump(at)
	}
	for _, pp := range p.prefixes {
		p.bump(pp.at)
	}
	return nil
}

func (p *purgeTable) decodeEntries(b []byte, add func(k []byte, at int64)) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: purge state count", ErrCorrupt)
	}
	b = b[k:]
	for range n {
		key, rest, ok := takeBytes(b)
		if !ok || len(key) == 0 || len(rest) < 8 {
			return nil, fmt.Errorf("%w: purge state entry", ErrCorrupt)
		}
		add(key, int64(binary.BigEndian.Uint64(rest)))
		b = rest[8:]
	}
	return b, nil
}

// save writes the table to p.path atomically (temporary file in the same
// directory, fsync, rename, fsync of the directory). REQUIRES: p.mu held.
func (p *purgeTable) save() error {
	if p.path == "" {
		return nil
	}
	dir := filepath.Dir(p.path)
	f, err := os.CreateTemp(dir, purgeTmpPattern)
	if err != nil {
		return fmt.Errorf("proxy: purge state: %w", err)
	}
	_, err = f.Write(p.encode(nil))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("proxy: purge state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// load reads p.path. A missing file is an empty table; a file that does
// not decode (or is larger than maxPurgeFile) makes both floors now and
// is reported as ErrCorrupt; other read errors are returned.
func (p *purgeTable) load(now int64) error {
	if p.path == "" {
		return nil
	}
	b, err := readCapped(p.path, maxPurgeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = p.decode(b)
	}
	if errors.Is(err, ErrCorrupt) {
		p.tagFloor, p.prefixFloor = now, now
		p.bump(now)
	}
	return err
}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: purge state of %d bytes", ErrCorrupt, st.Size())
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}
