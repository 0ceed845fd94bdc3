package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"time"

	"strata/hybrid"
)

// The workload is foyer-bench's. Writer w of W inserts keys w, w+W,
// w+2W, … (a u64, 8 bytes big-endian) with values of a random size in
// [entry-size-min, entry-size-max], pacing itself to --w-rate. Each reader
// picks a writer at random and one of that writer's last get-range/W keys
// (uniformly, or Zipf with the newest hottest) and calls GetOrFetch; the
// fetch (a miss) waits --latency and returns a value of a random size.
//
// A value is an 8-byte little-endian length then that many bytes of
// content, as foyer-bench's Value encodes; the inserted bytes counted are
// 8 + length. Content is cheap: the key, then a window of a fixed random
// text chosen by the key. Readers check every hit against it.

// textPad is how far a key may shift its window into the shared text.
const textPad = 4096

// workload is what writers and readers share.
type workload struct {
	cache    *hybrid.Cache
	cfg      *config
	text     []byte          // entry-size-max + textPad bytes of random text
	counts   []atomic.Uint64 // keys inserted per writer
	zipf     []float64       // CDF over recency ranks; nil: uniform
	window   uint64          // keys per writer a reader picks among
	monoBase time.Time
}

func newWorkload(c *hybrid.Cache, cfg *config) *workload {
	w := &workload{cache: c, cfg: cfg, counts: make([]atomic.Uint64, cfg.Writers), monoBase: time.Now()}
	w.window = max(1, cfg.GetRange/uint64(cfg.Writers))
	if cfg.Distribution == "zipf" {
		w.zipf = zipfCDF(int(min(w.window, 1<<24)), cfg.ZipfS)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	w.text = make([]byte, cfg.EntryMax+textPad)
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	for i := range w.text {
		w.text[i] = letters[rng.IntN(len(letters))]
	}
	return w
}

// now is monotonic time since the workload started: one clock read.
func (w *workload) now() time.Duration { return time.Since(w.monoBase) }

// value appends idx's value of n content bytes to dst.
func (w *workload) value(dst []byte, idx uint64, n int) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(n))
	start := len(dst)
	off := textOffset(idx)
	dst = append(dst, w.text[off:off+n]...)
	if n >= 8 {
		binary.BigEndian.PutUint64(dst[start:], idx)
	}
	return dst
}

// textOffset is where idx's window into the shared text starts.
func textOffset(idx uint64) int { return int(idx*0x9E3779B97F4A7C15>>52) % textPad }

// valid says whether v is a value value(idx, n) could have made. It
// compares in place: no copy on the readers' path.
func (w *workload) valid(v []byte, idx uint64) bool {
	if len(v) < 8 {
		return false
	}
	n := binary.LittleEndian.Uint64(v)
	if n != uint64(len(v)-8) || n > uint64(w.cfg.EntryMax) {
		return false
	}
	body, want := v[8:], w.text[textOffset(idx):][:n]
	if n >= 8 {
		return binary.BigEndian.Uint64(body) == idx && bytes.Equal(body[8:], want[8:])
	}
	return bytes.Equal(body, want)
}

func (w *workload) entrySize(rng *rand.Rand) int {
	lo, hi := w.cfg.EntryMin, w.cfg.EntryMax
	return int(lo + rng.Int64N(hi-lo+1))
}

// pacer spaces operations so their bytes flow at rate per second (0:
// unlimited). After a stall it forgives at most one second of backlog,
// as a token bucket of one second's burst would.
type pacer struct {
	rate float64
	next time.Duration
}

// wait says how long to wait before the next operation.
func (p *pacer) wait(now time.Duration) time.Duration {
	if p.rate == 0 {
		return 0
	}
	if now-p.next > time.Second {
		p.next = now - time.Second
	}
	return p.next - now
}

// spend charges n bytes.
func (p *pacer) spend(n int) {
	if p.rate > 0 {
		p.next += time.Duration(float64(n) / p.rate * float64(time.Second))
	}
}

// writer runs writer id until its epoch says stop.
func (w *workload) writer(id int, r recorder) {
	rng := rand.New(rand.NewPCG(uint64(id), 0x5eed))
	p := pacer{rate: float64(w.cfg.WRate), next: w.now()}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	key := make([]byte, 8)
	buf := make([]byte, 0, w.cfg.EntryMax+8)
	step := uint64(w.cfg.Writers)
	for c := uint64(0); ; {
		if r.poll() {
			return
		}
		if d := p.wait(w.now()); d > 0 {
			r.sleep(t, d)
			continue
		}
		idx := uint64(id) + step*c
		n := w.entrySize(rng)
		buf = w.value(buf[:0], idx, n)
		binary.BigEndian.PutUint64(key, idx)
		start := w.now()
		w.cache.Insert(key, buf, time.Time{})
		recordMicros(r.p.insertLat, w.now()-start)
		c++
		w.counts[id].Store(c)
		r.p.inserts++
		r.p.insertBytes += uint64(len(buf))
		p.spend(n)
	}
}

// reader is one reader goroutine's state. fetchFn is bound once so that
// a hit allocates nothing: GetOrFetch runs it only if this reader leads a
// miss, and returns only after it did, so the fields it writes are read
// safely afterwards.
type reader struct {
	w       *workload
	rng     *rand.Rand
	idx     uint64
	start   time.Duration
	missed  bool
	missLat time.Duration
	val     []byte // the fetched value, reused from one miss to the next
	fetchFn hybrid.FetchFunc
}

func (rd *reader) fetch(ctx context.Context) ([]byte, time.Time, error) {
	rd.missLat = rd.w.now() - rd.start
	rd.missed = true
	if d := rd.w.cfg.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, time.Time{}, ctx.Err()
		}
	}
	// The reader's own buffer, as an origin client's pooled one: readers
	// call GetOrFetch with a context that never ends, so the fetch runs
	// in this goroutine and GetOrFetch returns only once no caller still
	// reads the value (hybrid.Cache.GetOrFetch): the next miss may reuse
	// it. (A fresh buffer per miss was 94% of the run's allocation and
	// most of its ~3 GC cycles a second.)
	n := rd.w.entrySize(rd.rng)
	rd.val = rd.w.value(rd.val[:0], rd.idx, n)
	return rd.val, time.Time{}, nil
}

// pick returns a key among writer's recent ones, or false if it has none.
func (w *workload) pick(rng *rand.Rand) (uint64, bool) {
	wr := rng.Uint64N(uint64(len(w.counts)))
	cnt := w.counts[wr].Load()
	if cnt == 0 {
		return 0, false
	}
	var back uint64
	if w.zipf != nil {
		back = uint64(sort.SearchFloat64s(w.zipf, rng.Float64())) % cnt
	} else {
		back = rng.Uint64N(min(cnt, w.window))
	}
	return wr + uint64(len(w.counts))*(cnt-1-back), true
}

// readerLoop runs reader id until its epoch says stop.
func (w *workload) readerLoop(id int, r recorder) {
	rd := &reader{w: w, rng: rand.New(rand.NewPCG(uint64(id), 0xbeef)), val: make([]byte, 0, w.cfg.EntryMax+8)}
	rd.fetchFn = rd.fetch
	p := pacer{rate: float64(w.cfg.RRate), next: w.now()}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	key := make([]byte, 8)
	dst := make([]byte, 0, w.cfg.EntryMax+8)
	ctx := context.Background()
	for {
		if r.poll() {
			return
		}
		if d := p.wait(w.now()); d > 0 {
			r.sleep(t, d)
			continue
		}
		idx, ok := w.pick(rd.rng)
		if !ok {
			r.sleep(t, time.Millisecond)
			continue
		}
		binary.BigEndian.PutUint64(key, idx)
		rd.idx, rd.missed = idx, false
		rd.start = w.now()
		v, _, err := w.cache.GetOrFetch(ctx, key, dst[:0], rd.fetchFn)
		lat := w.now() - rd.start
		r.p.gets++
		switch {
		case err != nil:
			r.p.errors++
		case rd.missed:
			r.p.misses++
			recordMicros(r.p.missLat, rd.missLat)
		default:
			recordMicros(r.p.hitLat, lat)
			r.p.hitByte += uint64(len(v))
			if !w.valid(v, idx) {
				r.p.corrupt++
			}
			p.spend(len(v))
		}
	}
}

// zipfCDF returns the cumulative distribution of ranks 0..n-1 with
// weight 1/(rank+1)^s: a reader draws u in [0,1) and takes the first rank
// whose CDF exceeds it. Any s > 0 works (math/rand's Zipf needs s > 1).
func zipfCDF(n int, s float64) []float64 {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += math.Pow(float64(i+1), -s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}
