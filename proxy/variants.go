package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// Variants (RFC 9111 §4.1). A response carrying Vary is stored as one
// object per variant; the record under the URL's own key (metaKey of the
// primary key) is then a small variant index instead of an object:
//
//	magic "STV" | version u8 | epoch u64 | vary: uvarint len + bytes |
//	count uvarint | per variant, oldest first: uvarint len + secondary key |
//	crc32c of all the above u32
//
// A variant is an ordinary object (record and slices) under the object key
// variantKey(primary, epoch, secondary) = primary | 0x00 'v' | epoch u64 |
// secondary, where secondary is httpcache.VaryKey of the request for the
// index's Vary value. A primary key never holds a 0x00 byte
// (httpcache.BuildKey escapes control bytes in the target, and its header
// part is length-prefixed), so no variant key equals a primary key or
// another URL's variant key.
//
// The epoch is random per index: a new index (first variant, a changed
// Vary value, or after an invalidation removed the index) makes every
// older variant record unreachable, even one the index never listed (a
// fill that committed after the index was removed, or whose index update
// was dropped by admission). The index lists variants in insertion order;
// adding one beyond Options.MaxVariants removes the oldest (its record and
// slices). Index updates of one URL are serialised by a striped mutex;
// the index lives in the Store like any record, so an index the store
// drops just makes the URL a miss.
//
// Lookups (lookupVariant) compute the secondary key from the client's
// request; fills compute it from the request they sent to the origin
// (which can differ in Via, X-Forwarded-* and hop-by-hop fields), so a
// stored variant is only ever served to a request whose named fields equal
// those the origin saw. A variant whose secondary key is longer than
// maxVariantKeyLen is not stored. `Vary: *` is never stored
// (httpcache.StoreDecision).
const (
	variantIndexVersion = 1
	maxVariantKeyLen    = 2048
	maxVariantsLimit    = 1024
	variantIndexFixed   = 3 + 1 + 8
)

var variantMagic = [3]byte{'S', 'T', 'V'}

// variantIndex is a decoded index; Vary and Keys borrow the decoded bytes.
type variantIndex struct {
	Epoch uint64
	Vary  []byte
	Keys  [][]byte
}

// isVariantIndex reports whether a record read under a metaKey is a
// variant index (and not an object record).
func isVariantIndex(v []byte) bool {
	return len(v) >= 3 && [3]byte(v[:3]) == variantMagic
}

func appendVariantIndex(dst []byte, x *variantIndex) []byte {
	start := len(dst)
	dst = append(dst, variantMagic[:]...)
	dst = append(dst, variantIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, x.Epoch)
	dst = appendBytes(dst, x.Vary)
	dst = binary.AppendUvarint(dst, uint64(len(x.Keys)))
	for _, k := range x.Keys {
		dst = appendBytes(dst, k)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// decodeVariantIndex decodes b into x, reusing x.Keys' capacity; the
// fields borrow b. Hostile bytes give ErrCorrupt, never a panic, and no
// allocation larger than maxVariantsLimit entries.
func decodeVariantIndex(x *variantIndex, b []byte) error {
	if len(b) < variantIndexFixed+4 {
		return fmt.Errorf("%w: variant index of %d bytes", ErrCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return fmt.Errorf("%w: variant index checksum", ErrCorrupt)
	}
	if [3]byte(body[:3]) != variantMagic || body[3] != variantIndexVersion {
		return fmt.Errorf("%w: variant index magic or version", ErrCorrupt)
	}
	x.Epoch = binary.BigEndian.Uint64(body[4:])
	rest := body[variantIndexFixed:]
	var ok bool
	if x.Vary, rest, ok = takeBytes(rest); !ok || len(x.Vary) == 0 {
		return fmt.Errorf("%w: variant index vary", ErrCorrupt)
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > maxVariantsLimit || n > uint64(len(rest)) {
		return fmt.Errorf("%w: variant count", ErrCorrupt)
	}
	rest = rest[k:]
	x.Keys = x.Keys[:0]
	for range n {
		var key []byte
		if key, rest, ok = takeBytes(rest); !ok || len(key) > maxVariantKeyLen {
			return fmt.Errorf("%w: variant key", ErrCorrupt)
		}
		x.Keys = append(x.Keys, key)
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: variant index: %d trailing bytes", ErrCorrupt, len(rest))
	}
	return nil
}

// variantKey appends the object key of a variant to dst.
func variantKey(dst, primary []byte, epoch uint64, secondary []byte) []byte {
	dst = append(append(dst, primary...), 0, 'v')
	dst = binary.BigEndian.AppendUint64(dst, epoch)
	return append(dst, secondary...)
}

// variantLocks serialise what is written under one object key's record:
// a variant index's updates, and the record commits, adoptions and
// removals that such an update must not interleave with (removeObject).
// Striped: two keys may share a mutex, so none is taken while another is
// held (removeObjectLocked removes variants under their primary's).
type variantLocks struct {
	seed maphash.Seed
	mu   [64]sync.Mutex
}

func (l *variantLocks) lock(primary []byte) *sync.Mutex {
	m := &l.mu[maphash.Bytes(l.seed, primary)%uint64(len(l.mu))]
	m.Lock()
	return m
}

// lookupVariant resolves the index in val (read under st.key) to the
// variant for this request: st.key and st.mkey become the variant's, and
// the variant's record is returned. st.pkey keeps the primary key.
func (s *Server) lookupVariant(ctx *fasthttp.RequestCtx, st *reqState, val []byte) ([]byte, bool) {
	var x variantIndex
	x.Keys = st.vkeys[:0]
	err := decodeVariantIndex(&x, val)
	st.vkeys = x.Keys[:0]
	if err != nil {
		s.m.corrupt.Inc()
		return val, false
	}
	var ok bool
	st.vk, ok = httpcache.VaryKey(st.vk[:0], x.Vary, &ctx.Request.Header)
	if !ok || len(st.vk) > maxVariantKeyLen {
		return val, false
	}
	st.key = variantKey(st.key[:0], st.pkey, x.Epoch, st.vk)
	st.mkey = metaKey(st.mkey[:0], st.key)
	st.fmark = s.fills.mark(st.key) // a miss joins the variant's fill
	v, tier, ok := s.store.Get(st.mkey, st.val[:0])
	st.val = v[:0]
	st.tier = tier
	return v, ok
}

// setVariant decides the storage key of a storable response with headers
// h fetched by req (stored until expiry): the fill's primary key when it does not vary, else a
// variant key under the URL's index (created now if there is none, or if
// it lists another Vary value). It reports false when the response cannot
// be stored as a variant (Vary not usable, secondary key too long).
// mayVary false says h has no Vary field (httpcache.StoreInfo.MayVary),
// which saves the lookup.
func (s *Server) setVariant(f *fill, req *fasthttp.RequestHeader, h *fasthttp.ResponseHeader, mayVary bool, expiry time.Time) bool {
	var vary []byte
	if mayVary {
		vary = httpcache.AppendVary(nil, h)
	}
	if len(bytes.TrimSpace(vary)) == 0 {
		f.skey = f.rv.pkey
		return true
	}
	vk, ok := httpcache.VaryKey(nil, vary, req)
	if !ok || len(vk) > maxVariantKeyLen {
		return false
	}
	epoch := s.variantEpoch(f.rv.pkey, vary, expiry)
	f.rv.vary, f.rv.vkey, f.rv.epoch = vary, vk, epoch
	f.skey = variantKey(nil, f.rv.pkey, epoch, vk)
	return true
}

// variantEpoch returns the epoch of primary's index for vary, writing a
// new empty index when there is none for that Vary value.
func (s *Server) variantEpoch(primary, vary []byte, expiry time.Time) uint64 {
	m := s.vlocks.lock(primary)
	defer m.Unlock()
	mkey := metaKey(nil, primary)
	var x variantIndex
	if v, _, ok := s.store.Get(mkey, nil); ok && decodeVariantIndex(&x, v) == nil && bytes.Equal(x.Vary, vary) {
		return x.Epoch
	}
	x = variantIndex{Epoch: rand.Uint64(), Vary: vary}
	s.store.Insert(mkey, appendVariantIndex(nil, &x), expiry)
	return x.Epoch
}

// variantCommitted lists the variant f just stored in its URL's index,
// evicting the oldest variants beyond MaxVariants. If the index changed
// since the fill began (invalidated, replaced), the variant stays
// unlisted and unreachable.
func (s *Server) variantCommitted(f *fill) {
	m := s.vlocks.lock(f.rv.pkey)
	defer m.Unlock()
	mkey := metaKey(nil, f.rv.pkey)
	v, _, ok := s.store.Get(mkey, nil)
	var x variantIndex
	if !ok || decodeVariantIndex(&x, v) != nil || x.Epoch != f.rv.epoch {
		return
	}
	keys := make([][]byte, 0, len(x.Keys)+1)
	for _, k := range x.Keys {
		if !bytes.Equal(k, f.rv.vkey) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, f.rv.vkey)
	for len(keys) > s.cfg().MaxVariants {
		s.removeObjectLocked(variantKey(nil, f.rv.pkey, x.Epoch, keys[0]))
		keys = keys[1:]
	}
	x.Keys = keys
	s.store.Insert(mkey, appendVariantIndex(nil, &x), f.expiry)
}
