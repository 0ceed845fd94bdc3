package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// versioned is an origin whose representation is version v (settable),
// with ETag "v<n>" and/or Last-Modified, answering conditionals itself and
// recording the conditional fields of the last request.
type versioned struct {
	v        atomic.Int64
	etag, lm bool
	cc       string
	body     func(v int64) []byte
	lastINM  atomic.Value // string
	lastIMS  atomic.Value // string
	extra    atomic.Value // string: X-Extra on every answer, 304s included
	not304   atomic.Value // func(w) overriding the 304 (tests of odd origins)
	status   atomic.Int64 // when non-zero, answer this status instead; -1 closes the connection
	clockNow func() time.Time
	hold     atomic.Pointer[gate] // when set, requests wait for it to open
}

var lmTime = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)

func (o *versioned) handler(w http.ResponseWriter, r *http.Request) {
	if g := o.hold.Load(); g != nil {
		g.wait()
	}
	o.lastINM.Store(r.Header.Get("If-None-Match"))
	o.lastIMS.Store(r.Header.Get("If-Modified-Since"))
	if o.status.Load() == -1 { // connection error
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = c.Close()
		}
		return
	}
	if st := o.status.Load(); st != 0 {
		w.WriteHeader(int(st))
		return
	}
	v := o.v.Load()
	h := w.Header()
	h.Set("Cache-Control", o.cc)
	h.Set("Content-Type", "text/plain")
	h.Set("Date", string(fasthttp.AppendHTTPDate(nil, o.clockNow())))
	if x, _ := o.extra.Load().(string); x != "" {
		h.Set("X-Extra", x)
	}
	tag := `"v` + strconv.FormatInt(v, 10) + `"`
	lm := string(fasthttp.AppendHTTPDate(nil, lmTime.Add(time.Duration(v)*time.Hour)))
	if o.etag {
		h.Set("ETag", tag)
	}
	if o.lm {
		h.Set("Last-Modified", lm)
	}
	if (o.etag && r.Header.Get("If-None-Match") == tag) || (!o.etag && o.lm && r.Header.Get("If-Modified-Since") == lm) {
		if f, _ := o.not304.Load().(func(http.ResponseWriter)); f != nil {
			f(w)
			return
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(o.body(v))
}

func newVersioned(t *testing.T, cc string, etag, lm bool, body func(int64) []byte, mod func(*Options)) (*pair, *versioned) {
	o := &versioned{etag: etag, lm: lm, cc: cc, body: body}
	o.v.Store(1)
	var p *pair
	o.clockNow = func() time.Time { return p.clock.Now() }
	p = newPair(t, o.handler, mod)
	return p, o
}

func smallBody(v int64) []byte { return []byte("body v" + strconv.FormatInt(v, 10)) }

func expectBody(t *testing.T, r *fasthttp.Response, want []byte) {
	t.Helper()
	if !bytes.Equal(r.Body(), want) {
		t.Fatalf("body of %d bytes, want %d bytes (%.20q vs %.20q)", len(r.Body()), len(want), r.Body(), want)
	}
}

// TestRevalidate304 covers §4.3.4 over ETag and Last-Modified validators,
// inline and sliced bodies: the 304 refreshes headers and freshness, the
// body is not fetched again, the refreshed record serves hits.
func TestRevalidate304(t *testing.T) {
	big := func(v int64) []byte { return append(bigBody(200<<10), byte(v)) }
	for _, tc := range []struct {
		name     string
		etag, lm bool
		body     func(int64) []byte
		wantINM  string
		wantIMS  bool
	}{
		{"etag", true, false, smallBody, `"v1"`, false},
		{"last-modified", false, true, smallBody, "", true},
		{"both", true, true, smallBody, `"v1"`, true},
		{"etag sliced", true, false, big, `"v1"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, o := newVersioned(t, "max-age=10", tc.etag, tc.lm, tc.body, nil)
			o.extra.Store("first")
			r := p.gets("/r")
			expectBody(t, r, tc.body(1))
			p.clock.Advance(20 * time.Second)
			o.extra.Store("second")
			r = p.gets("/r")
			expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
			expectHeader(t, r, "X-Extra", "second")
			expectHeader(t, r, "Content-Type", "text/plain")
			expectHeader(t, r, "Age", "0")
			expectBody(t, r, tc.body(1))
			if got := o.lastINM.Load(); got != tc.wantINM {
				t.Errorf("origin saw If-None-Match %q, want %q", got, tc.wantINM)
			}
			if got := o.lastIMS.Load().(string); (got != "") != tc.wantIMS {
				t.Errorf("origin saw If-Modified-Since %q", got)
			}
			p.clock.Advance(5 * time.Second)
			r = p.gets("/r")
			expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
			expectHeader(t, r, "X-Extra", "second")
			expectHeader(t, r, "Age", "5")
			expectBody(t, r, tc.body(1))
			if n := p.hits.Load(); n != 2 {
				t.Fatalf("origin saw %d requests, want 2", n)
			}
		})
	}
}

// TestRevalidate200Replaces: a changed representation replaces the entry.
func TestRevalidate200Replaces(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/n")
	p.clock.Advance(20 * time.Second)
	o.v.Store(2)
	r := p.gets("/n")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
	expectBody(t, r, smallBody(2))
	r = p.gets("/n")
	expectHeader(t, r, "Cache-Status", "strata; hit; detail=memory")
	expectHeader(t, r, "ETag", `"v2"`)
	expectBody(t, r, smallBody(2))
}

// TestRevalidate304NotSelected: a 304 that names another validator
// selects nothing (§4.3.4): the proxy fetches the representation again,
// unconditionally.
func TestRevalidate304NotSelected(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    func(http.ResponseWriter)
	}{
		{"other etag", func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"other"`)
			w.WriteHeader(http.StatusNotModified)
		}},
		{"weak etag for strong", func(w http.ResponseWriter) {
			w.Header().Set("ETag", `W/"v1"`)
			w.WriteHeader(http.StatusNotModified)
		}},
		{"other last-modified", func(w http.ResponseWriter) {
			w.Header().Del("ETag")
			w.Header().Set("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
			w.WriteHeader(http.StatusNotModified)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
			p.gets("/s")
			p.clock.Advance(20 * time.Second)
			o.not304.Store(tc.w)
			o.extra.Store("new")
			r := p.gets("/s")
			expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
			expectHeader(t, r, "X-Extra", "new")
			expectBody(t, r, smallBody(1))
			if n := p.hits.Load(); n != 3 {
				t.Fatalf("origin saw %d requests, want 3 (fill, conditional, unconditional)", n)
			}
			if got := o.lastINM.Load(); got != "" {
				t.Errorf("the retry carried If-None-Match %q", got)
			}
		})
	}
}

// TestStaleWithoutValidatorsRefetches: no validator, no conditional.
func TestStaleWithoutValidatorsRefetches(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", false, false, smallBody, nil)
	p.gets("/nv")
	p.clock.Advance(20 * time.Second)
	o.v.Store(2)
	r := p.gets("/nv")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; stored")
	expectBody(t, r, smallBody(2))
	if o.lastINM.Load() != "" || o.lastIMS.Load() != "" {
		t.Fatalf("conditional without validators: INM %q IMS %q", o.lastINM.Load(), o.lastIMS.Load())
	}
}

// TestResponseNoCacheRevalidatesEveryUse: a stored no-cache response is
// never served without validation (§5.2.2.4), even while fresh.
func TestResponseNoCacheRevalidatesEveryUse(t *testing.T) {
	p, o := newVersioned(t, "no-cache, max-age=600", true, false, smallBody, nil)
	p.gets("/nc")
	for i := range 3 {
		r := p.gets("/nc")
		expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
		expectBody(t, r, smallBody(1))
		if n := p.hits.Load(); n != int64(i+2) {
			t.Fatalf("origin saw %d requests, want %d", n, i+2)
		}
	}
	_ = o
}

// TestRequestNoCacheRevalidates: request no-cache on a fresh entry is a
// conditional forward (fwd=request), answered from the stored body.
func TestRequestNoCacheRevalidates(t *testing.T) {
	p, _ := newVersioned(t, "max-age=600", true, false, smallBody, nil)
	p.gets("/rq")
	r := p.gets("/rq", "Cache-Control", "no-cache")
	expectHeader(t, r, "Cache-Status", "strata; fwd=request; fwd-status=304")
	expectBody(t, r, smallBody(1))
	r = p.gets("/rq", "Pragma", "no-cache")
	expectHeader(t, r, "Cache-Status", "strata; fwd=request; fwd-status=304")
}

// Test304NoStoreRemoves: a 304 whose merged headers forbid storing is
// served to its waiters and the record is removed.
func Test304NoStoreRemoves(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/ns")
	p.clock.Advance(20 * time.Second)
	o.not304.Store(func(w http.ResponseWriter) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotModified)
	})
	r := p.gets("/ns")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	expectHeader(t, r, "Cache-Control", "no-store")
	expectBody(t, r, smallBody(1))
	if n := p.store.Len(); n != 0 {
		t.Fatalf("store holds %d entries after a no-store 304", n)
	}
}

// dos is do, then a wait until no fill runs: a fill leaves the in-flight
// map only after its last byte reached the client, and a request sent
// before that would join it instead of reading the store.
func (p *pair) dos(method, path string, kv ...string) *fasthttp.Response {
	p.t.Helper()
	r := p.do(method, path, kv...)
	p.settle()
	return r
}

func (p *pair) gets(path string, kv ...string) *fasthttp.Response {
	p.t.Helper()
	return p.dos("GET", path, kv...)
}

func TestMergeHeaders(t *testing.T) {
	stored := []headerKV{
		{[]byte("Content-Type"), []byte("text/html")},
		{[]byte("Content-Encoding"), []byte("gzip")},
		{[]byte("X-Multi"), []byte("1")}, {[]byte("X-Multi"), []byte("2")},
		{[]byte("Cache-Control"), []byte("max-age=10")},
		{[]byte("Date"), []byte("Mon, 01 Jan 2024 00:00:00 GMT")},
		{[]byte("X-Keep"), []byte("k")},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h304 := &fasthttp.ResponseHeader{}
	wire := "HTTP/1.1 304 Not Modified\r\nX-Multi: 3\r\nCache-Control: max-age=99\r\nContent-Encoding: br\r\n" +
		"Connection: close, X-Hop\r\nX-Hop: h\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n"
	if err := h304.Read(bufio.NewReader(strings.NewReader(wire))); err != nil {
		t.Fatal(err)
	}
	h := &fasthttp.ResponseHeader{}
	if err := mergeHeaders(h, stored, h304, now); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for k, v := range h.All() {
		got[string(k)] = append(got[string(k)], string(v))
	}
	want := map[string][]string{
		"Content-Type":     {"text/html"},
		"Content-Encoding": {"gzip"}, // describes the stored bytes
		"X-Multi":          {"3"},
		"Cache-Control":    {"max-age=99"},
		"Date":             {string(fasthttp.AppendHTTPDate(nil, now))},
		"X-Keep":           {"k"},
	}
	for k, v := range want {
		if strings.Join(got[k], "|") != strings.Join(v, "|") {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"X-Hop", "Keep-Alive", "Connection"} {
		if len(got[k]) > 0 {
			t.Errorf("hop-by-hop %s merged: %q", k, got[k])
		}
	}
}

// TestStoreExpiry: a response with a validator outlives its freshness by
// RevalidateKeep so that it can be revalidated; one without does not.
func TestStoreExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		keep time.Duration
		si   httpcache.StoreInfo
		want time.Duration
	}{
		{"no validator", 0, httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: -1, StaleIfError: -1}}, time.Minute},
		{"etag", 0, httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: -1, StaleIfError: -1}, ETag: []byte(`"x"`)}, time.Minute + time.Hour},
		{"lm and swr", 0, httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: 10 * time.Second, StaleIfError: -1}, LastModified: now}, time.Minute + 10*time.Second + time.Hour},
		{"must-revalidate", 0, httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: -1, StaleIfError: -1, MustRevalidate: true}}, time.Minute},
		{"keep disabled", -1, httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: -1, StaleIfError: -1}, ETag: []byte(`"x"`)}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(newMapStore(), Options{Origins: []OriginOptions{{URL: "http://127.0.0.1:1"}}, RevalidateKeep: tc.keep,
				StaleIfUnreachable: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			if got := s.storeExpiry(&tc.si, now).Sub(now); got != tc.want {
				t.Fatalf("expiry in %v, want %v", got, tc.want)
			}
		})
	}
}

// Test304WithoutValidators: a 304 without ETag or Last-Modified to our
// conditional confirms the stored response (see httpcache.Selects304).
func Test304WithoutValidators(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.gets("/nv304")
	p.clock.Advance(20 * time.Second)
	o.not304.Store(func(w http.ResponseWriter) {
		w.Header().Del("ETag")
		w.Header().Set("X-Extra", "updated")
		w.WriteHeader(http.StatusNotModified)
	})
	r := p.gets("/nv304")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	expectHeader(t, r, "X-Extra", "updated")
	expectHeader(t, r, "ETag", `"v1"`)
	expectBody(t, r, smallBody(1))
}

// TestStoreExpiryUnreachable: a response that may be served stale to a
// disconnected client is kept StaleIfUnreachable past its lifetime.
func TestStoreExpiryUnreachable(t *testing.T) {
	s, err := New(newMapStore(), Options{Origins: []OriginOptions{{URL: "http://127.0.0.1:1"}}, StaleIfUnreachable: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	si := httpcache.StoreInfo{FreshnessInfo: httpcache.FreshnessInfo{Lifetime: time.Minute, StaleWhileRevalidate: -1, StaleIfError: -1}}
	if got := s.storeExpiry(&si, now).Sub(now); got != 2*time.Minute {
		t.Fatalf("expiry in %v, want 2m", got)
	}
	si.NoCache = true
	if got := s.storeExpiry(&si, now).Sub(now); got != time.Minute {
		t.Fatalf("no-cache: expiry in %v, want 1m", got)
	}
}

// TestMergeHeadersLarge: stored headers larger than a default bufio
// buffer (4 KiB: CSP, cookies) still merge; refresh read a failed merge as
// a 304 that selects nothing and fetched the whole body again.
func TestMergeHeadersLarge(t *testing.T) {
	var stored []headerKV
	for i := range 100 {
		stored = append(stored, headerKV{[]byte(fmt.Sprintf("X-Field-%d", i)), bytes.Repeat([]byte("v"), 60)})
	}
	h304 := &fasthttp.ResponseHeader{}
	wire := "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=99\r\nContent-Length: 0\r\n\r\n"
	if err := h304.Read(bufio.NewReader(strings.NewReader(wire))); err != nil {
		t.Fatal(err)
	}
	h := &fasthttp.ResponseHeader{}
	if err := mergeHeaders(h, stored, h304, time.Now()); err != nil {
		t.Fatalf("merge of %d stored fields: %v", len(stored), err)
	}
	if v := h.Peek("X-Field-99"); len(v) != 60 {
		t.Errorf("X-Field-99 = %q", v)
	}
}

// TestRevalidate304LargeHeaders: a 304 refreshes a response whose stored
// headers pass 4 KiB, rather than being taken for one that selects
// nothing and followed by an unconditional fetch of the whole body.
func TestRevalidate304LargeHeaders(t *testing.T) {
	p, o := newVersioned(t, "max-age=10", true, false, smallBody, nil)
	p.client.ReadBufferSize = 64 << 10 // the client's read of the response headers
	o.extra.Store(strings.Repeat("x", 5000))
	p.gets("/large")
	p.clock.Advance(20 * time.Second)
	r := p.gets("/large")
	expectHeader(t, r, "Cache-Status", "strata; fwd=stale; fwd-status=304")
	expectBody(t, r, smallBody(1))
	if n := p.hits.Load(); n != 2 {
		t.Fatalf("origin saw %d requests, want 2 (the fill and one conditional)", n)
	}
}
