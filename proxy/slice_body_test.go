package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
	"strata/proxy/internal/httpcache"
)

// slicedHit serves path (a sliced object stored in p) from a reused ctx
// and writes its body to w through fasthttp's body copy (WriteTo).
func slicedHit(p *pair, ctx *fasthttp.RequestCtx, path string, w io.Writer) error {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetHost("example.com")
	ctx.Request.Header.SetRequestURI(path)
	p.srv.handler(ctx)
	return ctx.Response.BodyWriteTo(w)
}

// TestSlicedHit: a body of several slices (the last one short) streams
// whole and in order through WriteTo and through Read, and a hit after the
// first allocates nothing (pooled slicedBody and slice buffers).
func TestSlicedHit(t *testing.T) {
	body := bigBody(4*(64<<10) + 1000)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write(body)
	}, nil)
	p.get("/big")
	var ctx fasthttp.RequestCtx
	var out bytes.Buffer
	if err := slicedHit(p, &ctx, "/big", &out); err != nil || !bytes.Equal(out.Bytes(), body) {
		t.Fatalf("WriteTo: %d bytes, %v", out.Len(), err)
	}
	if cs := string(ctx.Response.Header.Peek("Cache-Status")); cs != "strata; hit; detail=memory" {
		t.Fatalf("not a hit: %q", cs)
	}
	// Read, in odd-sized pieces (a writer without ReadFrom, io.Copy with a
	// small buffer would take WriteTo; call Read directly).
	ctx.Request.Header.SetRequestURI("/big")
	ctx.Response.Reset()
	p.srv.handler(&ctx)
	r := ctx.Response.BodyStream()
	got, buf := []byte(nil), make([]byte, 7777)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	ctx.Response.Reset()
	if !bytes.Equal(got, body) {
		t.Fatalf("Read: %d bytes", len(got))
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { _ = slicedHit(p, &ctx, "/big", io.Discard) }); n != 0 {
		t.Errorf("sliced hit allocates %.1f times", n)
	}
}

// TestSlicedHitWholeOrMiss: a stored sliced object whose later slice is
// gone is served whole or taken as a miss, never cut short where it can
// be helped. The first FillWindow slices are read before the status line;
// one missing there, or missing from the store past them, is fetched from
// the origin with a Range request when the object has a strong validator
// or slice digests (an object without a validator stored since digests),
// and a failed fetch makes the request a clean miss (a whole refill); an
// object with neither (a record from before digests) has all its slices
// read first, and one missing makes the request a miss. A slice past the
// window that the probe saw but that cannot be read (damaged on disk) is
// fetched mid-body; only when that fetch fails too, or the object has
// neither and is too large to read first, is the response cut short,
// counted.
func TestSlicedHitWholeOrMiss(t *testing.T) {
	const lost = 2 // slice index removed or made unreadable
	rng := fmt.Sprintf("bytes=%d-%d", lost*testSlice, (lost+1)*testSlice-1)
	for _, tc := range []struct {
		name      string
		etag      bool
		undigest  bool // strip the record's slice digests (a record written before them)
		unread    bool // Contains yes, Get misses (found damaged when read)
		failRange bool // the origin answers Range requests 503
		status    string
		origin    string // the Range the origin saw; "" a plain GET, "*" not checked
		cutShort  bool
		window    int // FillWindow: the slices a response may lease (the object has 5); 0 the default
	}{
		{"evicted, validator", true, false, false, false, "strata; hit; detail=memory", rng, false, 0},
		{"evicted, digests", false, false, false, false, "strata; hit; detail=memory", rng, false, 8},
		{"evicted, neither", false, true, false, false, "strata; fwd=miss; stored", "", false, 8},
		{"unreadable, validator", true, false, true, false, "strata; hit; detail=memory", rng, false, 0},
		{"unreadable, digests", false, false, true, false, "strata; hit; detail=memory", rng, false, 8},
		{"unreadable, neither", false, true, true, false, "strata; fwd=miss; stored", "", false, 8},
		{"evicted, validator, range refused", true, false, false, true, "strata; fwd=miss", "*", false, 0},
		{"unreadable, validator, range refused", true, false, true, true, "strata; fwd=miss", "*", false, 0},
		{"unreadable, digests, range refused", false, false, true, true, "strata; fwd=miss; stored", "*", false, 0},
		{"unreadable past the window, validator, range refused", true, false, true, true, "", rng, true, 2},
		{"unreadable past the window, digests, range refused", false, false, true, true, "", rng, true, 2},
		{"evicted, digests, too large to lease", false, false, false, false, "strata; hit; detail=memory", rng, false, 2},
		{"evicted, neither, too large to lease", false, true, false, false, "strata; fwd=miss; stored", "", false, 2},
		{"unreadable, neither, too large to lease", false, true, true, false, "", "", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &rangeOrigin{size: 300 << 10, etag: tc.etag}
			p := newPair(t, ro.handler, func(o *Options) {
				o.SliceSize = testSlice
				if tc.window > 0 {
					o.FillWindow = tc.window
				}
			})
			want := ro.body(0)
			releaseResp(p.get("/obj"))
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			ro.takeRanges()
			ro.failRange = tc.failRange
			key := httpcache.BuildKey(nil, []byte("http"), requestFor("/obj"), &p.srv.opts.Key)
			sk := sliceKey(nil, key, lost)
			if tc.undigest {
				mk := metaKey(nil, key)
				v, _, _ := p.store.Get(mk, nil)
				var o object
				if err := decodeObject(&o, v); err != nil || !o.hasDigests() {
					t.Fatalf("record %v, digests %v", err, o.hasDigests())
				}
				o.Digests = nil
				p.store.Insert(mk, appendObject(nil, &o), time.Time{})
			}
			if tc.unread {
				p.store.Lose = func(k []byte) bool { return bytes.Equal(k, sk) }
			} else {
				p.store.Remove(sk)
			}
			if tc.cutShort {
				raw, _ := p.raw("GET /obj HTTP/1.1\r\nHost: example.com\r\n\r\n")
				head, body, _ := strings.Cut(raw, "\r\n\r\n")
				if !strings.Contains(head, "Content-Length: 307200") || len(body) >= len(want) || body != string(want[:len(body)]) {
					t.Fatalf("want a prefix cut short under the full Content-Length; got %d bytes after %q", len(body), head)
				}
				if n := testutil.ToFloat64(p.srv.m.cutShort); n != 1 {
					t.Fatalf("cut short counted %v times", n)
				}
				if got := ro.takeRanges(); fmt.Sprint(got) != "["+tc.origin+"]" {
					t.Fatalf("origin saw %q, want %q", got, tc.origin)
				}
				return
			}
			resp := fasthttp.AcquireResponse()
			defer releaseResp(resp)
			err := p.client.Do(requestFor("http://example.com/obj"), resp)
			if err != nil || resp.StatusCode() != 200 || !bytes.Equal(resp.Body(), want) {
				t.Fatalf("err %v, status %d, %d bytes (want %d)", err, resp.StatusCode(), len(resp.Body()), len(want))
			}
			expectHeader(t, resp, "Cache-Status", tc.status)
			got := ro.takeRanges()
			if tc.origin != "*" && fmt.Sprint(got) != "["+tc.origin+"]" {
				t.Fatalf("origin saw %q, want %q", got, tc.origin)
			}
			if n := testutil.ToFloat64(p.srv.m.cutShort); n != 0 {
				t.Fatalf("cut short counted %v times", n)
			}
		})
	}
}

// TestSlicedLeaseHoldsFirstSlices: a sliced hit holds the first
// FillWindow slices it sends from before its status line, so a new
// version replacing the stored slices (and the origin's) after the status
// line cannot end the response before those bytes: a body that fits the
// window is sent whole, a longer one at least the window's slices, cut
// short (counted) only past them.
func TestSlicedLeaseHoldsFirstSlices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int // the object has 5 slices
		whole  bool
	}{
		{"fits the window", 8, true},
		{"longer than the window", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ro := &rangeOrigin{size: 300 << 10, etag: true}
			p := newPair(t, ro.handler, func(o *Options) {
				o.SliceSize = testSlice
				o.FillWindow = tc.window
			})
			want := ro.body(0)
			releaseResp(p.get("/obj"))
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			ro.takeRanges()
			key := httpcache.BuildKey(nil, []byte("http"), requestFor("/obj"), &p.srv.opts.Key)

			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetHost("example.com")
			ctx.Request.Header.SetRequestURI("/obj")
			p.srv.handler(&ctx) // the status line is settled here
			if cs := string(ctx.Response.Header.Peek("Cache-Status")); cs != "strata; hit; detail=memory" {
				t.Fatalf("not a hit: %q", cs)
			}
			ro.mu.Lock()
			ro.version++ // the origin has moved on ...
			ro.mu.Unlock()
			for i := range 5 { // ... and its new version's fill replaced the slices
				p.store.Remove(sliceKey(nil, key, i))
			}
			var out bytes.Buffer
			err := ctx.Response.BodyWriteTo(&out)
			ctx.Response.Reset()
			got := out.Bytes()
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("%d bytes sent are not the stored version's", len(got))
			}
			if tc.whole {
				if err != nil || len(got) != len(want) {
					t.Fatalf("sent %d of %d bytes, %v", len(got), len(want), err)
				}
				if r := ro.takeRanges(); len(r) != 0 {
					t.Fatalf("origin asked for %q", r)
				}
				return
			}
			if err == nil || len(got) < tc.window*testSlice || len(got) == len(want) {
				t.Fatalf("sent %d bytes (want the window's %d, cut short), %v", len(got), tc.window*testSlice, err)
			}
		})
	}
}

// TestLeaseBytes: a response leases each slice its ranges cover once,
// though two ranges share it, up to FillWindow slices; an object that
// cannot be fetched again leases all or none.
func TestLeaseBytes(t *testing.T) {
	const sz = 100
	rg := func(a, b int64) byterange.Range { return byterange.Range{Start: a, End: b} }
	for _, tc := range []struct {
		name      string
		rs        []byterange.Range
		fetchable bool
		n         int64
		whole     bool
	}{
		{"one range in one slice", []byterange.Range{rg(10, 20)}, true, sz, true},
		{"two ranges in one slice", []byterange.Range{rg(0, 10), rg(50, 60)}, true, sz, true},
		{"ranges sharing an end slice", []byterange.Range{rg(50, 150), rg(180, 250)}, true, 3 * sz, true},
		{"the window", []byterange.Range{rg(0, 399)}, true, 4 * sz, true},
		{"past the window", []byterange.Range{rg(0, 400)}, true, 4 * sz, false},
		{"past the window, unfetchable", []byterange.Range{rg(0, 400)}, false, 0, false},
		{"many ranges in few slices, unfetchable", []byterange.Range{rg(0, 1), rg(20, 21), rg(40, 41), rg(60, 61), rg(80, 81), rg(120, 121)}, false, 2 * sz, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sliceSource{s: &Server{opts: Options{FillWindow: 4}}, fetchable: tc.fetchable}
			r.obj.SliceSize = sz
			if n, whole := r.leaseBytes(tc.rs); n != tc.n || whole != tc.whole {
				t.Errorf("leaseBytes = %d, %v; want %d, %v", n, whole, tc.n, tc.whole)
			}
		})
	}
}
