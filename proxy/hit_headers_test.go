package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serveRaw sends one request on a fresh connection and returns the
// response's status and header block as they went on the wire.
func serveRaw(t *testing.T, p *pair, method, path string, kv ...string) (status int, header string) {
	t.Helper()
	req := method + " " + path + " HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n"
	for i := 0; i+1 < len(kv); i += 2 {
		req += kv[i] + ": " + kv[i+1] + "\r\n"
	}
	out, err := p.raw(req + "\r\n")
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ = strings.Cut(out, "\r\n\r\n")
	if _, err := fmt.Sscanf(header, "HTTP/1.1 %d", &status); err != nil {
		t.Fatalf("response %q: %v", out, err)
	}
	return status, header + "\r\n"
}

// TestHitHeaders: the header a hit copies from its template is the one the
// first hit built field by field, for each form (GET, HEAD, 304) and
// Cache-Status; the stored Date is kept while Age grows; a new record
// (new block) gets new headers.
func TestHitHeaders(t *testing.T) {
	var version sync.Map // path -> etag
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		etag, _ := version.LoadOrStore(r.URL.Path, `"v1"`)
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", etag.(string))
		w.Header().Set("X-Custom", "a: b")
		fmt.Fprint(w, "body")
	}, nil)
	p.get("/h")
	inm := []string{"If-None-Match", `"v1"`}
	for _, tc := range []struct {
		name   string
		method string
		kv     []string
		disk   bool
		status int
		want   []string
		absent []string
	}{
		{"get", "GET", nil, false, 200, []string{"Cache-Status: strata; hit; detail=memory", "Etag: \"v1\"", "X-Custom: a: b", "Via: 1.1 strata"}, nil},
		{"get disk", "GET", nil, true, 200, []string{"Cache-Status: strata; hit; detail=disk", "Content-Length: 4"}, nil},
		{"head", "HEAD", nil, false, 200, []string{"Cache-Status: strata; hit; detail=memory", "Content-Length: 4"}, nil},
		{"304", "GET", inm, false, 304, []string{"Cache-Status: strata; hit; detail=memory", "Etag: \"v1\"", "Cache-Control: max-age=60"}, []string{"X-Custom", "Content-Length"}},
		{"304 disk", "GET", inm, true, 304, []string{"Cache-Status: strata; hit; detail=disk"}, []string{"X-Custom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.store.Disk.Store(tc.disk)
			defer p.store.Disk.Store(false)
			var first string
			for i := range 3 {
				status, h := serveRaw(t, p, tc.method, "/h", tc.kv...)
				if status != tc.status {
					t.Fatalf("hit %d: status %d, want %d", i, status, tc.status)
				}
				for _, w := range tc.want {
					if !strings.Contains(h, w+"\r\n") {
						t.Fatalf("hit %d: no %q in\n%s", i, w, h)
					}
				}
				for _, a := range tc.absent {
					if strings.Contains(h, a) {
						t.Fatalf("hit %d: %q in\n%s", i, a, h)
					}
				}
				if i == 0 {
					first = h
				} else if h != first {
					t.Fatalf("hit %d differs from the first:\n%s\nfirst:\n%s", i, h, first)
				}
			}
		})
	}
	// The stored Date stays while Age grows.
	_, h0 := serveRaw(t, p, "GET", "/h")
	p.clock.Advance(7 * time.Second)
	_, h1 := serveRaw(t, p, "GET", "/h")
	if field(h0, "Date") == "" || field(h0, "Date") != field(h1, "Date") || field(h1, "Age") != "7" {
		t.Fatalf("Date %q then %q, Age %q", field(h0, "Date"), field(h1, "Date"), field(h1, "Age"))
	}
	// A new record is a new block: its headers, not the old template's.
	version.Store("/h", `"v2"`)
	p.clock.Advance(time.Minute)
	p.get("/h")
	if _, h := serveRaw(t, p, "GET", "/h"); field(h, "Etag") != `"v2"` || !strings.Contains(h, "hit") {
		t.Fatalf("after refresh:\n%s", h)
	}
}

// field returns the value of the first line "name: value" of a header.
func field(h, name string) string {
	for line := range strings.SplitSeq(h, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return v
		}
	}
	return ""
}

// TestHitHeadersTable: a template is kept on its block's second miss, not
// its first; keys sharing a slot pair never get one another's header,
// whatever was published last, and keys differing only in status,
// Cache-Status or form are distinct.
func TestHitHeadersTable(t *testing.T) {
	var c hitHeaders
	c.init()
	blocks := collidingBlocks(&c, 3)
	build := func(blk []byte, status int) *fasthttp.ResponseHeader {
		var h fasthttp.ResponseHeader
		h.SetStatusCode(status)
		h.Set("X-Block", tag(blk))
		return &h
	}
	var dst fasthttp.ResponseHeader
	for round := range 2 {
		for _, blk := range blocks {
			c.publish(build(blk, 200), blk, 200, csHitMemory, false)
			if round == 0 && c.copyTo(&dst, blk, 200, csHitMemory, false) {
				t.Fatalf("%q kept on its first miss", blk)
			}
			c.publish(build(blk, 200), blk, 200, csHitMemory, false)
			for _, other := range blocks {
				if !c.copyTo(&dst, other, 200, csHitMemory, false) {
					continue
				}
				if got := string(dst.Peek("X-Block")); got != tag(other) || dst.StatusCode() != 200 {
					t.Fatalf("round %d: key %q got the header of %q", round, other, got)
				}
			}
			if !c.copyTo(&dst, blk, 200, csHitMemory, false) {
				t.Fatalf("round %d: %q not found right after publish", round, blk)
			}
		}
	}
	blk := blocks[len(blocks)-1]
	for _, k := range []struct {
		status int
		cs     cacheStatus
		nm     bool
	}{{201, csHitMemory, false}, {200, csHitDisk, false}, {200, csHitMemory, true}} {
		if c.copyTo(&dst, blk, k.status, k.cs, k.nm) {
			t.Errorf("%+v found under another key", k)
		}
	}
}

// TestHitHeadersBytes: templates of large blocks stop being kept at
// hitHeaderBytes, and replacing one gives its bytes back.
func TestHitHeadersBytes(t *testing.T) {
	var c hitHeaders
	c.init()
	var h fasthttp.ResponseHeader
	h.SetStatusCode(200)
	pad := strings.Repeat("x", 60<<10)
	kept := 0
	for i := range 400 {
		blk := fmt.Appendf(nil, "X-Pad: %d%s\r\n", i, pad)
		c.publish(&h, blk, 200, csHitMemory, false)
		c.publish(&h, blk, 200, csHitMemory, false)
		if c.copyTo(&h, blk, 200, csHitMemory, false) {
			kept++
		}
		if n := c.bytes.Load(); n > hitHeaderBytes {
			t.Fatalf("templates hold %d bytes, over %d", n, hitHeaderBytes)
		}
	}
	if max := hitHeaderBytes / templateSize([]byte(pad)); kept == 0 || int64(kept) > max {
		t.Fatalf("%d large templates kept, want 1..%d", kept, max)
	}
	var sum int64
	for i := range c.slots {
		if tpl := c.slots[i].Load(); tpl != nil {
			sum += templateSize(tpl.block)
		}
	}
	if sum != c.bytes.Load() {
		t.Fatalf("bytes %d, templates in the table %d", c.bytes.Load(), sum)
	}
}

// collidingBlocks returns n distinct blocks whose slots share a pair in c.
func collidingBlocks(c *hitHeaders, n int) [][]byte {
	byPair := map[uint64][][]byte{}
	for i := 0; ; i++ {
		blk := fmt.Appendf(nil, "Etag: \"%d\"\r\n", i)
		pair := c.slot(blk) >> 1
		byPair[pair] = append(byPair[pair], blk)
		if len(byPair[pair]) == n {
			return byPair[pair]
		}
	}
}

// TestHitHeadersConcurrent: readers copying templates while writers
// replace them in the same pair always get the header of their own key
// (run with -race).
func TestHitHeadersConcurrent(t *testing.T) {
	var c hitHeaders
	c.init()
	blocks := collidingBlocks(&c, 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst, src fasthttp.ResponseHeader
			for i := range 2000 {
				blk := blocks[(g+i)%len(blocks)]
				if c.copyTo(&dst, blk, 200, csHitMemory, false) {
					if got := dst.Peek("X-Block"); string(got) != tag(blk) {
						t.Errorf("key %q got %q", blk, got)
						return
					}
					continue
				}
				src.Reset()
				src.SetStatusCode(200)
				src.Set("X-Block", tag(blk))
				c.publish(&src, blk, 200, csHitMemory, false)
			}
		}()
	}
	wg.Wait()
}

// TestHitHeadersNoDate: a record without a stored Date is not templated:
// each hit gets the time of sending (installDate).
func TestHitHeadersNoDate(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	o := &object{Status: 200, Headers: []headerKV{{[]byte("Etag"), []byte(`"a"`)}}}
	o.HeaderBlock = appendHeaderBlock(nil, o.Headers)[1:]
	var h fasthttp.ResponseHeader
	p.srv.writeStoredHeaders(&h, o, csHitMemory)
	if len(h.Peek("Date")) == 0 || string(h.Peek("Etag")) != `"a"` {
		t.Fatalf("header:\n%s", h.Header())
	}
	if p.srv.hitHeaders.copyTo(&h, o.HeaderBlock, 200, csHitMemory, false) {
		t.Fatal("a header without a stored Date was templated")
	}
}

// tag is the X-Block value the tests give blk's header.
func tag(blk []byte) string { return string(bytes.TrimSuffix(blk, []byte("\r\n"))) }
