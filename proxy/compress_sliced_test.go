package proxy

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/byterange"
)

// wordText is n bytes of pseudo-random lowercase words: text that gzip
// and br shrink to about 60%, so that a few hundred KiB compress to
// several 64 KiB slices.
func wordText(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, 0, n+16)
	for len(b) < n {
		for range 3 + rng.IntN(7) {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, ' ')
		if rng.IntN(12) == 0 {
			b = append(b, '\n')
		}
	}
	return b[:n]
}

// edgeRecord returns the decoded record of path's representation in
// coding ("identity", "gzip", "br") from p's store, or ok false.
func edgeRecord(p *pair, coding string) (o object, ok bool) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	suffix := "=" + itoa(len(coding)) + ":" + coding + ";"
	for k, v := range p.store.m {
		if k[0] == metaKeyPrefix && strings.HasSuffix(k, suffix) && decodeObject(&o, append([]byte(nil), v...)) == nil {
			return o, true
		}
	}
	return o, false
}

// variantEntries counts the store's entries under a variant key (records
// and slices).
func variantEntries(p *pair) int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	n := 0
	for k := range p.store.m {
		if strings.Contains(k, "\x00v") {
			n++
		}
	}
	return n
}

// expectEdgeHit checks that r, the answer to a client sending
// Accept-Encoding ae, is a hit on the representation in coding ce with
// tag etag, whole, decoding to body.
func expectEdgeHit(t *testing.T, r *fasthttp.Response, ae, ce, etag string, body []byte) {
	t.Helper()
	if !strings.HasPrefix(string(r.Header.Peek("Cache-Status")), "strata; hit") {
		t.Fatalf("%q: Cache-Status %s", ae, r.Header.Peek("Cache-Status"))
	}
	expectHeader(t, r, "Content-Encoding", ce)
	expectHeader(t, r, "ETag", etag)
	expectHeader(t, r, "Vary", "Accept-Encoding")
	if r.Header.ContentLength() != len(r.Body()) {
		t.Errorf("%q: Content-Length %d for %d bytes", ae, r.Header.ContentLength(), len(r.Body()))
	}
	if got := decode(t, ce, r.Body()); !bytes.Equal(got, body) {
		t.Fatalf("%q: decoded body differs (%d bytes)", ae, len(got))
	}
}

// TestCompressSliced: a compressible body of several slices is stored as
// identity, gzip and br representations, each sliced under its own key;
// GET, HEAD, ranges across slices, multipart ranges and If-Range serve
// each client its own representation's bytes, from one origin fetch and
// one compression per coding.
func TestCompressSliced(t *testing.T) {
	body := wordText(600<<10, 1)
	p := newPair(t, edgeOrigin(body, "Content-Type", "text/plain", "ETag", `"v1"`), nil)
	r := p.get("/big", "Accept-Encoding", "br")
	if !bytes.Equal(r.Body(), body) || len(r.Header.Peek("Content-Encoding")) != 0 {
		t.Fatalf("miss: CE %q, %d bytes", r.Header.Peek("Content-Encoding"), len(r.Body()))
	}
	p.settle()
	stored := map[string][]byte{}
	for _, c := range []struct{ ae, ce, etag, coding string }{
		{"gzip, deflate, br", "br", `W/"v1-br"`, "br"},
		{"gzip", "gzip", `W/"v1-gz"`, "gzip"},
		{"identity", "", `"v1"`, "identity"},
	} {
		r := p.get("/big", "Accept-Encoding", c.ae)
		expectEdgeHit(t, r, c.ae, c.ce, c.etag, body)
		o, ok := edgeRecord(p, c.coding)
		if !ok || o.inline() || o.slices() < 3 || o.EdgeCoded != (c.ce != "") || o.BodyLen != int64(len(r.Body())) {
			t.Fatalf("%s record: found %v, %d slices, edge-coded %v, %d bytes", c.coding, ok, o.slices(), o.EdgeCoded, o.BodyLen)
		}
		stored[c.ce] = append([]byte(nil), r.Body()...)
		h := p.do("HEAD", "/big", "Accept-Encoding", c.ae)
		if h.StatusCode() != 200 || h.Header.ContentLength() != len(stored[c.ce]) || len(h.Body()) != 0 {
			t.Errorf("%q HEAD: %d, Content-Length %d, %d body bytes", c.ae, h.StatusCode(), h.Header.ContentLength(), len(h.Body()))
		}
		expectHeader(t, h, "Content-Encoding", c.ce)
		expectHeader(t, h, "ETag", c.etag)
	}
	for ce, rep := range stored {
		ae := map[string]string{"": "identity", "gzip": "gzip", "br": "br"}[ce]
		n := int64(len(rep))
		// One range across a slice boundary, and a suffix.
		for _, rg := range []byterange.Range{{Start: 60000, End: 140000}, {Start: n - 100, End: n - 1}} {
			r := p.get("/big", "Accept-Encoding", ae, "Range", "bytes="+itoa(int(rg.Start))+"-"+itoa(int(rg.End)))
			if r.StatusCode() != 206 || !bytes.Equal(r.Body(), rep[rg.Start:rg.End+1]) {
				t.Fatalf("%q range %v: %d, %d bytes, want 206 of its own bytes", ae, rg, r.StatusCode(), len(r.Body()))
			}
			expectHeader(t, r, "Content-Range", string(byterange.AppendContentRange(nil, rg, n)))
			expectHeader(t, r, "Content-Encoding", ce)
		}
		rs := []byterange.Range{{Start: 0, End: 99}, {Start: 65530, End: 65545}, {Start: n - 10, End: n - 1}}
		r := p.get("/big", "Accept-Encoding", ae, "Range", "bytes=0-99,65530-65545,-10")
		if r.StatusCode() != 206 {
			t.Fatalf("%q multipart: %d", ae, r.StatusCode())
		}
		checkMultipart(t, r.Body(), string(r.Header.ContentType()), rep, rs)
		if ce != "" {
			r = p.get("/big", "Accept-Encoding", ae, "Range", "bytes=0-9", "If-Range", `W/"v1-`+map[string]string{"gzip": "gz", "br": "br"}[ce]+`"`)
			if r.StatusCode() != 200 || !bytes.Equal(r.Body(), rep) {
				t.Fatalf("%q If-Range weak: %d, %d bytes", ae, r.StatusCode(), len(r.Body()))
			}
		}
	}
	if n := p.hits.Load(); n != 1 {
		t.Fatalf("origin saw %d requests, want 1", n)
	}
	for i := range p.srv.cz.objects {
		if n := testutil.ToFloat64(p.srv.cz.objects[i]); n != 1 {
			t.Errorf("%s compressed %v times, want once", edgeCodings[i+1].name, n)
		}
	}
}

// TestCompressSlicedLostSlice: a slice of a compressed representation
// lost from the store is never fetched from the origin with a Range
// request (its answer would hold identity bytes, with the same
// Last-Modified): the request misses, and the URL is stored and
// compressed again. A range request that finds the slice lost gets bytes
// of the representation its headers name.
func TestCompressSlicedLostSlice(t *testing.T) {
	body := wordText(400<<10, 3)
	modified := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var ranged atomic.Int64
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			ranged.Add(1)
		}
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		http.ServeContent(w, r, "", modified, bytes.NewReader(body)) // Range and If-Modified-Since
	}, nil)
	p.get("/lost", "Accept-Encoding", "gzip")
	p.settle()
	gz := append([]byte(nil), p.get("/lost", "Accept-Encoding", "gzip").Body()...)
	if len(gz) < 3*(64<<10) {
		t.Fatalf("gzip representation of %d bytes: want several slices", len(gz))
	}
	lose := func() {
		p.store.mu.Lock()
		for k := range p.store.m {
			if k[0] == sliceKeyPrefix && strings.Contains(k, "=4:gzip;") && binary.BigEndian.Uint32([]byte(k[len(k)-8:])) == 1 {
				delete(p.store.m, k)
			}
		}
		p.store.mu.Unlock()
	}
	lose()
	r := p.get("/lost", "Accept-Encoding", "gzip")
	if r.StatusCode() != 200 || !bytes.Equal(decode(t, string(r.Header.Peek("Content-Encoding")), r.Body()), body) {
		t.Fatalf("after the loss: %d, Content-Encoding %q", r.StatusCode(), r.Header.Peek("Content-Encoding"))
	}
	p.settle()
	if n := ranged.Load(); n != 0 {
		t.Errorf("%d Range requests to the origin for a compressed representation", n)
	}
	r = p.get("/lost", "Accept-Encoding", "gzip")
	if !strings.HasPrefix(string(r.Header.Peek("Cache-Status")), "strata; hit") || string(r.Header.Peek("Content-Encoding")) != "gzip" ||
		!bytes.Equal(decode(t, "gzip", r.Body()), body) {
		t.Fatalf("stored again: %s, Content-Encoding %q", r.Header.Peek("Cache-Status"), r.Header.Peek("Content-Encoding"))
	}
	gz = append(gz[:0], r.Body()...)
	lose()
	for range 2 {
		r := p.get("/lost", "Accept-Encoding", "gzip", "Range", "bytes=70000-70099")
		switch ce := string(r.Header.Peek("Content-Encoding")); {
		case r.StatusCode() == 206 && ce == "gzip" && bytes.Equal(r.Body(), gz[70000:70100]):
		case r.StatusCode() == 206 && ce == "" && bytes.Equal(r.Body(), body[70000:70100]):
		case r.StatusCode() == 200 && bytes.Equal(decode(t, ce, r.Body()), body):
		default:
			t.Fatalf("range: %d, Content-Encoding %q: bytes of another representation", r.StatusCode(), ce)
		}
		p.settle()
	}
}

// TestCompressSlicedPurge: a URL purge removes every representation of a
// sliced compressed object, records and slices.
func TestCompressSlicedPurge(t *testing.T) {
	body := wordText(300<<10, 4)
	p := newPair(t, edgeOrigin(body, "Content-Type", "application/json", "ETag", `"p"`), func(o *Options) { o.PurgeToken = "t" })
	p.get("/p", "Accept-Encoding", "br")
	p.settle()
	if n := variantEntries(p); n < 3+3*3 {
		t.Fatalf("%d entries under variant keys before the purge", n)
	}
	if code, b := adminDo(NewAdmin(p.srv, p.reg), "POST", "/purge?url=http://example.com/p", "Bearer t"); code != 200 {
		t.Fatalf("purge: %d %s", code, b)
	}
	if n := variantEntries(p); n != 0 {
		t.Errorf("%d entries under variant keys after the purge", n)
	}
	r := p.get("/p", "Accept-Encoding", "gzip")
	if !strings.Contains(string(r.Header.Peek("Cache-Status")), "fwd=") || !bytes.Equal(r.Body(), body) {
		t.Fatalf("after purge: %s", r.Header.Peek("Cache-Status"))
	}
}

// TestCompressSlicedNotStored: a sliced body is left as the origin sent it
// (no index, no Vary, nothing left under variant keys) when a coding does
// not pay, or when a slice to compress is gone from the store.
func TestCompressSlicedNotStored(t *testing.T) {
	noise := make([]byte, 300<<10)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name string
		body []byte
		lose bool
	}{{"does not pay", noise, false}, {"slice gone", wordText(300<<10, 5), true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, edgeOrigin(tc.body, "Content-Type", "text/plain", "ETag", `"n"`), nil)
			if tc.lose {
				p.store.Lose = func(k []byte) bool { return k[0] == sliceKeyPrefix && !bytes.Contains(k, []byte("\x00v")) }
			}
			p.get("/n", "Accept-Encoding", "gzip")
			p.settle()
			p.store.mu.Lock() // the compression goroutine read it under the lock
			p.store.Lose = nil
			p.store.mu.Unlock()
			if n := testutil.ToFloat64(p.srv.cz.abandoned); n != 1 {
				t.Errorf("abandoned %v, want 1", n)
			}
			if n := variantEntries(p); n != 0 {
				t.Errorf("%d entries left under variant keys", n)
			}
			r := p.get("/n", "Accept-Encoding", "gzip")
			expectHeader(t, r, "Vary", "")
			expectHeader(t, r, "Content-Encoding", "")
			if !bytes.Equal(r.Body(), tc.body) {
				t.Fatal("body differs from the origin's")
			}
		})
	}
}

// TestCompressSlicedVersions: while the origin's object changes and
// clients of every coding read it whole and in ranges, concurrently with
// the fills and compressions, every response is one version's
// representation: a whole body decodes to the version its ETag names,
// and a range is a range of that representation's bytes.
//
// A response may also fail: a slice past the first FillWindow (which a
// response holds from before its status line), present when the status
// line was decided and replaced by the next version's before the body
// reached it, must be fetched again, and the origin now answers with
// another version (sliceSource's documented window: the response ends
// short, counted in cutShort, and the connection closes). Here only the
// last of the object's 5 slices is in that window, and no run of 150
// failed (before the first slices were held, 3 of 150 did, up to 11 of
// a run's 576 requests on a loaded machine); each failure must be a
// response the server counted as cut short, and they must stay under 5%.
func TestCompressSlicedVersions(t *testing.T) {
	bodies := [][]byte{wordText(300<<10, 11), wordText(300<<10, 12), wordText(300<<10, 13)}
	var version atomic.Int64
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		v := version.Load()
		w.Header().Set("Cache-Control", "max-age=10")
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"v`+itoa(int(v))+`"`)
		_, _ = w.Write(bodies[v])
	}, nil)
	type ranged struct {
		etag, ce string
		start    int
		total    string
		data     []byte
	}
	var mu sync.Mutex
	var failed atomic.Int64
	whole := map[string][]byte{} // ETag → whole representation
	var ranges []ranged
	fail := t.Errorf
	codings := []string{"gzip", "br", "identity"}
	// Each version is read while it is fetched and compressed, then once
	// its representations are stored.
	for step := range 2 * len(bodies) {
		v := step / 2
		if step%2 == 0 {
			version.Store(int64(v))
			p.clock.Advance(20 * time.Second)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				for i := range 24 {
					req.Reset()
					req.SetRequestURI("http://example.com/ver")
					req.Header.Set("Accept-Encoding", codings[(g+i)%3])
					start := (i % 4) * 40000
					if i%2 == 1 {
						req.Header.Set("Range", "bytes="+itoa(start)+"-"+itoa(start+99))
					}
					if err := p.client.Do(req, resp); err != nil {
						failed.Add(1) // checked against cutShort below
						continue
					}
					etag, ce := string(resp.Header.Peek("ETag")), string(resp.Header.Peek("Content-Encoding"))
					tag := strings.NewReplacer("W/", "", "-gz", "", "-br", "").Replace(etag) // the version's "vN"
					if len(tag) != 4 || int(tag[2]-'0') > v {
						fail("ETag %q", etag)
						return
					}
					ver := int(tag[2] - '0')
					switch resp.StatusCode() {
					case 200:
						if !bytes.Equal(decode(t, ce, resp.Body()), bodies[ver]) {
							fail("%s %q: body is not version %d's", ce, etag, ver)
						}
						mu.Lock()
						whole[etag+ce] = append([]byte(nil), resp.Body()...)
						mu.Unlock()
					case 206:
						_, _, total, _ := byterange.ParseContentRange(resp.Header.Peek("Content-Range"))
						mu.Lock()
						ranges = append(ranges, ranged{etag, ce, start, itoa(int(total)), append([]byte(nil), resp.Body()...)})
						mu.Unlock()
					default:
						fail("status %d", resp.StatusCode())
					}
				}
			})
		}
		wg.Wait()
		p.settle()
		for _, ae := range codings[:step%2*3] { // every representation of this version, whole
			r := p.get("/ver", "Accept-Encoding", ae)
			ce, etag := string(r.Header.Peek("Content-Encoding")), string(r.Header.Peek("ETag"))
			if !bytes.Equal(decode(t, ce, r.Body()), bodies[v]) {
				t.Fatalf("version %d, %s: body differs", v, ae)
			}
			whole[etag+ce] = append([]byte(nil), r.Body()...)
		}
	}
	requests := int64(2 * len(bodies) * 4 * 24)
	if n, cut := failed.Load(), testutil.ToFloat64(p.srv.m.cutShort); n > 0 && (float64(n) > cut || n > requests/20) {
		t.Errorf("%d of %d requests failed, %v responses counted as cut short: want every failure counted, and at most 5%%", n, requests, cut)
	}
	checked, coded := 0, 0
	for _, r := range ranges {
		rep, ok := whole[r.etag+r.ce]
		if !ok {
			continue
		}
		checked++
		if r.ce != "" && len(rep) > 64<<10 {
			coded++ // a range of a sliced compressed representation
		}
		if itoa(len(rep)) != r.total || !bytes.Equal(r.data, rep[r.start:r.start+len(r.data)]) {
			t.Errorf("range at %d of %s %q: not that representation's bytes", r.start, r.ce, r.etag)
		}
	}
	if checked < len(ranges)/2 || coded == 0 {
		t.Errorf("checked %d of %d ranges, %d of sliced compressed representations", checked, len(ranges), coded)
	}
}

// storedJob returns a compression job for the record stored under p's
// one primary key (stored with compression off), and that key.
func storedJob(t testing.TB, p *pair) *compressJob {
	t.Helper()
	j := &compressJob{}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	for k, v := range p.store.m {
		if k[0] == metaKeyPrefix && !strings.Contains(k, "\x00v") && decodeObject(&j.obj, append([]byte(nil), v...)) == nil {
			j.pkey = []byte(k[1:])
			return j
		}
	}
	t.Fatal("no record stored")
	return nil
}

// TestCompressSlicedReplaced: when the URL's record changed between the
// fill's commit and the end of the compression (a newer version stored),
// the index does not go in, and the representations just written are
// removed: the newer record stays, alone.
func TestCompressSlicedReplaced(t *testing.T) {
	p := newPair(t, edgeOrigin(wordText(300<<10, 8), "Content-Type", "text/plain", "ETag", `"r"`),
		func(o *Options) { o.Compress.Disable = true })
	p.get("/r")
	p.settle()
	j := storedJob(t, p)
	newer := j.obj
	newer.Gen++
	mkey := metaKey(nil, j.pkey)
	p.store.Insert(mkey, appendObject(nil, &newer), time.Time{})
	p.srv.storeCompressedSliced(j)
	if n := variantEntries(p); n != 0 {
		t.Errorf("%d entries left under variant keys", n)
	}
	v, _, ok := p.store.Get(mkey, nil)
	var o object
	if !ok || isVariantIndex(v) || decodeObject(&o, v) != nil || o.Gen != newer.Gen {
		t.Fatal("the newer record was replaced")
	}
}

// TestCompressSlicedOneAtATime: while a sliced body is being compressed,
// another one is left as it came (counted), and a small body still finds
// the other slot.
func TestCompressSlicedOneAtATime(t *testing.T) {
	small := compressText(4 << 10)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		body := wordText(300<<10, 9)
		if r.URL.Path == "/small" {
			body = small
		}
		edgeOrigin(body, "Content-Type", "text/plain")(w, r)
	}, nil)
	p.srv.cz.sliced <- struct{}{} // a sliced body in compression
	p.get("/big", "Accept-Encoding", "gzip")
	p.get("/small", "Accept-Encoding", "gzip")
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 && len(p.srv.cz.slots) == 0 })
	<-p.srv.cz.sliced
	if n := testutil.ToFloat64(p.srv.cz.skipped); n != 1 {
		t.Errorf("skipped %v, want 1", n)
	}
	expectHeader(t, p.get("/big", "Accept-Encoding", "gzip"), "Content-Encoding", "")
	expectHeader(t, p.get("/small", "Accept-Encoding", "gzip"), "Content-Encoding", "gzip")
}

// TestCompressSlicedRefreshKeepsIndex: a revalidation of the URL's
// identity record that began before the compression put its index in
// place, and got a 304 after, must not write the record back over the
// index (which would leave the compressed representations unreachable
// and the URL uncompressed until it is fetched whole again).
func TestCompressSlicedRefreshKeepsIndex(t *testing.T) {
	body := wordText(300<<10, 14)
	g, asked := newGate(), make(chan struct{}, 1)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"k"`)
		if r.Header.Get("If-None-Match") == `"k"` {
			asked <- struct{}{}
			g.wait()
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(body)
	}, func(o *Options) { o.Compress.Disable = true })
	p.get("/k")
	p.settle()
	j := storedJob(t, p)
	p.clock.Advance(2 * time.Minute)
	done := make(chan *fasthttp.Response)
	go func() { done <- p.get("/k", "Accept-Encoding", "gzip") }()
	<-asked
	p.srv.storeCompressedSliced(j) // the index goes in while the 304 is on its way
	g.open()
	if r := <-done; r.StatusCode() != 200 || !bytes.Equal(r.Body(), body) {
		t.Fatalf("revalidated: %d, %d bytes", r.StatusCode(), len(r.Body()))
	}
	p.settle()
	if v, _, ok := p.store.Get(metaKey(nil, j.pkey), nil); !ok || !isVariantIndex(v) {
		t.Fatalf("the URL's index was replaced by the refreshed record (found %v)", ok)
	}
}

// TestCompressIfRangeDate: an If-Range holding the origin's
// Last-Modified matches the identity bytes (a strong validator there),
// never a compressed representation, inline or sliced, which shares that
// date with the identity bytes: a client resuming a download of one
// representation must not be sent a range of another's bytes.
func TestCompressIfRangeDate(t *testing.T) {
	for _, n := range []int{20 << 10, 300 << 10} {
		body := wordText(n, 15)
		lm := "Wed, 01 Jan 2020 00:00:00 GMT"
		p := newPair(t, edgeOrigin(body, "Content-Type", "text/plain", "Last-Modified", lm), nil)
		p.get("/d", "Accept-Encoding", "gzip")
		p.settle()
		for _, ae := range []string{"identity", "br", "gzip"} {
			r := p.get("/d", "Accept-Encoding", ae, "Range", "bytes=0-9", "If-Range", lm)
			ce := string(r.Header.Peek("Content-Encoding"))
			want := 206 // identity bytes (a coding that did not pay stores them too)
			if ce != "" {
				want = 200
			} else if ae == "br" {
				t.Fatalf("%d bytes: br not stored compressed", n)
			}
			if r.StatusCode() != want {
				t.Fatalf("%d bytes, %s with If-Range of the date: %d (Content-Encoding %q), want %d", n, ae, r.StatusCode(), ce, want)
			}
			if want == 200 && !bytes.Equal(decode(t, ce, r.Body()), body) {
				t.Fatalf("%d bytes, %s: the whole body differs", n, ae)
			}
		}
	}
}
