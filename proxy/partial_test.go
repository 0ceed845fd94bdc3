package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// rangeOrigin serves a versioned generated object with net/http's
// ServeContent (Range, multipart, If-Range) and records the Range of
// every request.
type rangeOrigin struct {
	mu          sync.Mutex
	size        int
	version     int
	etag        bool
	lastMod     bool
	ignoreRange bool
	failRange   bool // answer 503 to requests with a Range
	gate        *gate
	ranges      []string
}

func (ro *rangeOrigin) body(version int) []byte {
	b := bigBody(ro.size)
	for i := range b {
		b[i] ^= byte(version * 31)
	}
	return b
}

func (ro *rangeOrigin) handler(w http.ResponseWriter, r *http.Request) {
	if g := ro.gate; g != nil {
		g.wait()
	}
	ro.mu.Lock()
	v, etag, lm, ignore := ro.version, ro.etag, ro.lastMod, ro.ignoreRange
	ro.ranges = append(ro.ranges, r.Header.Get("Range"))
	fail := ro.failRange && r.Header.Get("Range") != ""
	ro.mu.Unlock()
	if fail {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	w.Header().Set("Content-Type", "application/x-test")
	if etag {
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, v))
	}
	var mod time.Time
	if lm {
		mod = time.Date(2020, 1, 1, v, 0, 0, 0, time.UTC)
	}
	if ignore {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "", mod, bytes.NewReader(ro.body(v)))
}

func (ro *rangeOrigin) takeRanges() []string {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	r := ro.ranges
	ro.ranges = nil
	return r
}

const testSlice = 64 << 10

func newRangePair(t *testing.T, ro *rangeOrigin) *pair {
	return newPair(t, ro.handler, func(o *Options) { o.SliceSize = testSlice })
}

// getRange asks for path with Range: bytes=spec and checks a 206 with the
// bytes of want.
func getRange(t *testing.T, p *pair, spec string, want []byte, kv ...string) string {
	t.Helper()
	resp := p.get("/obj", append([]string{"Range", "bytes=" + spec}, kv...)...)
	defer releaseResp(resp)
	var a, b int64
	if _, err := fmt.Sscanf(spec, "%d-%d", &a, &b); err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	b = min(b, int64(len(want))-1)
	if resp.StatusCode() != 206 {
		t.Fatalf("%s: status %d, body %q", spec, resp.StatusCode(), resp.Body()[:min(len(resp.Body()), 100)])
	}
	wantCR := "bytes " + strconv.FormatInt(a, 10) + "-" + strconv.FormatInt(b, 10) + "/" + strconv.Itoa(len(want))
	expectHeader(t, resp, "Content-Range", wantCR)
	if !bytes.Equal(resp.Body(), want[a:b+1]) {
		t.Fatalf("%s: %d bytes differ from the object's", spec, len(resp.Body()))
	}
	return string(resp.Header.Peek("Cache-Status"))
}

// TestSlicesLentInPieces: slices the store lends in pieces (as the memory
// tier lends an entry stored in several runs) are served as they are,
// whole bodies and ranges across the pieces' edges alike, both from
// slices loaded as the body goes (an object with a validator, or one with
// slice digests) and from slices leased before the status line.
func TestSlicesLentInPieces(t *testing.T) {
	const size = 5*testSlice + 777
	for _, tc := range []struct {
		name string
		ro   *rangeOrigin
	}{{"validator", &rangeOrigin{size: size, etag: true}}, {"digests", &rangeOrigin{size: size}}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newRangePair(t, tc.ro)
			want := tc.ro.body(0)
			r := p.get("/obj")
			if !bytes.Equal(r.Body(), want) {
				t.Fatal("the miss's body differs")
			}
			releaseResp(r)
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			for _, pieces := range []int32{2, 3, 7} {
				p.store.Pieces.Store(pieces)
				r := p.get("/obj")
				if cs := string(r.Header.Peek("Cache-Status")); !bytes.Equal(r.Body(), want) || cs != "strata; hit; detail=memory" {
					t.Fatalf("%d pieces: whole body %d bytes (equal %v), Cache-Status %q", pieces, len(r.Body()), bytes.Equal(r.Body(), want), cs)
				}
				releaseResp(r)
				// ranges that start and end inside, at and across pieces
				edge := testSlice / int(pieces)
				for _, spec := range []string{
					"0-9", fmt.Sprintf("%d-%d", edge-3, edge+3), fmt.Sprintf("%d-%d", testSlice-10, 2*testSlice+edge),
					fmt.Sprintf("%d-%d", size-100, size-1), fmt.Sprintf("%d-%d", edge, 3*edge-1),
				} {
					getRange(t, p, spec, want)
				}
			}
			if r := tc.ro.takeRanges(); len(r) != 1 {
				t.Errorf("origin asked %d times, want once: %q", len(r), r)
			}
		})
	}
	// A representation compressed at the edge cannot be fetched again, so
	// a range of it is leased before the status line.
	t.Run("leased", func(t *testing.T) {
		p := newPair(t, edgeOrigin(wordText(600<<10, 9), "Content-Type", "text/plain", "ETag", `"e"`),
			func(o *Options) { o.SliceSize = testSlice })
		releaseResp(p.get("/e"))
		p.settle()
		r := p.get("/e", "Accept-Encoding", "gzip")
		want := append([]byte(nil), r.Body()...)
		if ce := string(r.Header.Peek("Content-Encoding")); ce != "gzip" || len(want) <= 2*testSlice {
			t.Fatalf("Content-Encoding %q, %d bytes: want a gzip representation of three slices or more", ce, len(want))
		}
		releaseResp(r)
		for _, pieces := range []int32{2, 3, 7} {
			p.store.Pieces.Store(pieces)
			edge := testSlice / int(pieces)
			for _, rg := range [][2]int{{0, 9}, {edge - 3, edge + 3}, {testSlice - 10, testSlice + edge}, {edge, 3*edge - 1}} {
				r := p.get("/e", "Accept-Encoding", "gzip", "Range", fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))
				if r.StatusCode() != 206 || !bytes.Equal(r.Body(), want[rg[0]:rg[1]+1]) {
					t.Fatalf("%d pieces, range %v: status %d, %d bytes (equal %v)", pieces, rg, r.StatusCode(), len(r.Body()), bytes.Equal(r.Body(), want[rg[0]:rg[1]+1]))
				}
				releaseResp(r)
			}
		}
	})
}

func TestRangeOnStoredObject(t *testing.T) {
	for _, size := range []int{1000, 300 << 10} { // inline and sliced
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ro := &rangeOrigin{size: size, etag: true}
			p := newRangePair(t, ro)
			want := ro.body(0)
			full := p.get("/obj")
			if !bytes.Equal(full.Body(), want) {
				t.Fatal("full body differs")
			}
			releaseResp(full)
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) // see TestRangeMissingSliceRefetched
			ro.takeRanges()
			if cs := getRange(t, p, "10-99", want); cs != "strata; hit; detail=memory" {
				t.Errorf("Cache-Status %q", cs)
			}
			getRange(t, p, fmt.Sprintf("%d-%d", size-5, size+100), want)
			// several ranges: multipart, exact length
			resp := p.get("/obj", "Range", "bytes=0-0, 500-599, -10")
			if resp.StatusCode() != 206 {
				t.Fatalf("multi: %d", resp.StatusCode())
			}
			rs := []byterange.Range{{Start: 0, End: 0}, {Start: 500, End: 599}, {Start: int64(size) - 10, End: int64(size) - 1}}
			checkMultipart(t, resp.Body(), string(resp.Header.ContentType()), want, rs)
			if cl := resp.Header.ContentLength(); cl != len(resp.Body()) {
				t.Errorf("Content-Length %d, body %d", cl, len(resp.Body()))
			}
			releaseResp(resp)
			// unsatisfiable, malformed, If-Range
			resp = p.get("/obj", "Range", fmt.Sprintf("bytes=%d-", size))
			if resp.StatusCode() != 416 {
				t.Errorf("unsatisfiable: %d", resp.StatusCode())
			}
			expectHeader(t, resp, "Content-Range", "bytes */"+strconv.Itoa(size))
			releaseResp(resp)
			for _, kv := range [][]string{
				{"Range", "bytes=5-1"},
				{"Range", "bytes=" + manyRanges(byterange.MaxSpecs+1)},
				{"Range", "bytes=0-1", "If-Range", `"v9"`},
			} {
				resp = p.get("/obj", kv...)
				if resp.StatusCode() != 200 || !bytes.Equal(resp.Body(), want) {
					t.Errorf("%v: status %d, %d bytes", kv, resp.StatusCode(), len(resp.Body()))
				}
				releaseResp(resp)
			}
			getRange(t, p, "1-2", want, "If-Range", `"v0"`)
			// HEAD with Range
			resp = p.do("HEAD", "/obj", "Range", "bytes=0-9")
			if resp.StatusCode() != 206 || len(resp.Body()) != 0 {
				t.Errorf("HEAD: %d, %d body bytes", resp.StatusCode(), len(resp.Body()))
			}
			expectHeader(t, resp, "Content-Range", "bytes 0-9/"+strconv.Itoa(size))
			releaseResp(resp)
			if r := ro.takeRanges(); len(r) != 0 {
				t.Errorf("origin asked again: %q", r)
			}
		})
	}
}

func TestPartialCaching(t *testing.T) {
	ro := &rangeOrigin{size: 1<<20 + 1000, etag: true}
	p := newRangePair(t, ro)
	want := ro.body(0)
	S := testSlice
	steps := []struct {
		spec   string
		origin []string // Range headers the origin sees
	}{
		{"100000-150000", []string{fmt.Sprintf("bytes=%d-%d", S, 3*S-1)}}, // slices 1-2
		{"120000-140000", nil}, // cached
		{"190000-200000", []string{fmt.Sprintf("bytes=%d-%d", 3*S, 4*S-1)}},     // slice 3 only
		{"0-10", []string{fmt.Sprintf("bytes=0-%d", S-1)}},                      // slice 0
		{"1048000-1049999", []string{fmt.Sprintf("bytes=%d-%d", 15*S, 17*S-1)}}, // last two, the last short
	}
	for _, st := range steps {
		getRange(t, p, st.spec, want)
		if got := ro.takeRanges(); fmt.Sprint(got) != fmt.Sprint(st.origin) {
			t.Fatalf("%s: origin saw %q, want %q", st.spec, got, st.origin)
		}
	}
	// A plain GET of the partial object fetches only the missing slices,
	// in runs of at most FillWindow slices.
	resp := p.get("/obj")
	if resp.StatusCode() != 200 || !bytes.Equal(resp.Body(), want) {
		t.Fatalf("full GET: %d, %d bytes", resp.StatusCode(), len(resp.Body()))
	}
	releaseResp(resp)
	wantRuns := []string{
		fmt.Sprintf("bytes=%d-%d", 4*S, 8*S-1), fmt.Sprintf("bytes=%d-%d", 8*S, 12*S-1),
		fmt.Sprintf("bytes=%d-%d", 12*S, 15*S-1),
	}
	if got := ro.takeRanges(); fmt.Sprint(got) != fmt.Sprint(wantRuns) {
		t.Fatalf("full GET: origin saw %q, want %q", got, wantRuns)
	}
	resp = p.get("/obj")
	if !bytes.Equal(resp.Body(), want) || len(ro.takeRanges()) != 0 {
		t.Fatal("second full GET not from the cache")
	}
	releaseResp(resp)
}

// TestPartialValidatorChange: the origin's object changes between two
// range requests; the second's 206 names a new ETag, so the old record and
// slices are dropped and nothing of the old version is served again.
func TestPartialValidatorChange(t *testing.T) {
	for _, mode := range []string{"etag", "last-modified"} {
		t.Run(mode, func(t *testing.T) {
			ro := &rangeOrigin{size: 512 << 10, etag: mode == "etag", lastMod: mode != "etag"}
			p := newRangePair(t, ro)
			v0 := ro.body(0)
			getRange(t, p, "0-99", v0)
			// The client has its 100 bytes before the fetch of slice 0 ends;
			// a request joining that fetch would rightly read v0 from it.
			waitFor(t, func() bool { return p.srv.fetches.idle() })
			ro.mu.Lock()
			ro.version = 1
			ro.mu.Unlock()
			v1 := ro.body(1)
			getRange(t, p, "200000-200099", v1) // uncached slice: new validator seen
			getRange(t, p, "0-99", v1)          // slice 0 of v0 is not served
			resp := p.get("/obj")
			if !bytes.Equal(resp.Body(), v1) {
				t.Fatal("full body mixes versions")
			}
			releaseResp(resp)
		})
	}
}

// TestPartialChangeFoundBeforeStatus: a range over a stored slice and a
// missing one, after the object changed at the origin: the missing
// slice's fetch is checked before the status line, finds the change, and
// the request becomes a miss answered whole from the new version, never a
// response cut short or mixed across versions.
func TestPartialChangeFoundBeforeStatus(t *testing.T) {
	ro := &rangeOrigin{size: 512 << 10, etag: true}
	p := newRangePair(t, ro)
	getRange(t, p, "0-99", ro.body(0)) // slice 0 of v0 stored
	ro.mu.Lock()
	ro.version = 1
	ro.mu.Unlock()
	getRange(t, p, "0-200000", ro.body(1))
}

func TestPartialOriginIgnoresRange(t *testing.T) {
	ro := &rangeOrigin{size: 300 << 10, etag: true, ignoreRange: true}
	p := newRangePair(t, ro)
	want := ro.body(0)
	getRange(t, p, "200000-200099", want)
	getRange(t, p, "5-10", want)
	if got := ro.takeRanges(); len(got) != 1 {
		t.Fatalf("origin saw %q, want one request", got)
	}
	resp := p.get("/obj")
	if !bytes.Equal(resp.Body(), want) {
		t.Fatal("full body differs")
	}
	releaseResp(resp)
	// (Cache-Status may say collapsed: the ended fill can still be in the
	// in-flight map for a moment, a race older than this test.)
	if got := ro.takeRanges(); len(got) != 0 {
		t.Fatalf("full GET asked the origin: %q", got)
	}
}

// TestPartialNoValidator: without a strong validator parts cannot be
// joined: the whole object is filled once and ranges are cut from it.
func TestPartialNoValidator(t *testing.T) {
	ro := &rangeOrigin{size: 300 << 10}
	p := newRangePair(t, ro)
	want := ro.body(0)
	getRange(t, p, "200000-200099", want)
	getRange(t, p, "5-10", want)
	got := ro.takeRanges()
	if len(got) != 2 || got[1] != "" {
		t.Fatalf("origin saw %q, want the probe then one whole GET", got)
	}
}

// TestPartialCoalescing: concurrent requests for the same slices make one
// origin request, and all read the body as it arrives.
func TestPartialCoalescing(t *testing.T) {
	ro := &rangeOrigin{size: 1 << 20, etag: true, gate: newGate()}
	p := newRangePair(t, ro)
	want := ro.body(0)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := 300000 + i*100
			getRange(t, p, fmt.Sprintf("%d-%d", a, a+50000), want)
		}()
	}
	waitFor(t, func() bool { return p.fetchRefs("/obj", 300000/testSlice) >= n })
	ro.gate.open()
	wg.Wait()
	if got := ro.takeRanges(); len(got) != 1 {
		t.Fatalf("origin saw %d requests %q, want 1", len(got), got)
	}
}

// fetchRefs returns the references held on the slice fetch in flight for
// slice i of path (-1: none).
func (p *pair) fetchRefs(path string, i int) int {
	key := httpcache.BuildKey(nil, []byte("http"), requestFor(path), &p.srv.opts.Key)
	var kb [256]byte
	k := sliceKey(kb[:0], key, i)
	sh := p.srv.fetches.shard(k)
	sh.mu.Lock()
	sf := sh.m[string(k)]
	sh.mu.Unlock()
	if sf == nil {
		return -1
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	return sf.refs - 1
}

// TestRangeJoinsWholeFill: a Range request arriving while a whole-object
// fill runs reads from it (read-while-write), asking the origin nothing.
func TestRangeJoinsWholeFill(t *testing.T) {
	ro := &rangeOrigin{size: 600 << 10, etag: true, gate: newGate()}
	p := newRangePair(t, ro)
	want := ro.body(0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := p.get("/obj")
		if !bytes.Equal(resp.Body(), want) {
			t.Error("full body differs")
		}
		releaseResp(resp)
	}()
	waitFor(t, func() bool { return p.waiters("/obj") >= 1 })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if cs := getRange(t, p, "500000-500099", want); cs != "strata; fwd=uri-miss; stored; collapsed" {
			t.Errorf("Cache-Status %q", cs)
		}
	}()
	waitFor(t, func() bool { return p.waiters("/obj") >= 2 })
	ro.gate.open()
	wg.Wait()
	<-done
	if got := ro.takeRanges(); len(got) != 1 || got[0] != "" {
		t.Fatalf("origin saw %q", got)
	}
}

// TestRangeMissingSliceRefetched: a slice of a fully stored object that
// the store lost is fetched again with a Range request, not the object.
func TestRangeMissingSliceRefetched(t *testing.T) {
	ro := &rangeOrigin{size: 300 << 10, etag: true}
	p := newRangePair(t, ro)
	want := ro.body(0)
	releaseResp(p.get("/obj"))
	// The client has the body a moment before the fill leaves the fill
	// map; a range request joining it would not reach the origin.
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
	ro.takeRanges()
	key := httpcache.BuildKey(nil, []byte("http"), requestFor("/obj"), &p.srv.opts.Key)
	p.store.Remove(sliceKey(nil, key, 2))
	getRange(t, p, "140000-140099", want)
	if got := ro.takeRanges(); fmt.Sprint(got) != fmt.Sprintf("[bytes=%d-%d]", 2*testSlice, 3*testSlice-1) {
		t.Fatalf("origin saw %q", got)
	}
}

func releaseResp(r *fasthttp.Response) { fasthttp.ReleaseResponse(r) }

// idle reports whether no slice fetch is in flight.
func (fm *fetchMap) idle() bool {
	for i := range fm.shards {
		sh := &fm.shards[i]
		sh.mu.Lock()
		n := len(sh.m)
		sh.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	return true
}

// TestRangeFarAheadOfFillPassed: a Range request starting far past what a
// whole-object fill has received is answered by the origin at once (its
// Range passed on), not made to wait for the fill; one close to it waits
// and reads from the fill. The fill stores the object either way.
func TestRangeFarAheadOfFillPassed(t *testing.T) {
	body := bigBody(600 << 10)
	g := newGate()
	var mu sync.Mutex
	var ranges []string
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		w.Header().Set("Cache-Control", "max-age=60")
		if r.Header.Get("Range") != "" {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body)) // no validator
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:10])
		w.(http.Flusher).Flush()
		g.wait()
		_, _ = w.Write(body[10:])
	}, func(o *Options) { o.SliceSize = testSlice; o.FillWindow = 2 })
	p.srv.joinAhead = 128 << 10
	whole := make(chan []byte)
	go func() {
		resp := p.get("/obj")
		whole <- append([]byte(nil), resp.Body()...)
		releaseResp(resp)
	}()
	waitFor(t, func() bool {
		f := p.srv.fills.joinExisting(keyOf(p, "/obj"))
		if f == nil {
			return false
		}
		f.mu.Lock()
		started := f.received > 0
		f.mu.Unlock()
		f.release()
		return started
	})
	if cs := getRange(t, p, "500000-500099", body); cs != "strata; fwd=uri-miss" {
		t.Errorf("far range: Cache-Status %q", cs)
	}
	near := make(chan string)
	go func() { near <- getRange(t, p, "1000-1099", body) }()
	waitFor(t, func() bool { return p.waiters("/obj") >= 2 })
	g.open()
	if cs := <-near; cs != "strata; fwd=uri-miss; stored; collapsed" {
		t.Errorf("near range: Cache-Status %q", cs)
	}
	if b := <-whole; !bytes.Equal(b, body) {
		t.Fatalf("whole body: %d bytes", len(b))
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(ranges) != "[ bytes=500000-500099]" {
		t.Fatalf("origin saw %q", ranges)
	}
}
