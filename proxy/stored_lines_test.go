package proxy

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"strata/proxy/internal/httpcache"
)

// checkStoredLines checks appendStoredLines on the parsed header h, into
// kvs and buf as given (a recycled fill's, or fresh), against the fields
// copyResponseHeaders keeps and the block appendHeaderBlock writes.
func checkStoredLines(t *testing.T, h *fasthttp.ResponseHeader, kvs []headerKV, buf []byte, extra int) {
	t.Helper()
	want, _ := copyResponseHeaders(h, 0)
	want = want[:min(len(want), maxStoredFields)] // a fill keeps room for a Date
	kvs, buf, ok := appendStoredLines(kvs, buf, h, extra)
	if len(kvs) != len(want) {
		t.Fatalf("%d fields, want %d", len(kvs), len(want))
	}
	wire := true
	for i := range want {
		if !bytes.Equal(kvs[i].Key, want[i].Key) || !bytes.Equal(kvs[i].Value, want[i].Value) {
			t.Fatalf("field %d: %q: %q, want %q: %q", i, kvs[i].Key, kvs[i].Value, want[i].Key, want[i].Value)
		}
		wire = wire && wireField(want[i])
		if !within(kvs[i].Key, buf) || !within(kvs[i].Value, buf) {
			t.Fatalf("field %d (%q) is not a view into the returned buffer", i, kvs[i].Key)
		}
	}
	if cap(buf)-len(buf) < extra {
		t.Errorf("room %d after the lines, want >= %d", cap(buf)-len(buf), extra)
	}
	if ok != wire {
		t.Fatalf("ok %v, want %v", ok, wire)
	}
	if ok {
		enc := appendHeaderBlock(nil, want)
		_, k := binary.Uvarint(enc)
		if !bytes.Equal(buf, enc[k:]) {
			t.Fatalf("lines\n%q\nwant the block\n%q", buf, enc[k:])
		}
	}
}

// within reports whether the non-empty b lies in buf's array (an empty
// b is not checked).
func within(b, buf []byte) bool {
	if cap(b) == 0 {
		return true
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))), uintptr(unsafe.Pointer(unsafe.SliceData(buf[:1])))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(buf))
}

func TestAppendStoredLines(t *testing.T) {
	many := strings.Builder{}
	for i := range maxStoredHeader + 10 {
		fmt.Fprintf(&many, "X-F%d: v%d\r\n", i, i)
	}
	for _, tc := range []struct {
		name, fields string
		lower        bool // parse without normalising names
	}{
		{name: "typical", fields: "Server: fasthttp\r\nDate: Thu, 03 Dec 2026 07:14:02 GMT\r\nContent-Type: text/html\r\nContent-Length: 10\r\n" +
			"Cache-Control: public, max-age=60\r\nEtag: \"e\"\r\nLast-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\n"},
		{name: "none", fields: ""},
		{name: "hop by hop and dropped", fields: "Connection: x-a, close\r\nKeep-Alive: 5\r\nX-A: 1\r\nX-B: 2\r\nAge: 7\r\nAlt-Svc: h3\r\n" +
			"Proxy-Authenticate: Basic\r\nTrailer: X\r\nUpgrade: h2c\r\nTE: trailers\r\nTransfer-Encoding: chunked\r\n"},
		{name: "cookies and repeats", fields: "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nVary: A\r\nVary: B\r\nX-Empty:\r\nX-Space: a  b \r\n"},
		{name: "names as sent", lower: true, fields: "x-lower: 1\r\nETAG: \"e\"\r\ncontent-type: text/plain\r\nBad Name: 2\r\nx-Under_score: 3\r\n"},
		{name: "over the field limit", fields: many.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			if tc.lower {
				h.DisableNormalizing()
			}
			if err := h.Read(bufioReader(strings.NewReader("HTTP/1.1 200 OK\r\n" + tc.fields + "\r\n"))); err != nil {
				t.Fatal(err)
			}
			for _, extra := range []int{0, 3, 200} {
				checkStoredLines(t, &h, nil, nil, extra)                                    // a new fill's
				checkStoredLines(t, &h, make([]headerKV, 0, 2), make([]byte, 0, 16), extra) // grown
				checkStoredLines(t, &h, make([]headerKV, 0, 512), make([]byte, 0, 64<<10), extra)
			}
		})
	}
}

// TestStoredLinesNotWire: a field that cannot be a line is kept as
// copyResponseHeaders keeps it, and appendStoredLines says the lines are
// not the block, so that the record is encoded from the fields.
func TestStoredLinesNotWire(t *testing.T) {
	var h fasthttp.ResponseHeader
	h.SetStatusCode(200)
	h.DisableNormalizing()
	h.SetBytesKV([]byte("X-Colon:Name"), []byte("v"))
	checkStoredLines(t, &h, nil, nil, 0)
	if _, _, ok := appendStoredLines(nil, nil, &h, 0); ok {
		t.Skip("fasthttp kept no field that cannot be a line")
	}
}

// FuzzStoredLines: for any origin header fasthttp parses, appendStoredLines
// keeps the fields copyResponseHeaders keeps, as views into its buffer,
// and its lines are the record's header block whenever it says so.
func FuzzStoredLines(f *testing.F) {
	f.Add("Content-Type: text/html\r\nConnection: x-a\r\nX-A: 1\r\nSet-Cookie: a=1\r\nAge: 3\r\n", false)
	f.Add("x-lower: 1\r\nETAG: \"e\"\r\nBad Name: 2\r\n", true)
	f.Fuzz(func(t *testing.T, fields string, raw bool) {
		var h fasthttp.ResponseHeader
		if raw {
			h.DisableNormalizing()
		}
		if h.Read(bufioReader(strings.NewReader("HTTP/1.1 200 OK\r\n"+fields+"\r\n"))) != nil {
			return
		}
		checkStoredLines(t, &h, nil, nil, 29)
		checkStoredLines(t, &h, make([]headerKV, 0, 1), make([]byte, 0, 8), 0)
	})
}

// TestFillRecordHeaderBlock: the record a fill stores from its lines
// (fill.block) is byte for byte the record encoded from its fields, with
// and without a Date from the origin (a fill adds one when it is missing),
// into a store that takes parts and one that does not.
func TestFillRecordHeaderBlock(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"dated", missOriginHeader},
		{"undated", strings.Replace(missOriginHeader, "Date: Thu, 03 Dec 2026 07:14:02 GMT\r\n", "", 1)},
		{"no validator", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=60\r\nConnection: X-Hop\r\nX-Hop: 1\r\n\r\n"},
	} {
		for _, parts := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parts=%v", tc.name, parts), func(t *testing.T) {
				ms := newMapStore()
				var store Store = ms
				if parts {
					store = &partsStore{mapStore: ms}
				}
				s := benchServer(t, store)
				resp := fasthttp.AcquireResponse()
				defer fasthttp.ReleaseResponse(resp)
				readResponseHeader(t, &resp.Header, tc.raw)
				f := acquireFill(s, []byte("example.com/r"))
				var si httpcache.StoreInfo
				var rp httpcache.RequestPolicy
				now := time.Now()
				httpcache.StoreDecision(&si, &rp, resp.StatusCode(), &resp.Header, now, &s.cfg().Policy)
				f.start(&si, resp, now, now)
				if f.block == nil {
					t.Fatal("the fill kept no header block")
				}
				body := []byte("abcd")
				f.obj.BodyLen, f.obj.Body = int64(len(body)), body
				f.commitRecord()
				rec, _, ok := ms.Get(metaKey(nil, f.skey), nil)
				if !ok {
					t.Fatal("no record stored")
				}
				if want := appendObject(nil, &f.obj); !bytes.Equal(rec, want) {
					t.Fatalf("record\n%q\nwant\n%q", rec, want)
				}
				var o object
				if err := decodeObject(&o, rec); err != nil {
					t.Fatal(err)
				}
				if storedDate(o.Headers) == nil {
					t.Error("the record has no Date")
				}
			})
		}
	}
}

// TestManyFieldsNoDate: a response with more fields than a record holds
// and no Date is stored with the Date the fill adds, as a record that
// decodes: the next request is a hit, not a damaged record and a miss.
func TestManyFieldsNoDate(t *testing.T) {
	p := newPair(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Date"] = nil // net/http adds none
		for i := range maxStoredHeader + 44 {
			w.Header().Set(fmt.Sprintf("X-F%d", i), "v")
		}
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = w.Write([]byte("many"))
	}, nil)
	releaseResp(p.get("/many"))
	p.settle()
	r := p.get("/many")
	defer releaseResp(r)
	if cs := string(r.Header.Peek("Cache-Status")); !strings.Contains(cs, "; hit") || string(r.Body()) != "many" {
		t.Errorf("second request: Cache-Status %q, body %q; want a hit", cs, r.Body())
	}
	if n := testutil.ToFloat64(p.srv.m.corrupt); n != 0 {
		t.Errorf("%v records found damaged", n)
	}
}
