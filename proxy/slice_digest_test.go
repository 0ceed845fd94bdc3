package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// keyOf is the object key of path on host example.com.
func keyOf(p *pair, path string) []byte {
	return httpcache.BuildKey(nil, []byte("http"), requestFor(path), &p.srv.opts.Key)
}

// digestOrigin serves body (which the test may change) without any
// validator, answering Range requests, and records the Range values seen.
type digestOrigin struct {
	mu     sync.Mutex
	body   []byte
	ranges []string
}

func (d *digestOrigin) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	body := d.body
	if v := r.Header.Get("Range"); v != "" {
		d.ranges = append(d.ranges, v)
	}
	d.mu.Unlock()
	w.Header().Set("Cache-Control", "max-age=60")
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body)) // no Last-Modified, no ETag
}

func (d *digestOrigin) set(b []byte) {
	d.mu.Lock()
	d.body = b
	d.mu.Unlock()
}

func (d *digestOrigin) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ranges...)
}

// TestDigestRecord: a fill of a sliced body without a validator records
// its slices' digests; one with a strong ETag or an inline body does not.
func TestDigestRecord(t *testing.T) {
	body := bigBody(3*(64<<10) + 100)
	for _, tc := range []struct {
		name, etag string
		n          int
		want       bool
	}{
		{"sliced, no validator", "", len(body), true},
		{"sliced, strong etag", `"v1"`, len(body), false},
		{"inline, no validator", "", 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Cache-Control", "max-age=60")
				if tc.etag != "" {
					w.Header().Set("ETag", tc.etag)
				}
				_, _ = w.Write(body[:tc.n])
			}, nil)
			r := p.get("/d")
			expectBody(t, r, body[:tc.n])
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			v, _, ok := p.store.Get(metaKey(nil, keyOf(p, "/d")), nil)
			var o object
			if !ok || decodeObject(&o, v) != nil {
				t.Fatal("no record stored")
			}
			if o.hasDigests() != tc.want {
				t.Fatalf("digests %v, want %v", o.hasDigests(), tc.want)
			}
			for i := range o.slices() {
				if o.hasDigests() && o.digest(i) != sliceDigest(body[i*(64<<10):min(tc.n, (i+1)*(64<<10))]) {
					t.Fatalf("digest of slice %d", i)
				}
			}
		})
	}
}

// TestDigestRefetch: a slice of a stored object without a validator that
// the store lost is fetched with a Range request and served after its
// digest matched; if the origin's bytes changed, nothing of them is mixed
// into the response: the request is a miss and gets the new body whole.
func TestDigestRefetch(t *testing.T) {
	const sz = 64 << 10
	old := bigBody(6 * sz)
	changed := append([]byte(nil), old...)
	changed[2*sz+5] ^= 0xff // same length, slice 2 differs
	for _, tc := range []struct {
		name   string
		now    []byte // the origin's body when the slice is fetched again
		status string
		want   []byte
	}{
		{"same bytes", old, "strata; hit; detail=memory", old},
		{"changed bytes", changed, "strata; fwd=miss; stored", changed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &digestOrigin{body: old}
			p := newPair(t, d.serve, nil)
			expectBody(t, p.get("/r"), old)
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			p.store.Remove(sliceKey(nil, keyOf(p, "/r"), 2))
			d.set(tc.now)
			for _, rng := range []string{"", "bytes=131072-131172"} {
				var r *fasthttp.Response
				if rng == "" {
					r = p.get("/r")
				} else {
					r = p.get("/r", "Range", rng)
				}
				if rng == "" {
					expectHeader(t, r, "Cache-Status", tc.status)
					expectBody(t, r, tc.want)
				} else {
					expectBody(t, r, tc.want[2*sz:2*sz+101])
				}
				waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
			}
			if rs := d.seen(); len(rs) == 0 || !strings.HasPrefix(rs[0], "bytes=131072-") {
				t.Fatalf("origin saw Range %q, want slice 2 asked for", rs)
			}
			if n := testutil.ToFloat64(p.srv.m.cutShort); n != 0 {
				t.Fatalf("%v responses cut short", n)
			}
		})
	}
}

// TestDetachedReaderResumes: a client that stalls a fill of an object
// without a validator is detached; the store then loses a slice it has
// not read yet. The reader goes on from the committed record and fetches
// that slice with a Range request: the client gets the whole body.
func TestDetachedReaderResumes(t *testing.T) {
	const sz = 64 << 10
	body := bigBody(12 * sz)
	d := &digestOrigin{body: body}
	var drop atomic.Bool
	drop.Store(true)
	p := newPair(t, d.serve, func(o *Options) { o.FillWindow = 2; o.FillLagWait = 20 * time.Millisecond })
	key := keyOf(p, "/slow")
	lost := sliceKey(nil, key, 5)
	p.store.Drop = func(k []byte) bool { return drop.Load() && bytes.Equal(k, lost) }
	c, err := p.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: example.com\r\n\r\n")
	// Read nothing until the fill has committed without slice 5.
	waitFor(t, func() bool { return p.hits.Load() == 1 && p.srv.nfills.Load() == 0 })
	drop.Store(false)
	var resp fasthttp.Response
	if err := resp.Read(bufioReader(c)); err != nil {
		t.Fatalf("detached reader: %v", err)
	}
	b := resp.Body()
	if !bytes.Equal(b, body) {
		t.Fatalf("detached reader got %d of %d bytes (or wrong bytes)", len(b), len(body))
	}
	if rs := d.seen(); len(rs) != 1 || !strings.HasPrefix(rs[0], "bytes="+strconv.Itoa(5*sz)+"-") {
		t.Fatalf("origin saw Range %q, want slice 5 fetched once", rs)
	}
	if n := testutil.ToFloat64(p.srv.m.fillLagged); n != 0 {
		t.Fatalf("fill_lagged %v", n)
	}
}
